"""A clock a test moves by hand, for code that takes its clock as a callable: epoch seconds
(the semantic memory) or an aware datetime (the runtime, reminders, budgets)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Generic, TypeVar

__all__ = ["Clock"]

T = TypeVar("T", float, datetime)


class Clock(Generic[T]):
    """`clock()` is `clock.now`, which the test sets or moves with `advance`."""

    def __init__(self, now: T) -> None:
        self.now = now

    def __call__(self) -> T:
        return self.now

    def advance(self, **delta: float) -> None:
        """Move on by ``timedelta(**delta)`` (days=, hours=, seconds=, ...)."""
        step = timedelta(**delta)
        self.now = self.now + step if isinstance(self.now, datetime) else self.now + step.total_seconds()
