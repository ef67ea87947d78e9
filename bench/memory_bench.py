"""Scale benchmark of the per-user semantic memory (embedded Chroma, offline MiniLM).

Two parts (`--part scale`, `--part heavy`, or `--part all`, the default), `--part keyword`,
which times the incremental BM25 index against SQLite FTS5 over one user's texts, and
`--part rank`, which times the ranking step alone (`memory.semantic.search.rank` over one user's
columns held in this process: the bench's texts, random unit vectors, no Chroma, no model) at
each of `--heavy-sizes`, beside its two scans (the dense product and the BM25 scores) alone;
`--profile` adds cProfile's busiest functions at the largest size.

`scale` builds a varied synthetic corpus (default 100,000 items over 1,000 users), then prints:
  - bulk add throughput with add_many batching (items/s),
  - single add latency p50/p95 (what the bot does once per turn),
  - search latency p50/p95 over a few hundred queries of random users, right after a write
    of that user (as in the bot: mostly a user whose items are not cached yet, so the search
    reads them from Chroma) and repeated (the user's items cached); every query is a new
    text, so every search embeds its query as a turn does,
  - the process's memory (RSS) along the way.
Targets: search p95 <= 50 ms, single add p95 <= 60 ms, bulk add >= 100 items/s.

`heavy` puts one heavy user beside `--light-users` users of `--light-items` items each and
grows the heavy user through `--heavy-sizes` items (default 1,000 / 10,000 / 50,000). At each
size it prints: search p50/p95 right after an add of that user (every query a new text, so
each pays its embedding) with p50/p95 of each part of those searches (`UserMemory.last_search`:
the query's embedding, its queueing and hand-offs, the dense product, candidates, fusion, reading
the hits; then what ran beside the embedding: the items, the mask, BM25, the window, the BM25
rows' id order), the add's latency, the cold first search of that user (a new
memory object on the same folder: nothing of this process's caches), the event loop's
worst stall (a ticker task measuring how late it wakes) during the searches and the cold
loads and during the bulk load, and RSS. Targets: search p95 <= 50 ms after an add, cold
first search <= 1 s, worst stall <= 20 ms, RSS printed.
The cold search of a user with at least 500 items reads that user's snapshot (`memory.semantic.snapshot`,
written by the first load and on close), as it is when the user's write token is current
(`memory.semantic.write_tokens`), else checked against the ids Chroma has; the breakdown of the cold
loads (token read, snapshot restore, ids read, fetch of missing items) is printed too. First,
for `--floor-s` seconds, the same ticker runs with no memory work: the stalls the machine makes
on its own (a virtual machine's idle CPUs waking, other processes), the floor the memory's
figures stand on. `--store thread` runs embedded Chroma
in this process's threads instead of a worker process (`memory.semantic.chroma_process`).
`--vector-cache FILE` keeps the corpus's vectors between runs (the bulk load is not what this
part measures: query vectors are never taken from it). The bulk loads' lines also give their
items/s and how many ticks were over 20 ms late; `--snapshot-after N` is open_user_memory's
`snapshot_after` (new rows of a user before its snapshot is rewritten once the user's writes
settle; while they go on, a quarter of the user's rows must be new as well: `memory.semantic`).

The process's glibc malloc thresholds are pinned as `python -m bot run` pins them
(`bot.process.allocator`); `--malloc default` leaves glibc's dynamic thresholds instead. The GIL's
switch interval is the bot's too (`bot.process.gil`, 1 ms); `--switch-interval-ms 5` is CPython's own.
Each stall line counts the ticks over 20 ms late and, in brackets, over 10 ms.

Figures only: nothing here asserts on timings.

    python bench/memory_bench.py --part scale                # full size (several minutes)
    python bench/memory_bench.py --part scale --items 5000 --users 100   # a quick run
    python bench/memory_bench.py --part heavy --vector-cache /tmp/memory-bench-vectors.npz
    python bench/memory_bench.py --part rank --profile
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.process.allocator import pin_malloc_thresholds  # noqa: E402
from bot.process.gil import SWITCH_INTERVAL_S  # noqa: E402
from memory.semantic import ranking, search  # noqa: E402
from memory.semantic.chroma_backend import StoredItem  # noqa: E402
from memory.semantic.embeddings import LocalEmbedder  # noqa: E402
from memory.semantic.keyword_index import KeywordIndex  # noqa: E402
from memory.semantic.ranking import tokenize  # noqa: E402
from memory.semantic.search_timing import SearchTiming  # noqa: E402
from memory.semantic import SNAPSHOT_AFTER, open_user_memory, scope_for  # noqa: E402
from memory.semantic.user_items import UserItems  # noqa: E402

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


async def run_scale(args: argparse.Namespace, embedder: LocalEmbedder) -> None:
    rng = random.Random(args.seed)
    users = [str(100_000_000_000_000_000 + n) for n in range(args.users)]
    guilds = [scope_for(str(800_000_000_000_000_000 + n)) for n in range(max(1, args.users // 50))]
    home = {u: rng.choice(guilds) for u in users}

    print("== scale: many users ==", flush=True)
    line("items / users", f"{args.items:,} / {args.users:,}")
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        started = time.perf_counter()
        mem = open_user_memory(os.path.join(tmp, "chroma"), embedder=embedder, search_mode=args.mode,
                               chroma_process=args.store == "process")
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


class Ticker:
    """How late a task that asks to wake every `interval_s` wakes: the event loop's stalls (the
    worst, and how many were over `over_s` and over half of it)."""

    def __init__(self, interval_s: float = 0.002, over_s: float = 0.020) -> None:
        self.interval_s = interval_s
        self.over_s = over_s
        self.worst_s = 0.0
        self.over = 0
        self.over_half = 0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            due = time.perf_counter() + self.interval_s
            await asyncio.sleep(self.interval_s)
            self.observe(due, time.perf_counter())

    def observe(self, due: float, woke: float) -> None:
        """One wake-up at `woke` of a sleep due at `due` (perf_counter seconds)."""
        late = woke - due
        self.worst_s = max(self.worst_s, late)
        self.over += late > self.over_s
        self.over_half += late > self.over_s / 2

    def counts(self) -> str:
        """The phase's stalls over the threshold and over half of it, as the lines print them."""
        return f"{self.over} over {self.over_s * 1000:.0f} ms ({self.over_half} over {self.over_s * 500:.0f} ms)"

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._tick())

    @contextmanager
    def phase(self) -> Iterator[list[float]]:
        """Measure the worst stall of a block: the yielded list gets it (seconds) at the end."""
        self.worst_s = 0.0
        self.over = self.over_half = 0
        out: list[float] = []
        yield out
        out.append(self.worst_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def search_parts(size: int, timings: list[SearchTiming]) -> None:
    """p50 / p95 of each part of the searches (`UserMemory.last_search`): first the parts one
    after another (they add up to about the whole), then those run beside the embedding."""
    if not timings:
        return
    rows: list[tuple[str, list[float]]] = []
    for group in ("parts", "beside"):
        names = list(dict.fromkeys(name for timing in timings for name in getattr(timing, group)))
        prefix = "" if group == "parts" else "beside the embedding: "
        rows += [(prefix + name, [getattr(timing, group).get(name, 0.0) for timing in timings]) for name in names]
        if group == "parts":
            rows += [("sum of these parts", [sum(timing.parts.values()) for timing in timings]),
                     ("whole search (inside search())", [timing.total_ms for timing in timings])]
    for name, ms in rows:
        line(f"    {name} ({size:,})", f"p50 {statistics.median(ms):7.2f} ms   p95 {pct(ms, 95):7.2f} ms")


class CachedVectors:
    """The real embedder, with the corpus's vectors kept in a file between runs: only inside
    `bulk()` (the bulk loads); every other text (queries, single adds) runs the model."""

    def __init__(self, inner: LocalEmbedder, path: str | None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.path = path
        self.active = False
        self.vectors: dict[str, np.ndarray] = {}
        if path and os.path.exists(path):
            with np.load(path) as data:
                self.vectors = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))

    @contextmanager
    def bulk(self) -> Iterator[None]:
        self.active = True
        try:
            yield
        finally:
            self.active = False

    def embed(self, texts: list[str]) -> np.ndarray:
        if not self.active or not texts:
            return self.inner.embed(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self.vectors[text] = vector
        return np.stack([self.vectors[t] for t in texts])

    def save(self) -> None:
        if self.path:
            texts = list(self.vectors)
            np.savez(self.path, texts=np.array(texts), vectors=np.stack([self.vectors[t] for t in texts]))


async def run_heavy(args: argparse.Namespace, embedder: LocalEmbedder) -> None:
    rng = random.Random(args.seed + 1)
    print("== heavy: one user with many items beside many light users ==", flush=True)
    sizes = sorted(args.heavy_sizes)
    light = [str(300_000_000_000_000_000 + n) for n in range(args.light_users)]
    heavy = "299999999999999999"
    guild = scope_for("810000000000000000")
    line("light users x items / heavy user up to", f"{args.light_users:,} x {args.light_items} / {sizes[-1]:,}")
    bulk = CachedVectors(embedder, args.vector_cache)
    ticker = Ticker()
    ticker.start()
    if args.floor_s > 0:  # the machine's own stalls, side by side with the memory's: the same ticker, no work
        with ticker.phase() as stall:
            await asyncio.sleep(args.floor_s)
        line("the loop idle (no memory work): the floor", f"{args.floor_s:.0f} s, worst loop stall {stall[0] * 1000:.0f} ms, "
                                                         f"{ticker.counts()}")
    start = 1_750_000_000.0  # the heavy user's history spans a year before now

    def heavy_items(first: int, texts: list[str]) -> list[tuple[str, str, dict[str, object], str]]:
        """The heavy user's items `first`, `first + 1`, ... with these texts."""
        return [(heavy, text, {"channel_id": str(n % 13), "kind": "exchange",
                               "created_at": start + n * 365 * 86_400 / sizes[-1]}, guild if n % 4 else "dm")
                for n, text in enumerate(texts, start=first)]

    with tempfile.TemporaryDirectory(prefix="memory-bench-heavy-") as tmp:
        folder = os.path.join(tmp, "chroma")
        mem = open_user_memory(folder, embedder=bulk, search_mode=args.mode, snapshot_after=args.snapshot_after,
                               chroma_process=args.store == "process")
        # The texts are made on a worker thread, and each add_many's items just before it, as a
        # caller adding a day's exchanges would: made on the loop (seconds of Python for 40,000
        # texts) the ticker counted that as the memory's stall, and 40,000 tuples and dicts held
        # through the phase made each full garbage collection (on whichever thread allocates,
        # GIL held) walk them: 30-50 ms stalls that were the bench's objects, not the memory's.
        texts = await asyncio.to_thread(lambda: [make_text(rng) for _ in range(len(light) * args.light_items)])
        with ticker.phase() as stall, bulk.bulk():
            t0 = time.perf_counter()
            for chunk in range(0, len(texts), args.chunk):
                await mem.add_many([(light[n // args.light_items], text, {"kind": "exchange"},
                                     guild if n % args.light_items % 3 else "dm")
                                    for n, text in enumerate(texts[chunk:chunk + args.chunk], start=chunk)])
        took = time.perf_counter() - t0
        line("light users loaded", f"{len(texts):,} items in {took:.1f} s ({len(texts) / took:.0f} items/s), "
                                   f"worst loop stall {stall[0] * 1000:.0f} ms, {ticker.counts()}")
        had = 0
        rows = []
        for size in sizes:
            texts = await asyncio.to_thread(lambda: [make_text(rng) for _ in range(had, size)])
            with ticker.phase() as stall, bulk.bulk():
                t0 = time.perf_counter()
                for chunk in range(0, len(texts), args.chunk):
                    await mem.add_many(heavy_items(had + chunk, texts[chunk:chunk + args.chunk]))
                took, over = time.perf_counter() - t0, ticker.counts()
            grown, had = size - had, size
            await asyncio.to_thread(bulk.save)
            line(f"heavy user grown to {size:,}", f"{took:.1f} s ({grown / took:.0f} items/s), worst loop stall "
                                                f"{stall[0] * 1000:.0f} ms, {over}, RSS {rss_mb():.0f} MB")
            await mem.search(heavy, make_query(rng), k=5)  # this process has seen the user
            searches, adds, search_stall, add_stall = [], [], [0.0], [0.0]
            timings: list[SearchTiming] = []
            for _ in range(args.heavy_rounds):
                scope = guild if rng.random() < 0.7 else None
                with ticker.phase() as stall:
                    t0 = time.perf_counter()
                    await mem.add(heavy, make_text(rng), {"channel_id": "1"}, guild)
                    adds.append(time.perf_counter() - t0)
                add_stall.extend(stall)
                with ticker.phase() as stall:
                    t0 = time.perf_counter()
                    await mem.search(heavy, make_query(rng), k=5, scope=scope)
                    searches.append(time.perf_counter() - t0)
                search_stall.extend(stall)
                if mem.last_search is not None:
                    timings.append(mem.last_search)
                had += 1
            latency(f"  search k=5 right after an add ({size:,})", searches)
            search_parts(size, timings)
            latency(f"  add of that user ({size:,})", adds)
            colds, loads = [], []
            with ticker.phase() as cold_stall:
                for _ in range(args.cold_runs):
                    await mem.close()
                    # opened off the loop, as the bot does (a worker process takes seconds to start)
                    mem = await asyncio.to_thread(open_user_memory, folder, embedder=bulk, search_mode=args.mode,
                                                  snapshot_after=args.snapshot_after,
                                                  chroma_process=args.store == "process")
                    t0 = time.perf_counter()
                    await mem.search(heavy, make_query(rng), k=5, scope=guild)
                    colds.append(time.perf_counter() - t0)
                    if mem.last_load is not None:
                        loads.append(mem.last_load)
            latency(f"  cold first search of that user ({size:,})", colds)
            if loads:
                routes = ", ".join(f"{route} x{sum(ld.route == route for ld in loads)}"
                                   for route in dict.fromkeys(ld.route for ld in loads))
                parts = " / ".join(f"{statistics.median(getattr(ld, name) for ld in loads):.0f}"
                                   for name in ("token_ms", "snapshot_ms", "ids_ms", "fetch_ms"))
                line(f"  cold load: token / snapshot / ids / fetch ({size:,})", f"{parts} ms (p50; {routes})")
            worst = max(max(search_stall), cold_stall[0], max(add_stall))
            line(f"  worst loop stall: searches / adds / cold ({size:,})",
                 f"{max(search_stall) * 1000:.1f} / {max(add_stall) * 1000:.1f} / {cold_stall[0] * 1000:.1f} ms")
            line(f"  RSS ({size:,})", f"{rss_mb():.0f} MB")
            ms = [s * 1000 for s in searches]
            rows.append((size, statistics.median(ms), pct(ms, 95), statistics.median(colds) * 1000,
                         max(search_stall) * 1000, worst * 1000, rss_mb()))
        await mem.close()
    await ticker.stop()
    print("heavy user: how cost grows", flush=True)
    print(f"{'items':>8} {'search p50 ms':>14} {'search p95 ms':>14} {'cold ms':>9} "
          f"{'stall (searches) ms':>20} {'stall (all) ms':>15} {'RSS MB':>7}")
    for size, p50, p95, cold, search_ms, stall_ms, rss in rows:
        print(f"{size:>8,} {p50:>14.1f} {p95:>14.1f} {cold:>9.0f} {search_ms:>20.1f} {stall_ms:>15.1f} {rss:>7.0f}",
              flush=True)
    line("load average (1 min) at the end", f"{os.getloadavg()[0]:.1f}")


def run_keyword(args: argparse.Namespace) -> None:
    """The incremental BM25 index against SQLite FTS5 (its bm25()) over one user's 50,000 texts."""
    print("== keyword: memory.semantic.keyword_index vs SQLite FTS5, one user's texts ==", flush=True)
    rng = random.Random(args.seed + 2)
    texts = [make_text(rng) for _ in range(args.keyword_items)]
    queries = [make_query(rng) for _ in range(50)]
    started = time.perf_counter()
    index = KeywordIndex()
    for row, text in enumerate(texts):
        index.add(row, text)
    line(f"ours: index {len(texts):,} texts, one add each", f"{time.perf_counter() - started:.2f} s")
    mask = np.ones(len(texts), bool)
    started = time.perf_counter()
    for query in queries:
        index.scores(query, mask)
    line("ours: one query, every match scored", f"{(time.perf_counter() - started) / len(queries) * 1000:.2f} ms")
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
    started = time.perf_counter()
    for row, text in enumerate(texts):  # pre-tokenized with our tokenizer, as the index would need
        db.execute("INSERT INTO docs(rowid, body) VALUES (?, ?)", (row, " ".join(tokenize(text))))
    db.commit()
    line(f"FTS5: index {len(texts):,} texts, one insert each", f"{time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    for query in queries:
        match = " OR ".join(f'"{word}"' for word in tokenize(query))
        db.execute("SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ?", (match,)).fetchall()
    line("FTS5: one query, every match with bm25()", f"{(time.perf_counter() - started) / len(queries) * 1000:.2f} ms")


def run_rank(args: argparse.Namespace) -> None:
    """`memory.semantic.search.rank` alone over one user's columns, at each heavy size."""
    print("== rank: memory.semantic.search.rank over one user's columns (no Chroma, no model) ==", flush=True)
    rng = random.Random(args.seed + 3)
    vectors = np.random.default_rng(args.seed)
    start, now = 1_750_000_000.0, 1_750_000_000.0 + 366 * 86_400
    print(f"{'items':>8} {'rank p50 ms':>12} {'rank p95 ms':>12} {'dense scan ms':>14} {'BM25 ms':>8} "
          f"{'BM25 matches':>13}", flush=True)
    for size in sorted(args.heavy_sizes):
        items = UserItems(0)
        matrix = vectors.standard_normal((size, 384)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        items.append([StoredItem(f"{n:032x}", make_text(rng), {"created_at": start + n * 365 * 86_400 / size,
                                                               "scope": "guild" if n % 4 else "dm"})
                      for n in range(size)], matrix)
        queries = [make_query(rng) for _ in range(args.queries)]
        plans = [ranking.plan_query(q, now) for q in queries]
        query_vectors = [matrix[rng.randrange(size)] for _ in queries]
        scopes = ["guild" if rng.random() < 0.7 else None for _ in queries]

        def ranked(n: int, items: UserItems = items) -> None:
            search.rank(items, plans[n], plans[n].search_text, query_vectors[n], scope=scopes[n], k=5,
                        mode="hybrid", now=now, config=ranking.DEFAULT_CONFIG)

        took, dense, keyword, matches = [], [], [], []
        for n in range(len(queries)):
            t0 = time.perf_counter()
            ranked(n)
            took.append((time.perf_counter() - t0) * 1000)
            mask = items.mask(scopes[n])
            t0 = time.perf_counter()
            (items.matrix @ query_vectors[n])[mask]
            dense.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            matches.append(len(items.keywords.scores(plans[n].search_text, mask)[0]))
            keyword.append((time.perf_counter() - t0) * 1000)
        print(f"{size:>8,} {statistics.median(took):>12.2f} {pct(took, 95):>12.2f} {statistics.median(dense):>14.2f} "
              f"{statistics.median(keyword):>8.2f} {statistics.median(matches):>13,.0f}", flush=True)
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(lambda: [ranked(n) for n in range(len(queries))])
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(12)
        print(f"cProfile of {len(queries)} searches at {size:,} items, busiest functions first:")
        print("\n".join(out.getvalue().strip().splitlines()[2:]), flush=True)
    line("load average (1 min) at the end", f"{os.getloadavg()[0]:.1f}")


async def run(args: argparse.Namespace) -> None:
    if args.part == "keyword":
        run_keyword(args)
        return
    if args.part == "rank":
        run_rank(args)
        return
    if args.malloc == "pinned":  # the process as `python -m bot run` sets it up (bot.process.allocator)
        pin_malloc_thresholds(os.environ)
    line("malloc thresholds", args.malloc)
    sys.setswitchinterval(args.switch_interval_ms / 1000)
    line("GIL switch interval", f"{sys.getswitchinterval() * 1000:g} ms")
    line("RSS at start", f"{rss_mb():.0f} MB")
    started = time.perf_counter()
    embedder = LocalEmbedder()
    embedder.load()
    line(f"model load ({embedder.runtime})", f"{time.perf_counter() - started:.1f} s")
    line("RSS after model load", f"{rss_mb():.0f} MB")
    if args.part in ("scale", "all"):
        await run_scale(args, embedder)
    if args.part in ("heavy", "all"):
        await run_heavy(args, embedder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--single-adds", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=2_048, help="items per add_many call")
    parser.add_argument("--mode", choices=("hybrid", "dense", "keyword"), default="hybrid")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--progress", action="store_true", help="print bulk-load progress to stderr")
    parser.add_argument("--part", choices=("scale", "heavy", "keyword", "rank", "all"), default="all",
                        help="keyword: only the BM25 index vs SQLite FTS5; rank: only the ranking step "
                             "(neither is part of all)")
    parser.add_argument("--profile", action="store_true", help="rank part: cProfile at the largest size")
    parser.add_argument("--keyword-items", type=int, default=50_000)
    parser.add_argument("--light-users", type=int, default=1_000)
    parser.add_argument("--light-items", type=int, default=10)
    parser.add_argument("--heavy-sizes", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--heavy-rounds", type=int, default=40, help="add + search rounds at each size")
    parser.add_argument("--cold-runs", type=int, default=3, help="cold first searches at each size")
    parser.add_argument("--store", choices=("process", "thread"), default="process",
                        help="embedded Chroma in a worker process (open_user_memory(chroma_process=True)) "
                             "or in this process's worker threads")
    parser.add_argument("--snapshot-after", type=int, default=SNAPSHOT_AFTER,
                        help="heavy part: new items of a user before its snapshot is rewritten (open_user_memory's)")
    parser.add_argument("--vector-cache", help="file keeping the corpus's vectors between runs (heavy part)")
    parser.add_argument("--floor-s", type=float, default=30.0,
                        help="heavy part: seconds of the ticker alone first (the machine's own stalls; 0: none)")
    parser.add_argument("--malloc", choices=("pinned", "default"), default="pinned",
                        help="glibc's malloc thresholds pinned as `python -m bot run` pins them (bot.process.allocator), "
                             "or glibc's dynamic default")
    parser.add_argument("--switch-interval-ms", type=float, default=SWITCH_INTERVAL_S * 1000,
                        help="sys.setswitchinterval, ms: how long a thread keeps the GIL once another waits "
                             "(default: the bot's, bot.process.gil; CPython's own is 5)")
    args = parser.parse_args()
    if args.items < args.users or args.users < 1:
        parser.error("--items must be at least --users, and --users at least 1")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
