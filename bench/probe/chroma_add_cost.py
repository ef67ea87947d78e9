"""Probe: what one embedded-Chroma `add` of a batch costs in CPU as the collection grows, under
collection settings given on the command line (one variant per run). Not part of the product.

Adds `--size` items (random unit vectors of 384 dimensions, short texts, the metadata the memory
writes) in batches of `--batch` to a new collection in a temporary folder, in this process, and
prints per block of items the CPU time (this process, all threads) and wall time per item.

    PYTHONPATH=$PWD python bench/probe/chroma_add_cost.py --size 40000
    PYTHONPATH=$PWD python bench/probe/chroma_add_cost.py --size 40000 --meta hnsw:sync_threshold=100000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import chromadb
import numpy as np
from chromadb.config import Settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--block", type=int, default=5_120)
    parser.add_argument("--meta", nargs="*", default=[], help="extra collection metadata, key=int")
    args = parser.parse_args()
    metadata: dict[str, str | int] = {"hnsw:space": "cosine"}
    for pair in args.meta:
        key, value = pair.split("=")
        metadata[key] = int(value)
    rng = np.random.default_rng(4)
    words = "salsa lessons Priya Berlin Lyon dinner cat bike piano garden tea coffee hike rain book".split()
    with tempfile.TemporaryDirectory() as tmp:
        client = chromadb.PersistentClient(path=os.path.join(tmp, "c"), settings=Settings(anonymized_telemetry=False))
        col = client.create_collection("probe", metadata=metadata, embedding_function=None)
        print(f"metadata {metadata}, batch {args.batch}")
        cpu0, wall0, n0 = time.process_time(), time.perf_counter(), 0
        for start in range(0, args.size, args.batch):
            n = min(args.batch, args.size - start)
            v = rng.standard_normal((n, 384)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            col.add(ids=[f"i{start + i}" for i in range(n)], embeddings=v.tolist(),
                    documents=[" ".join(rng.choice(words, 14)) + f" {start + i}" for i in range(n)],
                    metadatas=[{"user_id": "u", "scope": "dm", "created_at": 1.75e9 + start + i, "kind": "exchange"}
                               for i in range(n)])
            if (start + n) % args.block == 0 or start + n == args.size:
                cpu, wall, done = time.process_time(), time.perf_counter(), start + n
                print(f"  items {n0:6,}-{done:6,}: CPU {1000 * (cpu - cpu0) / (done - n0):5.2f} ms/item, wall "
                      f"{1000 * (wall - wall0) / (done - n0):5.2f} ms/item", flush=True)
                cpu0, wall0, n0 = cpu, wall, done


if __name__ == "__main__":
    main()
