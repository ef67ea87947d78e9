"""Probe: what holds the event loop while one user grows by `add_many` (bench/README.md, "growth
stall"). Not part of the product or of the bench's figures: a diagnosis tool.

It builds what `memory_bench.py --part heavy` builds (1,000 light users of 10 items, then one
user grown by `add_many` of 2,048 through the embedded Chroma worker process), with a fake
embedder (seeded random unit vectors: the bench takes the bulk loads' vectors from a cache, so
no model runs there either), and changes ONE thing per `--variant`:

    base         as the bench: the memory's snapshot rule, vectors returned as a float32 array
    nosnap       no snapshot rewritten while growing (snapshot_after larger than the user)
    lists        the embedder returns Python lists (as `Embedder.embed` did before main's 777395d)

While it grows, a 2 ms ticker on the loop records every wake-up over 20 ms late; each named
step (`embed`, Chroma `add`, the snapshot's `columns` and `save`) is timed on its thread; a
monitor process samples every 5 ms the machine's steal and iowait (/proc/stat), the loop
thread's run-queue wait (/proc/<pid>/task/<pid>/schedstat) and the Chroma child's CPU time.
For each stall it prints what overlapped it.

    PYTHONPATH=$PWD python bench/probe/growth_stalls.py --variant base --size 50000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from memory.semantic import chroma_process, snapshot, user_items  # noqa: E402
from memory.semantic import open_user_memory, scope_for  # noqa: E402

EVENTS: list[tuple[str, float, float]] = []
_events_lock = threading.Lock()


_gc_started: list[float] = []


def _gc_timer(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _gc_started.append(time.perf_counter())
    elif _gc_started:
        t0 = _gc_started.pop()
        with _events_lock:
            EVENTS.append((f"gc gen{info['generation']}", t0, time.perf_counter()))


def timed(owner: Any, name: str, label: str) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            with _events_lock:
                EVENTS.append((label, t0, time.perf_counter()))

    setattr(owner, name, wrapper)


class FakeEmbedder:
    name = "probe-random-384"
    dimension = 384

    def __init__(self, as_lists: bool) -> None:
        self.as_lists = as_lists
        self.rng = np.random.default_rng(1)

    def embed(self, texts: list[str]) -> Any:
        t0 = time.perf_counter()
        v = self.rng.standard_normal((len(texts), 384)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        out = [row.tolist() for row in v] if self.as_lists else v
        with _events_lock:
            EVENTS.append(("embed", t0, time.perf_counter()))
        return out


MONITOR = r"""
import sys, time
pid, child, out, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
import os
rows = []
while not os.path.exists(stop):
    t = time.perf_counter()
    cpu = open('/proc/stat').readline().split()
    steal, iowait = int(cpu[8]), int(cpu[5])
    run, wait = map(int, open(f'/proc/{pid}/task/{pid}/schedstat').read().split()[:2])
    s = open(f'/proc/{child}/stat').read().rsplit(')', 1)[1].split()
    rows.append(f"{t:.6f} {steal} {iowait} {wait} {int(s[11]) + int(s[12])} {run}")
    time.sleep(0.005)
