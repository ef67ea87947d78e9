"""bot.process.heap: start-up garbage is collected, the rest frozen out of the collector's scans."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from bot.process.heap import freeze_start_up_heap


@pytest.fixture
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the test process's own heap back to normal


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_what_start_up_left_behind_is_collected_and_the_rest_frozen(unfrozen: None) -> None:
    garbage = _Node()
    gone = weakref.ref(garbage)
    del garbage
    kept = [_Node() for _ in range(100)]
    frozen = freeze_start_up_heap()
    assert gone() is None                       # collected first, not frozen forever
    assert frozen >= len(kept) and gc.get_freeze_count() > 0  # (other threads may free frozen objects)
    assert not any(gc.is_tracked(n) and n in gc.get_objects(generation=2) for n in kept[:3])
