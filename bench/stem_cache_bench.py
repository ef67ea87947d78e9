"""What PyStemmer's word cache buys the keyword index: time per word and memory held, by cache size.

`memory.semantic.ranking` stems every word of every text it tokenizes with PyStemmer's Snowball English
stemmer, one per thread. PyStemmer keeps a cache of stemmed words per stemmer (10,000 by
default); this bench tokenizes two word streams with each cache size, taking turns round by
round so that other work on the machine weighs on all alike:

- "chat": every word of the hard evaluation's histories (`bench/data/hard_histories.py`), in order;
- "new words": numbered words that never repeat ("q1", "q2", ...), as the load bench's questions.

Run: `python bench/stem_cache_bench.py [--rounds 7] [--sizes 0 1000 10000]` (prints the load
average before and after, the median time per word, and the bytes each stemmer holds after
the stream, by tracemalloc).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "data"))

import hard_histories  # noqa: E402
import Stemmer  # noqa: E402


def _streams() -> dict[str, list[str]]:
    words = [w for history in hard_histories.build() for turn in history.turns
             for w in re.findall(r"[a-z0-9]+", f"{turn.user} {turn.bot}".casefold())]
    return {"chat": words, "new words": [f"q{n}" for n in range(len(words))]}


def _time_per_word_ns(size: int, words: list[str]) -> float:
    stemmer = Stemmer.Stemmer("english", size)
    started = time.perf_counter()
    for word in words:
        stemmer.stemWord(word)
    return (time.perf_counter() - started) / len(words) * 1e9


def _held_bytes(size: int, words: list[str]) -> int:
    fresh = [w.encode().decode() for w in words]  # keys the cache would hold on its own, as text read from the wire
    tracemalloc.start()
    stemmer = Stemmer.Stemmer("english", size)
    for word in fresh:
        stemmer.stemWord(word)
    del fresh
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del stemmer
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1000, 10000])
    args = parser.parse_args()
    streams = _streams()
    print(f"# load average before {os.getloadavg()[0]:.2f}; words per stream: "
          + ", ".join(f"{name} {len(words):,} ({len(set(words)):,} distinct)" for name, words in streams.items()))
    times: dict[tuple[str, int], list[float]] = {(name, size): [] for name in streams for size in args.sizes}
    for _ in range(args.rounds):
        for name, words in streams.items():
            for size in args.sizes:
                times[name, size].append(_time_per_word_ns(size, words))
    print("| stream | cache size (words) | median ns per word | x against the first size | bytes held after the stream |")
    print("| --- | --- | --- | --- | --- |")
    for name, words in streams.items():
        base = statistics.median(times[name, args.sizes[0]])
        for size in args.sizes:
            median = statistics.median(times[name, size])
            print(f"| {name} | {size:,} | {median:.0f} | {median / base:.2f}x | {_held_bytes(size, words):,} |")
    print(f"# load average after {os.getloadavg()[0]:.2f}; rounds {args.rounds}, median over rounds")


if __name__ == "__main__":
    main()
