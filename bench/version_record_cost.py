"""What the version record (decision 0035) costs against what it saves, on an embedded Chroma.

One person with N items (random unit vectors, no model) beside 1,000 light people: the time of
one `get` of the person's version record by id, one upsert of it, and one read of all the
person's ids (what a search pays once after another process wrote that person), each timed
`--rounds` times; p50 / p95 in ms per size. Figures only.

    PYTHONPATH=. python bench/version_record_cost.py --sizes 10 10000 50000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from memory.semantic.chroma_backend import ChromaStore
from memory.semantic.versions import VERSION_SUFFIX, VersionRecords
from figures import median_p95_ms

DIMENSION = 384


def _fill(store: ChromaStore, user: str, count: int, start: int, rng: np.random.Generator) -> None:
    batch = min(store.max_batch_size(), 2000)
    for first in range(0, count, batch):
        n = min(batch, count - first)
        vectors = rng.standard_normal((n, DIMENSION)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ids = [f"{user}-{start + first + i}" for i in range(n)]
        store.add(ids, vectors, [""] * n, [{"user_id": user, "scope": ""}] * n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 10_000, 50_000])
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    print(f"# version_record_cost: sizes {args.sizes}, {args.rounds} rounds each; load {os.getloadavg()[0]:.2f}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    with tempfile.TemporaryDirectory(prefix="version-cost-") as folder:
        store = ChromaStore.open(path=folder, host=None, port=None, collection="memories",
                                 embedder_name="random", dimension=DIMENSION)
        records = VersionRecords(store.log(VERSION_SUFFIX))
        for light in range(1000):
            _fill(store, f"light{light}", 10, 0, rng)
        print("| items of the person | version get p50 / p95 ms | version upsert p50 / p95 ms | "
              "all ids read p50 / p95 ms |")
        print("| --- | --- | --- | --- |")
        held = 0
        for size in sorted(args.sizes):
            _fill(store, "heavy", size - held, held, rng)
            held = size
            records.bump(["heavy"], dirty=False)
            gets, upserts, reads = [], [], []
            for _ in range(args.rounds):
                t = time.perf_counter()
                records.read(["heavy"])
                gets.append(time.perf_counter() - t)
                t = time.perf_counter()
                records.bump(["heavy"], dirty=False)
                upserts.append(time.perf_counter() - t)
            for _ in range(max(5, args.rounds // 10)):
                t = time.perf_counter()
                found = store.ids(where={"user_id": "heavy"})
                reads.append(time.perf_counter() - t)
            assert len(found) == size
            print(f"| {size:,} | {median_p95_ms(gets, 7, 1)} | {median_p95_ms(upserts, 7, 1)} | {median_p95_ms(reads, 7, 1)} |", flush=True)
        store.close()
    print(f"# load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
