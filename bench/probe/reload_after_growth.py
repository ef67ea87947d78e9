"""Probe: how long the first search takes when none of a heavy person's items are in this process
and no snapshot may be used: the load of all of them from Chroma (`Copies._load` by ids, in
pages). Not part of the product or of the bench's figures: a diagnosis tool (docs/decisions/0038-*.md).

`--build FOLDER` stores one person's `--size` items through the engine on PYTHONPATH (random unit
vectors: no model; embedded Chroma in its child process). `--time FOLDER` opens that folder with
snapshots off and times the open and the first search; run it with each engine's checkout on
PYTHONPATH, taking turns, on the same folder.

    PYTHONPATH=$PWD python bench/probe/reload_after_growth.py --build /tmp/reload/store
    PYTHONPATH=/path/to/other python bench/probe/reload_after_growth.py --time /tmp/reload/store
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import numpy as np

from memory.semantic import open_user_memory, scope_for

HEAVY = "299999999999999999"
WORDS = "salsa lessons Priya Berlin Lyon dinner cat bike piano garden tea coffee hike rain book".split()


class RandomEmbedder:
    name = "probe-random-384"
    dimension = 384

    def __init__(self) -> None:
        self.rng = np.random.default_rng(1)

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self.rng.standard_normal((len(texts), 384)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


async def build(folder: str, size: int) -> None:
    rng = np.random.default_rng(2)
    items = [(HEAVY, f"item {n}: " + " ".join(rng.choice(WORDS, 12)) + f" word{n % 5000}", {"kind": "exchange"},
              scope_for("810000000000000000")) for n in range(size)]
    async with open_user_memory(folder, embedder=RandomEmbedder(), chroma_process=True, snapshots=False) as mem:
        for start in range(0, size, 2048):
            await mem.add_many(items[start:start + 2048])


async def timed(folder: str) -> None:
    started = time.perf_counter()
    mem = open_user_memory(folder, embedder=RandomEmbedder(), chroma_process=True, snapshots=False)
    opened = time.perf_counter()
    await mem.search(HEAVY, "salsa")
    searched = time.perf_counter()
    route = mem.last_load.route if mem.last_load is not None else "-"
    await mem.close()
    print(f"{os.environ.get('PYTHONPATH', '')}: open {opened - started:.1f} s, first search {searched - opened:.1f} s "
          f"(load route {route}); load average {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", metavar="FOLDER")
    parser.add_argument("--time", metavar="FOLDER")
    parser.add_argument("--size", type=int, default=50_000)
    args = parser.parse_args()
    if args.build:
        asyncio.run(build(args.build, args.size))
    if args.time:
        asyncio.run(timed(args.time))


if __name__ == "__main__":
    main()
