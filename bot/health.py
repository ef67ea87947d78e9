"""The health line: at most one log line a minute, and only while something is wrong.

The pipeline records each turn's outcome here; every HEALTH_INTERVAL_S the runtime asks for
the line, which exists only when turns failed in that window or turns are queued beyond the
concurrency limit: "health: turns=N errors=kind:count,... queued=Q in_flight=F". A quiet,
healthy bot logs nothing (the per-turn INFO lines say the rest).

Part of bot/: knows nothing of Discord.
"""

from __future__ import annotations

import logging
from collections import Counter

__all__ = ["HEALTH_INTERVAL_S", "HealthLog"]

log = logging.getLogger(__name__)

HEALTH_INTERVAL_S = 60.0
REFUSALS = frozenset({"empty", "cooldown", "over_budget"})  # the person's doing, not the bot's trouble


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

    def line(self, *, queued: int, in_flight: int) -> str | None:
        """The window's line when something is wrong (and start a new window), else None."""
        if not self._errors and queued == 0:
            self._turns = 0
            return None
        errors = ",".join(f"{kind}:{n}" for kind, n in sorted(self._errors.items())) or "none"
        text = f"health: turns={self._turns} errors={errors} queued={queued} in_flight={in_flight}"
        self._turns = 0
        self._errors.clear()
        return text
