"""Scale benchmark of the per-user semantic memory (embedded Chroma, offline MiniLM).

Builds a varied synthetic corpus (default 100,000 items over 1,000 users), then prints:
  - bulk add throughput with add_many batching (items/s),
  - single add latency p50/p95 (what the bot does once per turn),
  - search latency p50/p95 over a few hundred queries of random users, right after a write
    of that user (as in the bot: mostly a user whose items are not cached yet, so the search
    reads them from Chroma) and repeated (the user's items cached); every query is a new
    text, so every search embeds its query as a turn does,
  - the process's memory (RSS) along the way.
Figures only: nothing here asserts on timings. Targets: search p95 <= 50 ms, single add
p95 <= 60 ms, bulk add >= 100 items/s.

    python bench/memory_bench.py                      # full size (several minutes)
    python bench/memory_bench.py --items 5000 --users 100   # a quick run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory.embeddings import LocalEmbedder  # noqa: E402
from memory.semantic import open_user_memory, scope_for  # noqa: E402

NAMES = ["Lena", "Omar", "Priya", "Jonas", "Mei", "Tomás", "Aiko", "Farah", "Nils", "Zoe", "Ravi", "Ines"]
PLACES = ["Lisbon", "Kyoto", "Oslo", "Nairobi", "Montreal", "Tallinn", "Cusco", "Hanoi", "Porto", "Denver",
          "Bergen", "Tbilisi", "Seville", "Perth", "Krakow", "Osaka"]
FOODS = ["ramen", "falafel", "paella", "pierogi", "pho", "tacos", "sourdough", "kimchi", "risotto", "curry",
         "dumplings", "shakshuka", "goulash", "sushi", "empanadas"]
HOBBIES = ["bouldering", "the cello", "chess", "woodworking", "birdwatching", "running", "knitting",
           "photography", "sailing", "pottery", "gardening", "salsa dancing", "astronomy", "fencing"]
PETS = ["a cat", "a beagle", "two rabbits", "a parrot", "a corgi", "goldfish", "a tortoise", "a husky"]
JOBS = ["nurse", "backend developer", "teacher", "electrician", "translator", "architect", "baker",
        "data analyst", "pilot", "librarian", "game designer", "pharmacist"]
TOOLS = ["Rust", "Python", "Kubernetes", "Postgres", "Blender", "Figma", "Excel", "Godot", "Linux", "Vim"]
TEMPLATES = [
    "My sister {name} just moved to {place} for work.",
    "I have been learning {hobby} for {n} months now and I love it.",
    "For dinner tonight I am making {food} with my roommate.",
    "We adopted {pet} last {month}; it keeps us busy.",
    "I work as a {job} and my shift starts at {hour} am.",
    "Can you remind me that my dentist appointment is on the {n}th?",
    "I'm planning a trip to {place} in {month} with {name}.",
    "At work we are migrating everything to {tool}, which is painful.",
    "I can't eat {food} anymore since my doctor said so.",
    "My favourite weekend plan is {hobby} followed by {food}.",
    "{name} recommended a book about {hobby}; I am on chapter {n}.",
    "I ran {n} kilometres this morning along the river in {place}.",
    "Our team lead {name} wants the {tool} report by Friday.",
    "I grew up in {place} but now I live near {place2}.",
    "Question: how long should I boil {food}? Answer: about {n} minutes, then rest it.",
]
MONTHS = ["January", "March", "April", "June", "August", "September", "October", "December"]


def render(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        name=rng.choice(NAMES), place=rng.choice(PLACES), place2=rng.choice(PLACES), food=rng.choice(FOODS),
        hobby=rng.choice(HOBBIES), pet=rng.choice(PETS), job=rng.choice(JOBS), tool=rng.choice(TOOLS),
        month=rng.choice(MONTHS), n=rng.randint(2, 40), hour=rng.randint(5, 11))


def make_text(rng: random.Random) -> str:
    """One or two rendered sentences: about 12 x 15 x ~10^4 distinct texts."""
    return render(rng) + (" Also: " + render(rng) if rng.random() < 0.3 else "")


QUERIES = [
    "where does my sister live?", "what hobby am I learning?", "what did I cook for dinner?",
    "what pet do we have?", "what is my job?", "when is my dentist appointment?", "where am I travelling?",
    "what are we migrating to at work?", "what food can't I eat?", "what do I do on weekends?",
    "which book was recommended to me?", "how far did I run?", "what report is due Friday?",
    "where did I grow up?", "how long to boil {food}?", "anything about {place}?", "{hobby}",
    "what did I say last week about {food}?",
]


def make_query(rng: random.Random) -> str:
    """A question with a random tag word, so that no two are alike: a turn searches with a
    new message, whose vector the memory's memo of recent query vectors does not hold."""
    tag = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(6))
    question = rng.choice(QUERIES).format(food=rng.choice(FOODS), place=rng.choice(PLACES), hobby=rng.choice(HOBBIES))
    return f"{question} (re {tag})"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def rss_mb() -> float:
    return psutil.Process(os.getpid()).memory_info().rss / 2**20


