"""Probe: the memory engine in one process, with and without the process-wide tuning the bot
used to set (gc freeze, malloc pin, GIL switch interval): a heavy person grown by add_many
(seeded random vectors for bulk loads, the real model for every query and single add), searches
right after an add, a 5 ms ticker's worst lateness on the loop, a cold search in a fresh
process, RSS. Not part of the bench's figures: a diagnosis tool (docs/decisions/0024).

    PYTHONPATH=$PWD python bench/probe/engine_probe.py --sizes 1000 --light 50 --rounds 40 [--tuned]

`--tuned` needs a checkout that still has bot/process/{heap,allocator,gil}.py.
"""

import argparse, asyncio, os, statistics, subprocess, sys, tempfile, time
import numpy as np
from memory.semantic.embeddings import LocalEmbedder
from memory.semantic import open_user_memory

WORDS = "garden kafka berlin marathon cello sister lisbon tomato kayak helix vim school bike coffee tea dog cat rain novel piano chess sailing".split()


class Bulk:
    """The real model for one text (queries, single adds); seeded random unit vectors for bulk loads."""

    def __init__(self, real):
        self.real, self.name, self.dimension = real, real.name, real.dimension
        self.rng = np.random.default_rng(1)

    def embed(self, texts):
        if len(texts) == 1:
            return self.real.embed(texts)
        v = self.rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class Ticker:
    def __init__(self):
        self.worst = 0.0
        self.running = True

    async def run(self):
        while self.running:
            t = time.perf_counter()
            await asyncio.sleep(0.005)
            self.worst = max(self.worst, time.perf_counter() - t - 0.005)

    def take(self):
        w, self.worst = self.worst, 0.0
        return w * 1000


def text(rng, n):
    return f"note {n}: " + " ".join(rng.choice(WORDS, 8))


def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def main(a):
    if a.tuned:  # what `python -m bot run` sets today (bot/process/{heap,allocator,gil}.py)
        from bot.process.heap import freeze_start_up_heap
        from bot.process.allocator import pin_malloc_thresholds
        from bot.process.gil import shorten_switch_interval

        freeze_start_up_heap()
        pin_malloc_thresholds(os.environ)
        shorten_switch_interval()
    print(
        f"# tuned={a.tuned} switch interval {sys.getswitchinterval() * 1000:.1f} ms; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    folder = a.folder or tempfile.mkdtemp()
    real = LocalEmbedder()
    real.load()
    emb = Bulk(real)
    mem = open_user_memory(folder + "/chroma", embedder=emb, collection="probe")
    tick = Ticker()
    task = asyncio.create_task(tick.run())
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    for u in range(a.light):
        await mem.add_many([(f"light{u}", text(rng, i), None, "guild:1") for i in range(10)])
    print(
        f"light: {a.light} people x 10 items in {time.perf_counter() - t:.1f} s; worst stall {tick.take():.0f} ms",
        flush=True,
    )
    have = 0
    for size in a.sizes:
        t = time.perf_counter()
        grow = size - have
        while have < size:
            n = min(2048, size - have)
            await mem.add_many([("heavy", text(rng, have + i), None, "guild:1") for i in range(n)])
            have += n
        el = time.perf_counter() - t
        print(
            f"[{size}] grown by {grow} in {el:.1f} s ({grow / el:.0f} items/s); worst stall while growing {tick.take():.0f} ms",
            flush=True,
        )
        times = []
        for r in range(a.rounds):
            await mem.add(
                "heavy", f"round {r}: I bought a {rng.choice(WORDS)} and a {rng.choice(WORDS)}", None, "guild:1"
            )
            q = f"what did I say about {rng.choice(WORDS)} and {rng.choice(WORDS)} in round {r}?"
            s = time.perf_counter()
            await mem.search("heavy", q, k=5, scope="guild:1")
            times.append((time.perf_counter() - s) * 1000)
        have += a.rounds
        times.sort()
        print(
            f"[{size}] search k=5 right after an add: p50 {statistics.median(times):.1f} ms p95 {times[int(0.95 * len(times)) - 1]:.1f} ms max {times[-1]:.1f}; worst stall {tick.take():.0f} ms; RSS {rss_mb():.0f} MB",
            flush=True,
        )
        # a fresh process: open and search once (the cold first search)
        code = (
            "import time,asyncio;from memory.semantic import open_user_memory;from memory.semantic.embeddings import LocalEmbedder;"
            "e=LocalEmbedder();e.load();t=time.perf_counter();m=open_user_memory(%r,embedder=e,collection='probe');"
            "h=asyncio.run(m.search('heavy','what about my garden?',k=5,scope='guild:1'));print('%%.0f'%%((time.perf_counter()-t)*1000))"
        ) % (folder + "/chroma")
        await mem.close()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
        print(
            f"[{size}] cold first search in a fresh process (open + search, model loaded): {out.stdout.strip() or out.stderr[-300:]} ms",
            flush=True,
        )
        mem = open_user_memory(folder + "/chroma", embedder=emb, collection="probe")
    tick.running = False
    await task
    await mem.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    p.add_argument("--light", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--tuned", action="store_true")
    p.add_argument("--folder")
    asyncio.run(main(p.parse_args()))
