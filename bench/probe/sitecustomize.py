"""Diagnostics for a bot started by the chaos bench: imported at start-up by every Python
process whose PYTHONPATH holds this folder (`BotProcess(probe=True)` puts it there), active
only under its environment variables; the product holds none of this.

    CHAOS_TRACEMALLOC=<folder>  trace allocations (10 frames) and dump a snapshot to
                                <folder>/snap-<pid>-<n>.tracemalloc on each SIGUSR1
    CHAOS_GC_LOG=<seconds>      print each garbage collection that took at least that long
                                (its generation, duration, objects collected, and the objects
                                the collector tracks, by type) to stderr

Slow event-loop callbacks need nothing here: PYTHONASYNCIODEBUG=1 makes asyncio log every
callback over 100 ms (logger "asyncio", WARNING).

Part of bench/.
"""

from __future__ import annotations

import gc
from collections import Counter
import itertools
import os
import signal
import sys
import time
import tracemalloc
from pathlib import Path


def _start_tracing(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tracemalloc.start(10)
    counter = itertools.count()

    def dump(_signum: int, _frame: object) -> None:
        tracemalloc.take_snapshot().dump(str(folder / f"snap-{os.getpid()}-{next(counter)}.tracemalloc"))

    signal.signal(signal.SIGUSR1, dump)


def _log_collections(at_least_s: float) -> None:
    started = [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = time.perf_counter() - started[0]
        if took >= at_least_s:
            tracked = gc.get_objects()
            kinds = Counter(type(o).__name__ for o in tracked).most_common(8)
            print(f"{time.strftime('%H:%M:%S')} gc: generation {info['generation']} took {took * 1000:.0f} ms, "
                  f"{info['collected']} collected, {len(tracked)} objects tracked: "
                  + ", ".join(f"{name} {n}" for name, n in kinds), file=sys.stderr)

    gc.callbacks.append(timed)


if _threshold := os.environ.pop("CHAOS_GC_LOG", None):
    _log_collections(float(_threshold))
if _folder := os.environ.pop("CHAOS_TRACEMALLOC", None):  # popped: the bot's children are not traced
    _start_tracing(Path(_folder))