def line(label: str, value: str) -> None:
    print(f"{label:<44} {value}", flush=True)


def latency(label: str, samples_s: list[float]) -> None:
    ms = [s * 1000 for s in samples_s]
    line(label, f"p50 {statistics.median(ms):7.1f} ms   p95 {pct(ms, 95):7.1f} ms   "
                f"max {max(ms):7.1f} ms   (n={len(ms)})")


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    users = [str(100_000_000_000_000_000 + n) for n in range(args.users)]
    guilds = [scope_for(str(800_000_000_000_000_000 + n)) for n in range(max(1, args.users // 50))]
    home = {u: rng.choice(guilds) for u in users}

    line("items / users", f"{args.items:,} / {args.users:,}")
    line("RSS at start", f"{rss_mb():.0f} MB")
    started = time.perf_counter()
    embedder = LocalEmbedder()
    embedder.load()
    line("model load (import torch + weights)", f"{time.perf_counter() - started:.1f} s")
    line("RSS after model load", f"{rss_mb():.0f} MB")

    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        started = time.perf_counter()
        mem = open_user_memory(os.path.join(tmp, "chroma"), embedder=embedder, search_mode=args.mode,
                               cache_size=args.cache)
        line("open (embedded Chroma)", f"{(time.perf_counter() - started) * 1000:.0f} ms")

        corpus = [(users[n % args.users], make_text(rng), {"channel_id": str(n % 97), "kind": "exchange"},
                   home[users[n % args.users]] if n % 5 else "dm") for n in range(args.items)]
        rng.shuffle(corpus)
        started = time.perf_counter()
        done = 0
        for start in range(0, len(corpus), args.chunk):
            chunk = corpus[start:start + args.chunk]
            await mem.add_many(chunk)
            done += len(chunk)
            if args.progress and done % (args.chunk * 10) == 0:
                elapsed = time.perf_counter() - started
                print(f"  ... {done:,} items, {done / elapsed:.0f} items/s, RSS {rss_mb():.0f} MB",
                      file=sys.stderr, flush=True)
        elapsed = time.perf_counter() - started
        line("bulk add (add_many)", f"{args.items / elapsed:8.0f} items/s   ({elapsed:.1f} s in all)")
        line("RSS after bulk load", f"{rss_mb():.0f} MB")

        adds = []
        for _ in range(args.single_adds):
            user = rng.choice(users)
            t0 = time.perf_counter()
            await mem.add(user, make_text(rng), {"channel_id": "1", "trace_id": "bench"}, home[user])
            adds.append(time.perf_counter() - t0)
        latency("single add (one per turn)", adds)

        cold, warm = [], []
        for _ in range(args.queries):
            user = rng.choice(users)
            scope = home[user] if rng.random() < 0.8 else "dm"
            query = make_query(rng)
            await mem.add(user, make_text(rng), None, scope)  # the turn before wrote its exchange
            t0 = time.perf_counter()
            await mem.search(user, query, k=5, scope=scope)
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await mem.search(user, make_query(rng), k=5, scope=scope)
            warm.append(time.perf_counter() - t0)
        latency("search k=5, right after a write (cold)", cold)
        latency("search k=5, repeated (user's items cached)", warm)
        line("search mode", args.mode)
        line("RSS at end", f"{rss_mb():.0f} MB")
        await mem.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--single-adds", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=2_048, help="items per add_many call")
    parser.add_argument("--cache", type=int, default=256, help="users whose items and vectors are kept in memory")
    parser.add_argument("--mode", choices=("hybrid", "dense", "keyword"), default="hybrid")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--progress", action="store_true", help="print bulk-load progress to stderr")
    args = parser.parse_args()
    if args.items < args.users or args.users < 1:
        parser.error("--items must be at least --users, and --users at least 1")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
