"""How one search's time went: its parts, named and timed in milliseconds.

A search (`memory.semantic.UserMemory.search`) runs on the event loop and on worker threads,
partly at once (the query's embedding beside the wait for the user's items). `Laps` times the
consecutive parts of one piece of work; `UserMemory.last_search` keeps the last search's
parts as a `SearchTiming`, for logs and `bench/memory_bench.py`, which prints them.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Laps", "SearchTiming"]


class Laps:
    """Consecutive parts of one piece of work: `lap(name)` ends the part begun at the previous
    lap (or at `start`, perf_counter seconds; default now) and adds its length to `name`."""

    __slots__ = ("_last", "parts")

    def __init__(self, start: float | None = None) -> None:
        self._last = time.perf_counter() if start is None else start
        self.parts: dict[str, float] = {}

    def lap(self, name: str) -> float:
        """End the current part as `name`; returns the time it ended (perf_counter seconds)."""
        now = time.perf_counter()
        self.parts[name] = self.parts.get(name, 0.0) + 1000.0 * (now - self._last)
        self._last = now
        return now

    def skip(self) -> float:
        """Begin the next part now, not recording the time since the last lap (it was timed
        with `between`); returns now (perf_counter seconds)."""
        self._last = time.perf_counter()
        return self._last

    def between(self, name: str, start: float, end: float) -> None:
        """Record a part timed elsewhere (perf_counter seconds), without moving the current lap."""
        self.parts[name] = self.parts.get(name, 0.0) + 1000.0 * max(0.0, end - start)


@dataclass(frozen=True, slots=True)
class SearchTiming:
    """One search's parts in ms: `parts`, one after another in the order they ran (they add up
    to about `total_ms`, the whole search), and `beside`, the parts that ran at the same time
    as some of them (reading the user's items and preparing the ranking during the embedding)."""

    parts: Mapping[str, float]
    beside: Mapping[str, float]
    total_ms: float

    @classmethod
    def of(cls, *laps: Laps, beside: Mapping[str, float], total_ms: float) -> SearchTiming:
        """The parts of these laps, in order (a name in several adds up)."""
        parts: dict[str, float] = {}
        for one in laps:
            for name, ms in one.parts.items():
                parts[name] = parts.get(name, 0.0) + ms
        return cls(parts, dict(beside), total_ms)
