"""The `needs` rule (tests/needs.py): a test missing a system tool
or root is skipped, saying why in one line, only for an ordinary user outside CI; as root or
in CI it fails. The decision on its own, then the marker in a real pytest run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.conftest import REPO
from tests.needs import requirement_outcome, running_in_ci, unmet_needs

MISSING = "no-such-tool-7f3a"


@pytest.mark.parametrize(("met", "is_root", "in_ci", "outcome"), [
    (True, False, False, "run"),
    (True, True, False, "run"),
    (True, False, True, "run"),
    (True, True, True, "run"),
    (False, False, False, "skip"),  # a contributor's `make test` as themselves
    (False, True, False, "fail"),   # root could have installed it: sudo make system-deps
    (False, False, True, "fail"),   # CI: every test must run
    (False, True, True, "fail"),    # CI as root, as .ci/run does
])
def test_a_test_is_skipped_only_for_an_ordinary_user_outside_ci(
        met: bool, is_root: bool, in_ci: bool, outcome: str) -> None:
    assert requirement_outcome(met=met, is_root=is_root, in_ci=in_ci) == outcome


@pytest.mark.parametrize(("value", "in_ci"), [
    (None, False), ("", False), ("0", False), ("false", False), ("False", False), ("no", False),
    ("true", True), ("1", True), ("yes", True),
])
def test_ci_is_told_by_the_ci_variable(value: str | None, in_ci: bool) -> None:
    assert running_in_ci({} if value is None else {"CI": value}) is in_ci


def test_nothing_is_unmet_when_the_tools_are_there_and_root_is_not_asked() -> None:
    assert unmet_needs(["sh", "sh"], None, is_root=False) == ""


def test_root_is_unmet_only_for_an_ordinary_user_and_the_line_says_why_and_how() -> None:
    assert unmet_needs([], "enter a new namespace", is_root=True) == ""
    assert unmet_needs([], "enter a new namespace", is_root=False) == (
        "needs root to enter a new namespace (sudo make test runs it)")


def test_missing_tools_are_named_on_one_line_with_the_command_that_installs_them() -> None:
    line = unmet_needs(["sh", MISSING, "no-such-tool-2"], "enter a new namespace", is_root=False)
    assert line == ("needs root to enter a new namespace (sudo make test runs it); "
                    f"needs {MISSING}, no-such-tool-2, not installed (sudo make system-deps installs them)")
    assert "\n" not in line


INNER_CONFTEST = "from tests.conftest import pytest_configure, pytest_runtest_setup  # noqa: F401\n"
INNER_TESTS = f"""
import pytest

@pytest.mark.needs("{MISSING}")
def test_with_a_missing_tool():
    pass

@pytest.mark.needs("sh")
def test_with_a_present_tool():
    pass

def test_without_needs():
    pass
"""


def run_inner(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsE", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**keep, "PYTHONPATH": str(REPO), **env})


def test_in_ci_a_missing_tool_fails_the_run_naming_it(tmp_path: Path) -> None:
    done = run_inner(tmp_path, CI="true")
    assert done.returncode == 1, done.stdout
    assert "2 passed, 1 error" in done.stdout
    assert f"needs {MISSING}, not installed (sudo make system-deps installs it)" in done.stdout


def test_outside_ci_a_missing_tool_skips_as_an_ordinary_user_and_fails_as_root(tmp_path: Path) -> None:
    done = run_inner(tmp_path)
    reason = f"needs {MISSING}, not installed (sudo make system-deps installs it)"
    if os.geteuid() == 0:
        assert done.returncode == 1 and "2 passed, 1 error" in done.stdout, done.stdout
    else:
        assert done.returncode == 0 and "2 passed, 1 skipped" in done.stdout, done.stdout
    assert reason in done.stdout


def test_the_full_disk_chaos_test_says_it_needs_root_to_mount_its_tmpfs() -> None:
    from tests.chaos import test_chaos_faults

    marks = [m for m in test_chaos_faults.pytestmark if m.name == "needs"]
    assert [m.args for m in marks] == [("mount",)]
    assert "mount" in marks[0].kwargs["root"]