open(out, 'w').write('\n'.join(rows))
"""


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", default="base", choices=("base", "nosnap", "lists"))
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--start", type=int, default=10_000, help="heavy items before the measured growth")
    parser.add_argument("--chunk", type=int, default=2_048)
    parser.add_argument("--batch", type=int, help="items per Chroma add (the memory's batch)")
    args = parser.parse_args()
    gc.freeze()  # as LocalEmbedder.load does once the model is loaded (the bench's corpus comes after)
    gc.callbacks.append(_gc_timer)
    timed(chroma_process.ChromaProcess, "add", "chroma add")
    timed(snapshot.Snapshots, "save", "snapshot save")
    timed(user_items.UserItems, "columns", "snapshot columns")
    snapshot_after = 10 * args.size if args.variant == "nosnap" else 500
    embedder = FakeEmbedder(as_lists=args.variant == "lists")
    heavy, guild = "299999999999999999", scope_for("810000000000000000")
    words = "salsa lessons Priya Berlin Lyon dinner cat bike piano garden tea coffee hike rain book".split()
    rng = np.random.default_rng(2)

    def text(n: int) -> str:
        return f"item {n}: " + " ".join(rng.choice(words, 12)) + f" word{n % 5000}"

    with tempfile.TemporaryDirectory(prefix="growth-probe-") as tmp:
        mem = open_user_memory(os.path.join(tmp, "chroma"), embedder=embedder, snapshot_after=snapshot_after,
                               chroma_process=True)
        if args.batch:
            mem._batch = args.batch
        light = [(str(300_000_000_000_000_000 + n // 10), text(n), None, guild) for n in range(10_000)]
        for c in range(0, len(light), args.chunk):
            await mem.add_many(light[c:c + args.chunk])
        items = [(heavy, text(n), {"kind": "exchange", "created_at": 1.75e9 + n}, guild if n % 4 else "dm")
                 for n in range(args.size)]
        for c in range(0, args.start, args.chunk):
            await mem.add_many(items[c:min(c + args.chunk, args.start)])
        await mem.search(heavy, "salsa")  # cache the heavy user, as the bench's searches do
        await asyncio.sleep(1.0)
        child = mem._store.pid  # type: ignore[union-attr]
        samples = os.path.join(tmp, "samples.txt")
        stop = os.path.join(tmp, "stop")
        monitor = subprocess.Popen([sys.executable, "-c", MONITOR, str(os.getpid()), str(child), samples, stop])
        stalls: list[tuple[float, float]] = []
        done = False

        async def tick() -> None:
            while not done:
                t0 = time.perf_counter()
                await asyncio.sleep(0.002)
                t1 = time.perf_counter()
                if t1 - t0 - 0.002 > 0.020:
                    stalls.append((t0 + 0.002, t1))

        ticker = asyncio.get_running_loop().create_task(tick())
        EVENTS.clear()
        cpu_before = sum(psutil.Process().cpu_times()[:2])
        t0 = time.perf_counter()
        for c in range(args.start, args.size, args.chunk):
            await mem.add_many(items[c:c + args.chunk])
        took = time.perf_counter() - t0
        cpu_after = sum(psutil.Process().cpu_times()[:2])
        await asyncio.sleep(2.0)  # snapshots still being written
        done = True
        await ticker
        Path(stop).touch()
        monitor.wait()
        rows = np.loadtxt(samples)
        await mem.close()
    print(f"variant {args.variant}, batch {mem._batch}: grown {args.start:,} -> {args.size:,} in {took:.1f} s "
          f"({(args.size - args.start) / took:.0f} items/s); {len(stalls)} stalls over 20 ms, worst "
          f"{max((b - a for a, b in stalls), default=0) * 1000:.0f} ms; load average {os.getloadavg()[0]:.2f}")
    for label in ("embed", "chroma add", "snapshot columns", "snapshot save", "gc gen0", "gc gen1", "gc gen2"):
        spans = [b - a for name, a, b in EVENTS if name == label]
        if spans:
            print(f"  {label:<17} n={len(spans):4}  median {np.median(spans) * 1000:7.1f} ms  max {max(spans) * 1000:7.1f} ms")
    hz = os.sysconf("SC_CLK_TCK")
    total_steal = (rows[-1, 1] - rows[0, 1]) / hz
    print(f"  CPU over the growth: Chroma child {(rows[-1, 4] - rows[0, 4]) / hz:.1f} s, this process "
          f"{cpu_after - cpu_before:.1f} s")
    print(f"  steal over the growth: {total_steal * 1000:.0f} ms of CPU in {rows[-1, 0] - rows[0, 0]:.1f} s")
    for a, b in sorted(stalls, key=lambda s: s[0] - s[1])[:15]:
        inside = rows[(rows[:, 0] >= a - 0.005) & (rows[:, 0] <= b + 0.005)]
        if len(inside) >= 2:
            d = inside[-1] - inside[0]
            extra = (f"steal {d[1] / hz * 1000:4.0f} ms, iowait {d[2] / hz * 1000:4.0f} ms, loop thread ran "
                     f"{d[5] / 1e6:4.0f} / waited for a CPU {d[3] / 1e6:4.0f} / slept {max(0.0, 1000 * d[0] - (d[3] + d[5]) / 1e6):4.0f} ms"
                     f" (of {1000 * d[0]:4.0f}), child CPU {d[4] / hz * 1000:4.0f} ms")
        else:
            extra = "no samples"
        over = sorted({name for name, s, e in EVENTS if s < b and e > a})
        print(f"  stall {1000 * (b - a):5.0f} ms at +{a - t0:6.2f} s: {extra}; during: {', '.join(over) or '-'}")


if __name__ == "__main__":
    asyncio.run(main())
