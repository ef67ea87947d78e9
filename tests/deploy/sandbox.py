"""Run a command inside the sandbox a unit file asks for, as far as it can be rebuilt without a
running systemd: the unit's system call filter (expanded by `systemd-analyze syscall-filter`,
the same tables systemd uses; SystemCallErrorNumber=EPERM), MemoryDenyWriteExecute,
RestrictAddressFamilies, ProtectProc/ProcSubset (a /proc mounted with hidepid/subset in a new
mount and PID namespace), CapabilityBoundingSet= (all dropped), NoNewPrivileges, and the unit's
Environment= lines (%S and %C pointing at temporary folders). Not rebuilt: the read-only file
system views, PrivateUsers, IP address filters. Needs root, gcc, libseccomp-dev, systemd-analyze,
unshare and setpriv: its tests say so with their `needs` mark (tests/deploy/conftest.py).

Test helper only; imports nothing from the project's packages.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from functools import cache
from pathlib import Path

import pytest

from tests.needs import require_tool
from tests.deploy.unitfile import UnitFile

__all__ = ["Sandbox", "build_sandbox_run"]

HERE = Path(__file__).resolve().parent


def build_sandbox_run(where: Path) -> Path:
    """Compile sandbox_run.c into ``where``; a missing compiler or header fails the test."""
    gcc = require_tool("gcc")
    binary = where / "sandbox_run"
    done = subprocess.run(
        [gcc, "-O2", "-Wall", "-o", str(binary), str(HERE / "sandbox_run.c"), "-lseccomp"],
        capture_output=True, text=True, timeout=120,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot build sandbox_run (sudo make system-deps installs gcc and libseccomp-dev):\n"
                    f"{done.stderr}")
    return binary


@cache
def syscall_groups() -> dict[str, tuple[str, ...]]:
    """Every @group systemd knows, with its members (system calls and nested @groups)."""
    tool = require_tool("systemd-analyze")
    out = subprocess.run([tool, "syscall-filter", "--no-pager"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    groups: dict[str, list[str]] = {}
    members: list[str] | None = None
    for line in out.splitlines():
        if line.startswith("@"):
            members = groups.setdefault(line.split()[0], [])
        elif line.startswith(" ") and members is not None and line.strip() and not line.strip().startswith("#"):
            members.append(line.strip())
    return {name: tuple(m) for name, m in groups.items()}


def expand(word: str) -> set[str]:
    if not word.startswith("@"):
        return {word}
    return {call for member in syscall_groups()[word] for call in expand(member)}


def allowed_syscalls(filters: list[str]) -> set[str]:
    """What SystemCallFilter= lines leave allowed: the allow-lists (plus @default, which
    systemd adds to any allow-list) minus every `~` deny-list, in file order."""
    allowed: set[str] = set()
    for value in filters:
        deny = value.startswith("~")
        words = {c for word in value.lstrip("~").split() for c in expand(word)}
        if deny:
            allowed -= words
        else:
            allowed |= words | expand("@default")
    return allowed


class Sandbox:
    """The sandbox of one unit, under a temporary root for its state and cache folders."""

    def __init__(self, unit: UnitFile, root: Path, binary: Path, *, mdwe: bool | None = None) -> None:
        for tool in ("unshare", "setpriv"):
            require_tool(tool)
        self.unit = unit
        self.binary = binary
        self.state = root / "state"
        self.cache = root / "cache"
        self.state.mkdir(parents=True, exist_ok=True)
        self.cache.mkdir(parents=True, exist_ok=True)
        if mdwe is None:
            mdwe = unit.value("Service", "MemoryDenyWriteExecute") == "yes"
        families = [getattr(socket, name) for name in unit.words("Service", "RestrictAddressFamilies")]
        rules = [f"allow {call}" for call in sorted(allowed_syscalls(unit.values("Service", "SystemCallFilter")))]
        rules.append("families " + " ".join(str(int(f)) for f in families))
        if mdwe:
            rules.append("mdwe")
        self.rules = root / "rules"
        self.rules.write_text("\n".join(rules) + "\n", encoding="utf-8")

    def environment(self) -> dict[str, str]:
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "HOME": str(self.state)}
        for word in self.unit.words("Service", "Environment"):
            key, _, value = word.partition("=")
            env[key] = value.replace("%S", str(self.state)).replace("%C", str(self.cache))
        return env

    def proc_options(self) -> str:
        options = ["rw"]
        if self.unit.value("Service", "ProtectProc") == "invisible":
            options.append("hidepid=invisible")
        if self.unit.value("Service", "ProcSubset") == "pid":
            options.append("subset=pid")
        return ",".join(options)

    def command(self, *argv: str) -> list[str]:
        privileges = []
        if self.unit.value("Service", "CapabilityBoundingSet") == "":
            privileges += ["--bounding-set=-all", "--inh-caps=-all"]
        if self.unit.value("Service", "NoNewPrivileges") == "yes":
            privileges.append("--no-new-privs")
        inner = [
            shutil.which("setpriv") or "setpriv", *privileges,
            "env", "-i", *(f"{k}={v}" for k, v in self.environment().items()),
            str(self.binary), str(self.rules), "--", *argv,
        ]
        return [
            shutil.which("unshare") or "unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
            "sh", "-c", 'mount -t proc -o "$0" proc /proc && exec "$@"', self.proc_options(), *inner,
        ]

    def run(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*argv), capture_output=True, text=True, timeout=timeout)

    def start(self, *argv: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen(self.command(*argv), stdout=out, stderr=subprocess.STDOUT)
