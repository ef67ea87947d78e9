"""The code base passes ruff's pyflakes checks: no unused imports or names, nothing undefined."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_no_unused_or_undefined_names() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "agent", "memory", "bot", "envsettings", "httptls", "chromagate", "tests", "bench"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
