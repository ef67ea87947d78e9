"""The Chroma worker's heap trimming (memory.semantic.worker_heap): freed memory is handed back at most
once per interval, after calls or once idle; never without a call since the last trim, never
with a zero interval, never on a C library without malloc_trim."""

from __future__ import annotations

import logging
import math
import subprocess
from typing import Any

import pytest

from memory.semantic.worker_heap import HeapLimits, HeapState, HeapTrimmer, glibc


class RecordingAllocator:
    """Stands in for the C library: records the trims (the real one is tested below)."""

    def __init__(self) -> None:
        self.trims: list[int] = []

    def malloc_trim(self, pad: int) -> int:
        self.trims.append(pad)
        return 1


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_calls_within_the_interval_trim_once_when_it_has_passed() -> None:
    libc, clock = RecordingAllocator(), Clock()
    trimmer = HeapTrimmer(HeapLimits(trim_interval_s=10.0), libc, clock)
    for _ in range(20):
        clock.now += 0.25
        trimmer.after_call()
    assert libc.trims == []  # 5 s of calls
    clock.now += 5.0
    trimmer.after_call()
    assert libc.trims == [0]  # malloc_trim(0): keep no padding at the top of the heap
    trimmer.after_call()
    assert trimmer.state().trims == 1  # the interval starts again at the trim


def test_an_idle_worker_waits_until_the_interval_ends_and_then_trims() -> None:
    libc, clock = RecordingAllocator(), Clock()
    trimmer = HeapTrimmer(HeapLimits(trim_interval_s=10.0), libc, clock)
    clock.now += 4.0
    trimmer.after_call()
    assert trimmer.idle_wait_s() == pytest.approx(6.0)
    clock.now += 6.0
    assert trimmer.idle_wait_s() == 0.0
    trimmer.trim_if_due()
    assert libc.trims == [0]
    assert trimmer.idle_wait_s() is None  # nothing freed since: the loop may block on the pipe


def test_no_trim_without_a_call_since_the_last_one() -> None:
    libc, clock = RecordingAllocator(), Clock()
    trimmer = HeapTrimmer(HeapLimits(trim_interval_s=1.0), libc, clock)
    assert trimmer.idle_wait_s() is None
    clock.now += 60.0
    trimmer.trim_if_due()
    assert libc.trims == []


def test_a_zero_interval_never_trims() -> None:
    libc, clock = RecordingAllocator(), Clock()
    trimmer = HeapTrimmer(HeapLimits(trim_interval_s=0.0), libc, clock)
    for _ in range(10):
        clock.now += 100.0
        trimmer.after_call()
    assert trimmer.idle_wait_s() is None
    assert libc.trims == []


def test_without_glibc_nothing_is_called_and_nothing_fails() -> None:
    trimmer = HeapTrimmer(HeapLimits(trim_interval_s=1e-9), None)
    trimmer.after_call()
    trimmer.trim_if_due()
    assert trimmer.idle_wait_s() is None
    assert trimmer.state() == HeapState(trims=0, trim_seconds=0.0)


@pytest.mark.parametrize("interval", [-0.5, -math.inf, math.nan])
def test_a_negative_or_undefined_interval_is_refused(interval: float) -> None:
    with pytest.raises(ValueError, match="trim_interval_s"):
        HeapLimits(trim_interval_s=interval)


def test_without_glibc_a_trimming_worker_says_so_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="memory.semantic.worker_heap"):
        HeapTrimmer(HeapLimits(trim_interval_s=1.0), None)
        HeapTrimmer(HeapLimits(trim_interval_s=0.0), None)  # trimming off: nothing to say
    assert [r.getMessage() for r in caplog.records] == [
        "semantic memory: no glibc malloc_trim here; the Chroma worker's heap is left as it is"]


def test_glibc_is_found_without_running_a_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each new worker looks it up: ctypes.util.find_library ran `ldconfig -p` (or gcc) there."""
    spawned: list[Any] = []

    def refuse(args: Any, *rest: Any, **kwargs: Any) -> None:
        spawned.append(args)
        raise OSError("no programs here")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert glibc() is not None
    assert spawned == []


def test_this_machines_glibc_trims() -> None:
    libc = glibc()
    assert libc is not None
    assert libc.malloc_trim(0) in (0, 1)  # whether memory was given back
