"""What bot.turn.privacy's reaches cost a search: one scope (a public reply), two scopes merged (a
private answer in a server), everything (a private answer with MEMORY_SCOPE=global), and
everything public (a public reply with global: over-fetched, private items left out), for a
person whose items are mostly public and for one whose items are mostly private.

    PYTHONPATH=$PWD .venv/bin/python bench/privacy_reach_bench.py [--items 5000] [--runs 5]

Prints the median search time of each reach over the runs (each run: every query once) and
its ratio to the one-scope search, side by side in one run. The embedder is a deterministic
hash of words (no model), so the figures are the memory's and the merge's, not embedding's.
Part of bench/.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bot.turn.memory_reach import search_reach
from bot.turn.privacy import MemoryPolicy, Reach
from memory.semantic import open_user_memory

GUILD = "100000000000000001"
WORDS = ("tea coffee cat dog piano recital salary interview garden bike train holiday paris berlin "
         "lyon book film concert doctor exam birthday sister brother recipe quiche leek").split()
DIM = 384


class WordHashEmbedder:
    """A vector per word from its hash, summed and normalized: similar texts, similar vectors."""

    name = "word-hash"
    dimension = DIM

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), DIM), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                rows[i] += np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
            norm = np.linalg.norm(rows[i])
            rows[i] = rows[i] / norm if norm else rows[i]
        return rows


def items_for(user: str, count: int, private_share: float, rng: random.Random) -> list[tuple]:
    policy = MemoryPolicy()
    out = []
    for i in range(count):
        roll = rng.random()
        scope = (policy.store_scope(None, False) if roll < private_share / 2 else
                 policy.store_scope(GUILD, True) if roll < private_share else policy.store_scope(GUILD, False))
        text = f"note {i} about " + " ".join(rng.sample(WORDS, 3))
        out.append((user, text, {"kind": "exchange", "created_at": float(i)}, scope))
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=5000, help="items of each person")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    rng = random.Random(7)
    policy, wide = MemoryPolicy(), MemoryPolicy(operator_global=True)
    reaches: dict[str, Reach] = {
        "one scope (public reply)": policy.recall(GUILD, False, None),
        "two scopes merged (private answer)": policy.recall(GUILD, True, None),
        "everything (private answer, global)": wide.recall(GUILD, True, None),
        "everything public (public reply, global)": wide.recall(GUILD, False, None),
    }
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory(prefix="privacy-reach-") as tmp:
        memory = open_user_memory(Path(tmp) / "chroma", embedder=WordHashEmbedder())
        try:
            people = {"mostly public (20% private)": ("p20", 0.2), "mostly private (90% private)": ("p90", 0.9)}
            for user, share in people.values():
                items = items_for(user, args.items, share, rng)
                for start in range(0, len(items), 1000):
                    await memory.add_many(items[start:start + 1000])
            print(f"{args.items} items per person, {args.queries} queries per run, {args.runs} runs, k=5; "
                  "median ms per search (ratio to one scope)")
            for label, (user, _) in people.items():
                for query in queries[:3]:  # warm: the person's items loaded
                    await search_reach(memory, user, query, 5, reaches["one scope (public reply)"])
                per_reach: dict[str, list[float]] = {name: [] for name in reaches}
                for _ in range(args.runs):
                    for name, reach in reaches.items():  # interleaved: the machine's load hits all alike
                        started = time.perf_counter()
                        for query in queries:
                            await search_reach(memory, user, query, 5, reach)
                        per_reach[name].append((time.perf_counter() - started) * 1000 / len(queries))
                base = statistics.median(per_reach["one scope (public reply)"])
                print(f"\n{label}")
                for name, times in per_reach.items():
                    ms = statistics.median(times)
                    print(f"  {name:44s} {ms:7.2f} ms  ({ms / base:.2f}x)")
        finally:
            await memory.close()


if __name__ == "__main__":
    asyncio.run(main())
