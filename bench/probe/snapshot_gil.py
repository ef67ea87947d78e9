"""Probe: how long writing one big user's snapshot holds the GIL, part by part.

Builds `UserItems` of `--size` items of the heavy bench's texts (random unit vectors), then
runs each step of a snapshot (`UserItems.columns` and its parts, `Snapshots.save`) on a worker
thread while the main thread sleeps 1 ms at a time: how late the sleeper wakes is how long
it could not get the GIL (plus CPU waits: run it on a quiet machine). The GIL's switch interval
is the bot's (`bot.process.gil`) unless `--switch-interval-ms` says otherwise. Not part of the product.

    PYTHONPATH=$PWD python bench/probe/snapshot_gil.py --size 50000 [--dead-every 97]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_bench import make_text  # noqa: E402

from bot.process.gil import SWITCH_INTERVAL_S  # noqa: E402
from memory.semantic.chroma_backend import StoredItem  # noqa: E402
from memory.semantic.snapshot import Snapshots  # noqa: E402
from memory.semantic.user_items import UserItems  # noqa: E402


def held(label: str, step: Callable[[], object]) -> object:
    """Run `step` on a thread; print its time and the worst lateness of a 1 ms sleeper meanwhile."""
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(step()))
    worst = 0.0
    t0 = time.perf_counter()
    worker.start()
    while worker.is_alive():
        s = time.perf_counter()
        time.sleep(0.001)
        worst = max(worst, time.perf_counter() - s - 0.001)
    print(f"{label:<44} {1000 * (time.perf_counter() - t0):7.1f} ms, sleeper's worst lateness "
          f"{1000 * worst:6.1f} ms", flush=True)
    return out[0] if out else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--dead-every", type=int, default=0,
                        help="mark every Nth item dead first (0: none; every row alive takes views)")
    parser.add_argument("--switch-interval-ms", type=float, default=SWITCH_INTERVAL_S * 1000,
                        help="sys.setswitchinterval (default: the bot's, bot.process.gil; CPython's own is 5)")
    args = parser.parse_args()
    sys.setswitchinterval(args.switch_interval_ms / 1000)
    rng = random.Random(8)
    vectors = np.random.default_rng(3).standard_normal((args.size, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    entry = UserItems(0)
    for start in range(0, args.size, 2048):
        n = min(2048, args.size - start)
        items = [StoredItem(f"{start + i:032x}", make_text(rng),
                            {"user_id": "u", "scope": "dm", "created_at": 1.75e9 + start + i, "kind": "exchange"})
                 for i in range(n)]
        entry.append(items, vectors[start:start + n])
    if args.dead_every:
        entry.remove([entry.ids[n] for n in range(0, args.size, args.dead_every)])
    print(f"{args.size:,} items ({entry.live:,} alive), {len(entry.keywords._docs):,} distinct terms", flush=True)
    alive = entry._alive[: len(entry.ids)]
    listed = np.flatnonzero(alive).tolist()
    held("keywords.state", lambda: entry.keywords.state(alive))
    held("items.packed", lambda: entry.items.packed(listed))
    columns = held("columns (whole)", entry.columns)
    assert isinstance(columns, dict)
    with tempfile.TemporaryDirectory() as tmp:
        snapshots = Snapshots(tmp, embedder="probe")
        held("Snapshots.save (whole: write, fsync, rename)", lambda: snapshots.save("u", columns, "t", 0))
        held("Snapshots.load", lambda: snapshots.load("u", 1))

        def read() -> dict[str, np.ndarray]:
            with np.load(snapshots.path("u"), allow_pickle=False) as data:
                return {name[2:]: data[name] for name in data.files if name.startswith("c_")}

        read_back = held("  its arrays read (np.load)", read)
        assert isinstance(read_back, dict)
        held("  its items made (UserItems.from_columns)", lambda: UserItems.from_columns(1, read_back))


if __name__ == "__main__":
    main()
