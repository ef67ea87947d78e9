"""The environment of a Python child process a test starts: this process's, with the given
folders and then this checkout on PYTHONPATH, so that the child imports this checkout's packages
(and a test's stand-in packages first)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO", "with_repo_on_path"]

REPO = Path(__file__).resolve().parents[1]


def with_repo_on_path(*first: Path) -> dict[str, str]:
    """os.environ with PYTHONPATH = ``first``, the repository, then any PYTHONPATH already set."""
    parts = [str(folder) for folder in first] + [str(REPO)]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(parts)}
