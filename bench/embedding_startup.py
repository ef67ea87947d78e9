"""Start-to-first-embedding of the local model, with an empty graph cache (cold) and a filled one (warm).

Each start is a fresh Python process that imports the memory's embedder, loads the model and
embeds one query, timed from before the process is spawned to the vector: what a restart of the
bot waits before its memory can answer. Cold starts get an empty cache folder each, so they
export the ONNX graph as every start did before the cache; warm starts share one folder filled
by a start before the first round. The two kinds take turns, so that other work on the machine
weighs on both alike.

Run: `python bench/embedding_startup.py [--rounds 3]` (prints each start, then the medians and
their ratio).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

START = """
import sys
from memory.semantic.embeddings import LocalEmbedder
embedder = LocalEmbedder(cache_dir=sys.argv[1])
embedder.embed(["what did I say about the trip to Lisbon?"])
print(embedder.runtime)
"""


def start(cache: Path) -> tuple[float, str]:
    """Seconds from spawning a process to its first query vector, and the runtime it used."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", START, str(cache)], env=env, capture_output=True, text=True,
                          check=True)
    return time.perf_counter() - started, done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="cold and warm starts each")
    args = parser.parse_args()
    print(f"# load average before {os.getloadavg()[0]:.2f}", flush=True)
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="embedding-startup-") as folder:
        warm_cache = Path(folder) / "warm"
        print(f"# filling the warm cache: {start(warm_cache)[0]:.1f} s", flush=True)
        for n in range(args.rounds):
            for kind in ("cold", "warm"):
                cache = Path(folder) / f"cold-{n}" if kind == "cold" else warm_cache
                seconds, runtime = start(cache)
                times[kind].append(seconds)
                print(f"round {n + 1} {kind}: {seconds:5.1f} s ({runtime})", flush=True)
    cold, warm = statistics.median(times["cold"]), statistics.median(times["warm"])
    print(f"{'start':<6} {'median':>8} {'min':>7} {'max':>7}")
    for kind, values in times.items():
        print(f"{kind:<6} {statistics.median(values):7.1f}s {min(values):6.1f}s {max(values):6.1f}s")
    print(f"# warm / cold: {warm / cold:.2f} ({cold / warm:.1f}x faster); target: warm <= 5 s; "
          f"{args.rounds} rounds, taking turns; load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
