"""Shared fixtures of the deploy tests: paths of the deploy files, a runner of install.sh in a
throwaway root (--prefix), which never touches the real system. The `needs` marker their tests
carry is tests/needs.py's, registered for every folder by tests/conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.deploy.unitfile import UnitFile
from tests.needs import require_tool

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
INSTALL_SH = DEPLOY / "install.sh"
BOT_UNIT = DEPLOY / "react-discord-bot.service"
CHROMA_UNIT = DEPLOY / "chroma.service"
CHROMA_DROPIN = DEPLOY / "react-discord-bot.service.d" / "chroma.conf"
GATE_UNIT = DEPLOY / "chroma-gate.service"
GATE_SOCKET = DEPLOY / "chroma-gate.socket"
ENV_EXAMPLE = DEPLOY / "bot.env.example"
DEPLOY_README = DEPLOY / "README.md"

NAME = "react-discord-bot"


@pytest.fixture
def bot_unit() -> UnitFile:
    return UnitFile(BOT_UNIT)


@pytest.fixture
def chroma_unit() -> UnitFile:
    return UnitFile(CHROMA_UNIT)


Installer = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_install(tmp_path: Path) -> Installer:
    """Run deploy/install.sh with the given arguments; `prefix=` adds --prefix, and the venv is
    made by the Python running the tests. Returns the finished process (never raises)."""
    require_tool("systemctl")

    def run(*args: str, prefix: Path | None = None) -> subprocess.CompletedProcess[str]:
        argv = ["bash", str(INSTALL_SH)]
        if prefix is not None:
            argv += ["--prefix", str(prefix), "--python", sys.executable]
        argv += list(args)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)

    return run


@pytest.fixture
def prefix(tmp_path: Path) -> Path:
    return tmp_path / "root"
