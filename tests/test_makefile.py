"""The Makefile's two set-up commands, read with `make -n` in a throwaway venv path: `make run`
installs the bot alone, `make test` adds the test and benchmark extras."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def planned(target: str, venv: Path) -> str:
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not installed: the README's two commands need it")
    done = subprocess.run([make, "-n", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout


def installs(plan: str) -> list[str]:
    return [line for line in plan.splitlines() if " -m pip install" in line and "--upgrade pip" not in line]


def test_make_run_installs_the_bot_without_the_test_and_bench_extras(tmp_path: Path) -> None:
    lines = installs(planned("run", tmp_path / "venv"))
    assert len(lines) == 1
    assert lines[0].endswith("-c constraints.txt -e .")


def test_make_test_installs_the_test_and_bench_extras(tmp_path: Path) -> None:
    lines = installs(planned("test", tmp_path / "venv"))
    assert lines == [line for line in lines if "-e '.[test,bench]'" in line] and len(lines) == 1
