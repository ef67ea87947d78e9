"""The health line: at most one log line a minute, and only while something is wrong.

The pipeline records each turn's outcome here; every HEALTH_INTERVAL_S the runtime asks for
the line, which exists only when turns failed in that window, turns are queued beyond the
concurrency limit, or the event loop stalled: "health: turns=N errors=kind:count,... queued=Q
in_flight=F[ loop_lag_ms=L]". A quiet, healthy bot logs nothing (the per-turn INFO lines say
the rest).

`LoopLag` measures the event loop's own stalls: a task that sleeps a short period and notes
how much later than planned it woke. Anything that holds the loop thread (or the GIL that
thread needs) shows there; that is also what makes discord.py's gateway heartbeat late (its
thread hands each heartbeat to the loop to send). A window's worst stall of at least
LOOP_LAG_REPORT_S is named in the line.

Part of bot/: knows nothing of Discord.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable

__all__ = ["HEALTH_INTERVAL_S", "LOOP_LAG_REPORT_S", "HealthLog", "LoopLag"]

log = logging.getLogger(__name__)

HEALTH_INTERVAL_S = 60.0
LOOP_LAG_SAMPLE_S = 0.1    # how often the loop is asked to wake the monitor
LOOP_LAG_REPORT_S = 0.25   # a stall this long is named in the health line
REFUSALS = frozenset({"empty", "cooldown", "over_budget"})  # the person's doing, not the bot's trouble


class LoopLag:
    """The worst lateness of the event loop since the last `take_worst()`; run `run()` as a task."""

    def __init__(self, sample_s: float = LOOP_LAG_SAMPLE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.sample_s = sample_s
        self._clock = clock
        self._worst = 0.0

    def observe(self, lateness_s: float) -> None:
        """One wake-up, `lateness_s` after it was due."""
        self._worst = max(self._worst, lateness_s)

    def take_worst(self) -> float:
        """The worst lateness seen since the last call (seconds), and start a new window."""
        worst, self._worst = self._worst, 0.0
        return worst

    async def run(self) -> None:
        while True:
            due = self._clock() + self.sample_s
            await asyncio.sleep(self.sample_s)
            self.observe(max(0.0, self._clock() - due))


class HealthLog:
    """Turns served and errors by kind since the last line."""

    def __init__(self) -> None:
        self._turns = 0
        self._errors: Counter[str] = Counter()

    def record(self, error_kind: str | None) -> None:
        """One finished turn; `error_kind` None when it was answered."""
        self._turns += 1
        if error_kind is not None and error_kind not in REFUSALS:
            self._errors[error_kind] += 1

    def line(self, *, queued: int, in_flight: int, loop_lag_s: float = 0.0) -> str | None:
        """The window's line when something is wrong (and start a new window), else None.
        `loop_lag_s`: the event loop's worst stall in the window (LoopLag)."""
        stalled = loop_lag_s >= LOOP_LAG_REPORT_S
        if not self._errors and queued == 0 and not stalled:
            self._turns = 0
            return None
        errors = ",".join(f"{kind}:{n}" for kind, n in sorted(self._errors.items())) or "none"
        text = f"health: turns={self._turns} errors={errors} queued={queued} in_flight={in_flight}"
        if stalled:
            text += f" loop_lag_ms={loop_lag_s * 1000:.0f}"
        self._turns = 0
        self._errors.clear()
        return text
