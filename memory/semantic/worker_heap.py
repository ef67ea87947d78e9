"""The glibc heap of the Chroma worker process: memory that Chroma freed, given back.

Embedded Chroma (its Rust bindings allocate with the C library's malloc) frees most of what a
burst of adds and reads allocated, but glibc keeps freed memory inside its arenas (one per
thread that allocated, up to eight per core), so the worker's RSS rose with every busy spell
while the memory in use hardly did (docs/decisions/0012-chroma-worker-heap-trim.md). `HeapTrimmer` hands
the freed pages back (`malloc_trim(0)`, which also releases free pages inside every arena) at
most once per interval, after a call or once the worker is idle. Python has no binding for it,
hence ctypes; on a C library without it (musl) nothing is done, and that is logged once.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import ctypes
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

__all__ = ["Allocator", "HeapLimits", "HeapState", "HeapTrimmer", "glibc"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HeapLimits:
    """`trim_interval_s`: give freed memory back at most this often (0: never)."""

    trim_interval_s: float = 1.0

    def __post_init__(self) -> None:
        if not self.trim_interval_s >= 0:
            raise ValueError(f"trim_interval_s must not be negative: {self.trim_interval_s}")


class HeapState(NamedTuple):
    """What the trimmer did: how many trims ran, and the seconds they took in all."""

    trims: int
    trim_seconds: float


class Allocator(Protocol):
    """The call of the C library's malloc that the trimmer makes."""

    def malloc_trim(self, pad: int) -> int: ...


def glibc() -> Allocator | None:
    """This process's C library when it has glibc's malloc_trim, else None."""
    try:
        libc = ctypes.CDLL(None)  # the symbols this process already has: no ldconfig run to find libc
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc  # type: ignore[return-value]


class HeapTrimmer:
    """Applies `HeapLimits` to this process's malloc (the worker's serve loop drives it)."""

    def __init__(self, limits: HeapLimits, allocator: Allocator | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._allocator = allocator
        self._clock = clock
        self._last_trim = clock()
        self._calls_since_trim = 0
        self.trims = 0
        self.trim_seconds = 0.0
        if allocator is None and limits.trim_interval_s:
            log.warning("semantic memory: no glibc malloc_trim here; the Chroma worker's heap is left as it is")

    def idle_wait_s(self) -> float | None:
        """How long the serve loop may wait for a call before `trim_if_due` has work (None: as
        long as it likes, nothing was freed since the last trim)."""
        if not self._enabled() or not self._calls_since_trim:
            return None
        return max(0.0, self._last_trim + self.limits.trim_interval_s - self._clock())

    def after_call(self) -> None:
        """A call was answered: trim now if the interval has passed since the last trim."""
        self._calls_since_trim += 1
        self.trim_if_due()

    def trim_if_due(self) -> None:
        if not self._enabled() or not self._calls_since_trim:
            return
        if self._clock() - self._last_trim < self.limits.trim_interval_s:
            return
        assert self._allocator is not None
        started = time.perf_counter()
        self._allocator.malloc_trim(0)
        self.trim_seconds += time.perf_counter() - started
        self._last_trim = self._clock()
        self._calls_since_trim = 0
        self.trims += 1

    def state(self) -> HeapState:
        return HeapState(self.trims, self.trim_seconds)

    def _enabled(self) -> bool:
        return self._allocator is not None and self.limits.trim_interval_s > 0
