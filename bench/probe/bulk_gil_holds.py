"""Probe: how long each step a bulk import runs on a worker thread keeps another thread waiting
for the GIL (what the event loop would wait), one step at a time on a quiet process. Not part
of the product or of the bench's figures: a diagnosis tool (docs/decisions/0038-*.md).

One user's `UserItems` grows to `--size` items of the bench's corpus (`bench/memory_corpus.py`),
256 rows per `append` as `Copies.taken_in` appends them (random unit vectors: no model).
A sleeper thread wakes every 1 ms and records its gaps, and how much of each it spent waiting
for a CPU (its run-queue wait, /proc/self/task/<tid>/schedstat); for each step it prints the
worst gap and the worst gap less that wait (min and max over `--repeats`): the second is the
time the step held the GIL, whatever the machine's load. Steps: every `append` (worst of all), a full garbage
collection, `UserItems.columns()`, `Snapshots.save` and `Snapshots.load` of those columns, and
freeing the items (once: one deallocation, which holds the GIL on whichever thread runs it).
Then the single calls the chunked helpers of before were written around, on `--rows` synthetic
rows (ids of 32 hex digits, 384 float32 each): a fancy-indexed copy of the vectors, `np.take`,
the ids into a numpy str array and back with `.tolist()`, and one `dict(zip(ids, rows))`.

    PYTHONPATH=$PWD python bench/probe/bulk_gil_holds.py --size 50000
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import memory_corpus  # noqa: E402

from memory.semantic.chroma_backend import StoredItem  # noqa: E402
from memory.semantic.item_text import kept_metadata  # noqa: E402
from memory.semantic.snapshot import Snapshots  # noqa: E402
from memory.semantic.user_items import UserItems  # noqa: E402


class Sleeper:
    """A thread sleeping 1 ms at a time; `worst()` is its longest gap since `reset()`."""

    def __init__(self) -> None:
        self._gaps: list[tuple[float, float]] = []  # (gap, gap less the run-queue wait), seconds
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        stat = f"/proc/self/task/{threading.get_native_id()}/schedstat"

        def waited() -> float:
            with open(stat) as f:
                return int(f.read().split()[1]) / 1e9

        last, last_wait = time.perf_counter(), waited()
        while not self._stop:
            time.sleep(0.001)
            now, wait = time.perf_counter(), waited()
            self._gaps.append((now - last, now - last - (wait - last_wait)))
            last, last_wait = now, wait

    def reset(self) -> None:
        self._gaps.clear()

    def worst(self) -> tuple[float, float]:
        """The longest gap, and the longest gap less its run-queue wait (the GIL's part)."""
        return max((g for g, _ in self._gaps), default=0.0), max((h for _, h in self._gaps), default=0.0)

    def stop(self) -> None:
        self._stop = True
        self._thread.join()


def measure(sleeper: Sleeper, label: str, step: Callable[[], Any], repeats: int) -> None:
    took: list[float] = []
    worst: list[tuple[float, float]] = []
    for _ in range(repeats):
        time.sleep(0.02)
        sleeper.reset()
        started = time.perf_counter()
        step()
        took.append(time.perf_counter() - started)
        time.sleep(0.005)
        worst.append(sleeper.worst())
    gaps, held = [g for g, _ in worst], [h for _, h in worst]
    print(f"  {label:<34} took {1000 * min(took):7.1f} ms; worst gap {1000 * min(gaps):6.1f} / {1000 * max(gaps):6.1f} "
          f"ms, less CPU wait {1000 * min(held):6.1f} / {1000 * max(held):6.1f} ms (min / max of {repeats})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default, meaning in (("--size", 50_000, "the person's items"), ("--repeats", 5, "runs of each step"),
                                   ("--rows", 400_000, "rows of the single numpy and dict calls")):
        parser.add_argument(flag, type=int, default=default, help=meaning)
    args = parser.parse_args()
    gc.freeze()  # as LocalEmbedder.load does once the model is loaded
    texts = memory_corpus.texts(min(args.size, 60_000))
    rng = np.random.default_rng(1)
    sleeper = Sleeper()
    entry = UserItems()
    worst_append = (0.0, 0.0)
    for start in range(0, args.size, 256):
        rows = range(start, min(args.size, start + 256))
        items = [StoredItem(uuid.uuid4().hex, memory_corpus.corpus_text(texts, r),
                            kept_metadata({"kind": "exchange", "user_id": "299999999999999999",
                                           "scope": "guild:810000000000000000", "created_at": 1.75e9 + r}))
                 for r in rows]
        vectors = rng.standard_normal((len(items), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        sleeper.reset()
        entry.append(items, vectors)
        gap, held = sleeper.worst()
        worst_append = (max(worst_append[0], gap), max(worst_append[1], held))
    print(f"bulk_gil_holds: {args.size:,} items, load average {os.getloadavg()[0]:.2f}")
    print(f"  {'append of 256 rows (worst of all)':<34} worst gap {1000 * worst_append[0]:6.1f} ms, less CPU wait "
          f"{1000 * worst_append[1]:6.1f} ms")
    measure(sleeper, "full garbage collection", gc.collect, args.repeats)
    measure(sleeper, "UserItems.columns()", entry.columns, args.repeats)
    columns = entry.columns()
    with tempfile.TemporaryDirectory(prefix="gil-holds-") as tmp:
        snapshots = Snapshots(tmp, embedder="probe")
        measure(sleeper, "Snapshots.save", lambda: snapshots.save("u", columns, "v", 0), args.repeats)
        measure(sleeper, "Snapshots.load", lambda: snapshots.load("u"), args.repeats)
    held = [entry]
    del entry
    measure(sleeper, "freeing the items", held.clear, 1)
    print(f"single calls on {args.rows:,} rows")
    matrix = rng.standard_normal((args.rows, 384)).astype(np.float32)
    rows = np.arange(args.rows - 7)
    ids = [f"{n:032x}" for n in range(args.rows)]
    as_array = np.array(ids, dtype=str)
    measure(sleeper, "matrix[rows]", lambda: matrix[rows], args.repeats)
    measure(sleeper, "np.take(matrix, rows, axis=0)", lambda: np.take(matrix, rows, axis=0), args.repeats)
    measure(sleeper, "np.array(ids, dtype=str)", lambda: np.array(ids, dtype=str), args.repeats)
    measure(sleeper, "str array .tolist()", as_array.tolist, args.repeats)
    measure(sleeper, "dict(zip(ids, range(n)))", lambda: dict(zip(ids, range(args.rows))), args.repeats)
    sleeper.stop()


if __name__ == "__main__":
    main()
