"""systemd's Restart= decision for a unit, read from the unit file itself, for the deploy tests.

There is no systemd to run the unit under in the test container (PID 1 is not systemd, and
`systemd --user` needs a system instance), so the tests drive the same policy: the settings
come from the unit (Restart=, RestartSec=, RestartPreventExitStatus=, StartLimitIntervalSec=,
StartLimitBurst=) and `should_restart` follows the table of systemd.service(5): with
`on-failure` a service is restarted after an unclean exit code or an unclean signal (not
SIGHUP, SIGINT, SIGTERM or SIGPIPE), unless the exit status is listed in
RestartPreventExitStatus=; a start beyond StartLimitBurst= within StartLimitIntervalSec= is
refused. Only the values the project's unit uses are handled (a test fails on any other).

Test helper only; imports nothing from the project's packages.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.deploy.unitfile import UnitFile

__all__ = ["RestartPolicy"]

CLEAN_SIGNALS = frozenset({signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE})


@dataclass(frozen=True)
class RestartPolicy:
    restart: str
    restart_sec: float
    prevent_exit_status: frozenset[int]
    start_limit_interval_s: float
    start_limit_burst: int

    @classmethod
    def from_unit(cls, path: Path) -> RestartPolicy:
        unit = UnitFile(path)
        restart = unit.value("Service", "Restart") or "no"
        if restart != "on-failure":
            raise ValueError(f"{path}: Restart={restart} is not handled here")
        prevent = " ".join(unit.values("Service", "RestartPreventExitStatus")).split()
        return cls(restart=restart,
                   restart_sec=float(unit.value("Service", "RestartSec") or 0.1),
                   prevent_exit_status=frozenset(int(v) for v in prevent),
                   start_limit_interval_s=float(unit.value("Unit", "StartLimitIntervalSec") or 10),
                   start_limit_burst=int(unit.value("Unit", "StartLimitBurst") or 5))

    def should_restart(self, returncode: int) -> bool:
        """For a process's return code as Python reports it (negative: killed by that signal)."""
        if returncode < 0:
            return signal.Signals(-returncode) not in CLEAN_SIGNALS
        return returncode != 0 and returncode not in self.prevent_exit_status

    def may_start(self, starts: Sequence[float], now: float) -> bool:
        """Whether one more start is allowed after `starts` (monotonic times)."""
        recent = [t for t in starts if now - t < self.start_limit_interval_s]
        return len(recent) < self.start_limit_burst
