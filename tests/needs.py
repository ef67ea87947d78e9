"""The `needs` marker: the system tools (and root) a test needs, said once for every test folder.

`@pytest.mark.needs("shellcheck", ..., root="why")` names the system tools a test runs (commands
on PATH, or "libseccomp-dev" for its header) and, with ``root=``, why it must run as root. When
one is missing the test says so in one line and is skipped, but only as an ordinary user
outside CI (a contributor's `make test`); as root or in CI (CI=true) it fails instead: there
every test must run, and root can install the tools (`sudo make system-deps`).
tests/conftest.py registers the marker and applies it before a test's fixtures are set up.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

import pytest

HEADERS = {"libseccomp-dev": Path("/usr/include/seccomp.h")}  # what the Makefile's system-deps checks
INSTALL_TOOLS = "sudo make system-deps"
RUN_AS_ROOT = "sudo make test"

Outcome = Literal["run", "skip", "fail"]


def requirement_outcome(*, met: bool, is_root: bool, in_ci: bool) -> Outcome:
    """What a test whose needs are ``met`` (or not) does: it runs; or, missing a tool or root, it
    is skipped only for an ordinary user outside CI, and fails as root or in CI."""
    if met:
        return "run"
    return "fail" if is_root or in_ci else "skip"


def running_in_ci(env: Mapping[str, str]) -> bool:
    """CI sets CI (GitHub and GitLab to "true"); "", "0" and "false" mean not in CI."""
    return env.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def tool_present(name: str) -> bool:
    return HEADERS[name].exists() if name in HEADERS else shutil.which(name) is not None


def unmet_needs(tools: Iterable[str], root_for: str | None, *, is_root: bool) -> str:
    """One line saying what is missing and what provides it, or "" when nothing is."""
    problems = []
    if root_for is not None and not is_root:
        problems.append(f"needs root to {root_for} ({RUN_AS_ROOT} runs it)")
    missing = [t for t in dict.fromkeys(tools) if not tool_present(t)]
    if missing:
        problems.append(f"needs {', '.join(missing)}, not installed ({INSTALL_TOOLS} installs "
                        f"{'them' if len(missing) > 1 else 'it'})")
    return "; ".join(problems)


def register_marker(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs(*tools, root=None): system tools the test runs and, with root=, why it needs "
                   "root; missing: skipped as an ordinary user outside CI, failed as root or in CI")


def apply_needs(item: pytest.Item) -> None:
    """Apply the `needs` marks before any fixture is set up (so nothing is built in vain)."""
    marks = list(item.iter_markers("needs"))
    if not marks:
        return
    tools = [tool for mark in marks for tool in mark.args]
    root_for = next((mark.kwargs["root"] for mark in marks if "root" in mark.kwargs), None)
    is_root = os.geteuid() == 0
    problem = unmet_needs(tools, root_for, is_root=is_root)
    outcome = requirement_outcome(met=not problem, is_root=is_root, in_ci=running_in_ci(os.environ))
    if outcome == "skip":
        pytest.skip(problem)
    if outcome == "fail":
        pytest.fail(problem if is_root else f"{problem}; in CI every test must run", pytrace=False)


def require_tool(name: str) -> str:
    """The path of a command the test's `needs` mark names (so it was found before the test
    started); one the mark forgot fails the test, saying so."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed and the test's @pytest.mark.needs does not name it")
    return found
