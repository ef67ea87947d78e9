"""What one query's embedding and a bulk batch cost, by runtime (torch, ONNX Runtime) and threads.

Every variant is loaded in this one process and the variants take turns call by call, so
that other work on the machine weighs on all of them alike. The queries are the hard
evaluation's questions (`bench/data/hard_histories.py`); the batch is 256 of its turns, the
size of one `add_many` batch the memory hands the model.

Run: `python bench/embedding_bench.py [--rounds 200] [--batches 3]` (prints the load average
before and after, p50 and p95 of single queries, and the median batch time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import hard_histories  # noqa: E402
import numpy as np  # noqa: E402

from memory.semantic.embeddings import LocalEmbedder  # noqa: E402
from figures import percentile  # noqa: E402

VARIANTS = [("torch", 1), ("torch", 2), ("onnx", 1), ("onnx", 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="single queries per variant")
    parser.add_argument("--batches", type=int, default=3, help="256-text batches per variant")
    args = parser.parse_args()
    history = hard_histories.build()[0]
    queries = [q.text for q in history.questions]
    batch = [f"{turn.user} {turn.bot}" for turn in history.turns[:256]]
    print(f"# load average before {os.getloadavg()[0]:.2f}", flush=True)
    embedders = {}
    for runtime, threads in VARIANTS:
        embedder = LocalEmbedder(runtime=runtime, threads=threads)
        embedder.load()
        embedders[(runtime, threads)] = embedder
    # torch's thread count is process-wide: each torch variant sets its own before its turn
    import torch

    reference = embedders[("torch", 1)].embed(queries[:50])
    for key, embedder in embedders.items():
        drift = float(np.abs(embedder.embed(queries[:50]) - reference).max())
        print(f"# {key[0]}/{key[1]} thread(s): largest difference from torch/1 over 50 queries {drift:.1e}")
    single: dict[tuple[str, int], list[float]] = {key: [] for key in embedders}
    for n in range(args.rounds):
        query = queries[n % len(queries)]
        for key, embedder in embedders.items():
            torch.set_num_threads(key[1])
            started = time.perf_counter()
            embedder.embed([query])
            single[key].append((time.perf_counter() - started) * 1000.0)
    bulk: dict[tuple[str, int], list[float]] = {key: [] for key in embedders}
    for _ in range(args.batches):
        for key, embedder in embedders.items():
            torch.set_num_threads(key[1])
            started = time.perf_counter()
            embedder.embed(batch)
            bulk[key].append(time.perf_counter() - started)
    base = statistics.median(single[("torch", 2)])
    base_bulk = statistics.median(bulk[("torch", 2)])
    print(f"{'runtime/threads':<16} {'query p50':>10} {'query p95':>10} {'p50 vs torch/2':>15} "
          f"{'256 batch':>10} {'vs torch/2':>11}")
    for key in embedders:
        p50 = statistics.median(single[key])
        batch_s = statistics.median(bulk[key])
        print(f"{key[0] + '/' + str(key[1]):<16} {p50:8.1f}ms {percentile(single[key], 95):8.1f}ms {p50 / base:14.2f}x "
              f"{batch_s:9.2f}s {batch_s / base_bulk:10.2f}x")
    print(f"# {args.rounds} single queries and {args.batches} batches per variant, taking turns; "
          f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
