"""What the local model's batches cost by how they are cut: by texts alone or also by token slots.

`OnnxEncoder.encode` takes texts longest first and cuts a batch at `batch_size` texts or at
`batch_tokens` token slots (texts x the batch's longest), whichever comes first. This bench
embeds four mixes of texts with several `batch_tokens` values, taking turns call by call in
one process, and prints each one's median CPU seconds per call and its ratio to cutting by
texts alone (`batch_tokens` unbounded, the encoder before), and checks the vectors agree.

Run: `python bench/embedding_batches.py [--runs 5]`.
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

from memory.semantic.embeddings import default_cache_dir, local_model_path  # noqa: E402
from memory.semantic.onnx_encoder import BATCH_TOKENS, OnnxEncoder  # noqa: E402

UNBOUNDED = 10**9
BUDGETS = [UNBOUNDED, 256, BATCH_TOKENS, 1024, 2048]


def mixes() -> dict[str, list[str]]:
    history = hard_histories.build()[0]
    exchanges = [f"{turn.user} {turn.bot}" for turn in history.turns[:256]]
    long_text = "a long message about the trip to Lisbon and what we saw there " * 40
    questions = [q.text for q in history.questions[:256]]
    return {
        "256 exchanges (one add_many batch)": exchanges,
        "63 exchanges + 1 long text": exchanges[:63] + [long_text],
        f"{len(questions)} short questions": questions,
        "64 texts at the 256-token limit": [f"{n} {long_text}" for n in range(64)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="calls per mix and budget")
    args = parser.parse_args()
    print(f"# load average before {os.getloadavg()[0]:.2f}", flush=True)
    encoder = OnnxEncoder(local_model_path(), threads=1, cache_dir=default_cache_dir())  # as the bot runs it
    for name, texts in mixes().items():
        cpu: dict[int, list[float]] = {budget: [] for budget in BUDGETS}
        vectors: dict[int, np.ndarray] = {}
        for _ in range(args.runs):
            for budget in BUDGETS:
                start = time.process_time()
                vectors[budget] = encoder.encode(texts, batch_size=64, batch_tokens=budget)
                cpu[budget].append(time.process_time() - start)
        base = statistics.median(cpu[UNBOUNDED])
        print(f"\n{name}: {len(texts)} texts, median of {args.runs} calls, CPU seconds")
        for budget in BUDGETS:
            label = "by texts alone" if budget == UNBOUNDED else f"batch_tokens {budget}"
            seconds = statistics.median(cpu[budget])
            drift = float(np.abs(vectors[budget] - vectors[UNBOUNDED]).max())
            print(f"  {label:>20}: {seconds:7.3f} s  {seconds / base:5.2f}x  largest difference {drift:.1e}")
    print(f"\n# load average after {os.getloadavg()[0]:.2f}; shipped batch_tokens {BATCH_TOKENS}")


if __name__ == "__main__":
    main()
