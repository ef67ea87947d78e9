"""Side by side: the per-user memory designs of issue 23, one person growing to 1,000 / 10,000 / 50,000 items.

Candidates (`bench/memory_candidates.py`): `today` (the engine `memory.semantic` on this
checkout), `per-person` (one Chroma collection per person), `shared` (one Chroma collection,
`where` on the person; also timed with no filter, as a floor), and any `--engine LABEL=PATH`
(the engine of another checkout: its worker runs with PYTHONPATH=PATH), with the memory settings
of `--setting LABEL:NAME=VALUE` (e.g. `CHROMA_PROCESS=false`; a LABEL that is no engine of its
own is this checkout's engine under that name). Each candidate runs in
a worker process of its own (clean RSS, no shared caches), one after another; with `--runs N`
the order rotates and each figure is the median of the runs.

In each worker: 1,000 light people of 10 items each are stored first (their creation time and
the RSS after), then one heavy person grows through `--sizes`. At each size it prints:
  - the first search after the growth, in seconds: the engine's copy does not hold the person
    (not yet searched at the first size; later the store was reopened after the cold probes),
    so it loads what its snapshot lacks from Chroma (asked again while a load outlives the op
    timeout);
  - search right after an add (p50/p95): an add of that person (embedded), then a search with
    a new question (embedded: the query's embedding is part of the time); 70% of the searches
    in the person's guild scope, the rest unscoped;
  - the add's own latency, the bulk add rate (items/s of the growth; the bulk's vectors come
    from `bench/memory_corpus.py`'s file, embedded once: every query and single add runs the model);
  - a light person's search right after their add (p95), beside the heavy one;
  - the cold first search: a fresh process opens the store (open) and searches once (first
    search; the model is loaded and warmed before the clock starts);
  - the event loop's worst stall (a ticker task waking every 2 ms, measuring its lateness)
    while the adds and searches run off the loop, and during the bulk growth;
  - RSS of the worker and its children (the engine's Chroma child process counts).
Then the table of medians and how each figure grows with items.

`--part keyword` times the keyword side alone: SQLite FTS5 (bm25(), the question's words
OR'ed, in one table of everyone's items with an indexed `user` column) against the current
incremental index (`memory.keyword_index`), on the same tokens (`memory.ranking.tokenize`), at
each size, with how many of each one's top 10 the other also ranks in its top 10.

Figures only: nothing here asserts on timings. Run from the repository with PYTHONPATH set:

    python bench/memory_corpus.py --prepare 60000                 # once: the bulk vectors
    python bench/memory_bench.py                                   # 1k / 10k, a few minutes
    python bench/memory_bench.py --sizes 1000 10000 50000 --runs 3
    python bench/memory_bench.py --candidates per-person --sizes 1000 10000 50000 500000
    python bench/memory_bench.py --engine new=/work/wt/memengine --candidates today new
    python bench/memory_bench.py --setting threads:CHROMA_PROCESS=false --candidates today threads
    python bench/memory_bench.py --part keyword --sizes 1000 10000 50000
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from bot.process.health import LoopLag
from memory.errors import StoreUnavailable

import memory_corpus
from figures import commit_of, percentile
from memory_candidates import CANDIDATES, SETTINGS_VAR, Candidate, Shared

ROOT = Path(__file__).resolve().parent.parent
RAW = ("per-person", "per-scope", "shared")
HEAVY = "299999999999999999"
GUILD = "guild:810000000000000000"
FIRST_SEARCH_GIVE_UP_S = 1800.0


def tree_rss_mb() -> float:
    """RSS of this process and its children (a store's own worker process counts)."""
    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


class Ticker:
    """The event loop's worst stall per phase, by the bot's own monitor (bot.process.health.LoopLag)
    asked to wake every `interval_s`."""

    def __init__(self, interval_s: float = 0.002) -> None:
        self._lag = LoopLag(interval_s, clock=time.perf_counter)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._lag.run())

    @contextmanager
    def phase(self) -> Iterator[list[float]]:
        """The worst stall of a block, in ms: the yielded list gets it at the end."""
        self._lag.take_worst()
        out: list[float] = []
        yield out
        out.append(self._lag.take_worst() * 1000)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def say(label: str, value: str) -> None:
    print(f"  {label:<46} {value}", flush=True)


def ms(samples_s: list[float]) -> tuple[float, float]:
    values = [s * 1000 for s in samples_s]
    return statistics.median(values), percentile(values, 95)


def engine_module(name: str) -> Any:
    """`memory.semantic.<name>`, or `memory.<name>` in a checkout from before memory/ was split
    into packages (the engine of main before issue 23, as a baseline)."""
    try:
        return importlib.import_module(f"memory.semantic.{name}")
    except ModuleNotFoundError:
        return importlib.import_module(f"memory.{name}")


def loaded_embedder() -> Any:
    embedder = engine_module("embeddings").LocalEmbedder()
    embedder.load()
    embedder.embed(["a first query warms the session up"])
    return embedder


def make(label: str, embedder: Any) -> Candidate:
    return CANDIDATES[label if label in RAW else "engine"](embedder)


# --- the worker: one candidate, all sizes -------------------------------------------------------


async def timed(ticker: Ticker, call: Any) -> tuple[float, float]:
    """Seconds the awaitable took and the worst loop stall (ms) meanwhile."""
    with ticker.phase() as stall:
        started = time.perf_counter()
        await call
        took = time.perf_counter() - started
    return took, stall[0]


async def worker(args: argparse.Namespace) -> dict[str, Any]:
    label, sizes = args.worker, sorted(args.sizes)
    rng = random.Random(args.seed)
    texts = memory_corpus.texts(min(args.light_users * 10 + sizes[-1], 60_000))
    vectors = memory_corpus.Vectors(args.vectors)
    questions = iter(memory_corpus.queries(100_000, args.seed + 1))
    extra = iter(memory_corpus.queries(100_000, args.seed + 2))  # texts of single adds: new ones too
    embedder = loaded_embedder()
    candidate = make(label, embedder)
    light = [str(300_000_000_000_000_000 + n) for n in range(args.light_users)]
    out: dict[str, Any] = {"label": label, "sizes": {}}
    print(f"== {label} (pid {os.getpid()}) ==", flush=True)
    with tempfile.TemporaryDirectory(prefix=f"memory-bench-{label}-") as tmp:
        folder = Path(tmp)
        ticker = Ticker()
        ticker.start()
        rss0 = tree_rss_mb()
        await candidate.open(folder)
        with ticker.phase() as stall:
            started = time.perf_counter()
            for chunk in range(0, len(light) * 10, args.chunk):
                rows = range(chunk, min(len(light) * 10, chunk + args.chunk))
                await candidate.bulk([(light[r // 10], texts[r], GUILD if r % 3 else "dm") for r in rows],
                                     vectors.take(rows.start, rows.stop))
            took = time.perf_counter() - started
        out["light"] = {"seconds": took, "stall_ms": stall[0], "rss_mb": tree_rss_mb(), "rss_before_mb": rss0}
        say(f"{len(light):,} light people x 10 items stored", f"{took:.1f} s, worst loop stall {stall[0]:.0f} ms, "
                                                             f"RSS {rss0:.0f} -> {tree_rss_mb():.0f} MB")
        had, first = 0, len(light) * 10
        for size in sizes:
            fig: dict[str, Any] = {}
            with ticker.phase() as stall:
                started = time.perf_counter()
                for chunk in range(had, size, args.chunk):
                    stop = min(size, chunk + args.chunk)
                    await candidate.bulk([(HEAVY, memory_corpus.corpus_text(texts, first + r), GUILD if r % 4 else "dm")
                                          for r in range(chunk, stop)], vectors.take(first + chunk, first + stop))
                took = time.perf_counter() - started
            fig["bulk_items_s"], fig["bulk_stall_ms"] = (size - had) / took, stall[0]
            had = size
            fig["first_search_s"] = await first_search(candidate, next(questions))
            searches, adds, stalls, light_searches, unfiltered = [], [], [], [], []
            for _ in range(args.rounds):
                took, stall_ms = await timed(ticker, candidate.add(HEAVY, next(extra), GUILD))
                adds.append(took)
                stalls.append(stall_ms)
                scope = GUILD if rng.random() < 0.7 else None
                took, stall_ms = await timed(ticker, candidate.search(HEAVY, next(questions), scope))
                searches.append(took)
                stalls.append(stall_ms)
                person = rng.choice(light)
                await candidate.add(person, next(extra), GUILD)
                took, stall_ms = await timed(ticker, candidate.search(person, next(questions), scope))
                light_searches.append(took)
                stalls.append(stall_ms)
                if isinstance(candidate, Shared):
                    took, _ = await timed(ticker, candidate.search_unfiltered(next(questions)))
                    unfiltered.append(took)
            had += args.rounds
            fig["search_p50"], fig["search_p95"] = ms(searches)
            fig["add_p50"], fig["add_p95"] = ms(adds)
            fig["light_search_p50"], fig["light_search_p95"] = ms(light_searches)
            if unfiltered:
                fig["unfiltered_p50"], fig["unfiltered_p95"] = ms(unfiltered)
            fig["stall_ms"] = max(stalls)
            fig["rss_mb"] = tree_rss_mb()
            await candidate.close()
            probes = [cold_probe(label, folder, args) for _ in range(args.cold_runs)]
            fig["cold_open_ms"] = statistics.median(p["open_ms"] for p in probes)
            fig["cold_search_ms"] = statistics.median(p["search_ms"] for p in probes)
            fig["cold_stall_ms"] = max(p["stall_ms"] for p in probes)
            await candidate.open(folder)
            out["sizes"][size] = fig
            say(f"heavy person at {size:,}: bulk", f"{fig['bulk_items_s']:,.0f} items/s, worst loop stall "
                                                  f"{fig['bulk_stall_ms']:.0f} ms")
            say("  first search after the growth (reopened)", f"{fig['first_search_s']:.1f} s")
            say("  search right after an add", f"p50 {fig['search_p50']:6.1f} ms  p95 {fig['search_p95']:6.1f} ms")
            say("  add (one item, embedded)", f"p50 {fig['add_p50']:6.1f} ms  p95 {fig['add_p95']:6.1f} ms")
            say("  a light person's search after their add", f"p50 {fig['light_search_p50']:6.1f} ms  "
                                                            f"p95 {fig['light_search_p95']:6.1f} ms")
            if unfiltered:
                say("  no filter at all (anyone's hits)", f"p50 {fig['unfiltered_p50']:6.1f} ms  "
                                                         f"p95 {fig['unfiltered_p95']:6.1f} ms")
            say("  cold: open / first search (fresh process)", f"{fig['cold_open_ms']:.0f} / "
                                                              f"{fig['cold_search_ms']:.0f} ms")
            say("  worst loop stall: adds+searches / cold", f"{fig['stall_ms']:.0f} / {fig['cold_stall_ms']:.0f} ms")
            say("  RSS (worker and children)", f"{fig['rss_mb']:.0f} MB")
        await candidate.close()
        await ticker.stop()
    return out


async def first_search(candidate: Candidate, question: str) -> float:
    """Seconds to the heavy person's first answer after a growth. The engine's copy does not hold
    them (never searched before the first size; the store reopened after the cold probes since):
    it loads what its snapshot lacks from Chroma, and a load longer than its op timeout fails that
    search and goes on (cached when it ends), so the search is asked again until one answers."""
    started = time.perf_counter()
    while True:
        try:
            await candidate.search(HEAVY, question, GUILD)
            return time.perf_counter() - started
        except StoreUnavailable as exc:
            if time.perf_counter() - started > FIRST_SEARCH_GIVE_UP_S:
                raise
            print(f"    (first search after the growth: {exc}; asked again)", flush=True)


def cold_probe(label: str, folder: Path, args: argparse.Namespace) -> dict[str, float]:
    """Open the store in a fresh process and search the heavy person once."""
    done = subprocess.run([sys.executable, __file__, "--probe", label, "--folder", str(folder),
                           "--seed", str(args.seed)], capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        raise RuntimeError(f"cold probe of {label} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


async def probe(args: argparse.Namespace) -> None:
    embedder = loaded_embedder()
    candidate = make(args.probe, embedder)
    # the imports are the process's start, not the store's open
    __import__("chromadb" if args.probe in RAW else "memory.semantic")
    query = memory_corpus.queries(1, args.seed + 3)[0]
    ticker = Ticker()
    ticker.start()
    with ticker.phase() as stall:
        started = time.perf_counter()
        await candidate.open(Path(args.folder))
        opened = time.perf_counter()
        await candidate.search(HEAVY, query, GUILD)
        searched = time.perf_counter()
    await candidate.close()
    await ticker.stop()
    print(json.dumps({"open_ms": (opened - started) * 1000, "search_ms": (searched - opened) * 1000,
                      "stall_ms": stall[0]}))


# --- the driver: every candidate, the table -------------------------------------------------------

COLUMNS = [  # (key, heading, format)
    ("search_p50", "search p50", "{:.1f}"), ("search_p95", "search p95", "{:.1f}"),
    ("add_p95", "add p95", "{:.1f}"), ("bulk_items_s", "bulk items/s", "{:,.0f}"),
    ("light_search_p95", "light p95", "{:.1f}"), ("cold_open_ms", "cold open", "{:,.0f}"),
    ("cold_search_ms", "cold search", "{:,.0f}"), ("stall_ms", "stall", "{:.0f}"),
    ("bulk_stall_ms", "bulk stall", "{:.0f}"), ("rss_mb", "RSS MB", "{:,.0f}"),
    ("first_search_s", "first search after growth s", "{:.1f}"),
]


def settings_of(specs: list[str]) -> dict[str, dict[str, str]]:
    """`--setting LABEL:NAME=VALUE` options as {label: {name: value}}."""
    out: dict[str, dict[str, str]] = {}
    for spec in specs:
        label, _, setting = spec.partition(":")
        name, equals, value = setting.partition("=")
        if not (label and name and equals):
            raise SystemExit(f"--setting {spec!r}: expected LABEL:NAME=VALUE")
        out.setdefault(label, {})[name] = value
    return out


def run_worker(label: str, engines: dict[str, Path], args: argparse.Namespace) -> dict[str, Any] | None:
    root = engines.get(label, ROOT)
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1",
           SETTINGS_VAR: json.dumps(settings_of(args.setting).get(label, {}))}
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        command = [sys.executable, __file__, "--worker", label, "--result", result.name, "--sizes",
                   *map(str, args.sizes), "--rounds", str(args.rounds), "--cold-runs", str(args.cold_runs),
                   "--light-users", str(args.light_users), "--seed", str(args.seed), "--vectors", str(args.vectors),
                   "--chunk", str(args.chunk)]
        done = subprocess.run(command, env=env)
        if done.returncode != 0:
            print(f"# {label}: the worker failed (exit status {done.returncode}); left out of the table", flush=True)
            return None
        return json.loads(Path(result.name).read_text())


def median_of(runs: list[dict[str, Any]], size: str, key: str) -> float | None:
    values = [r["sizes"][size][key] for r in runs if key in r["sizes"].get(size, {})]
    return statistics.median(values) if values else None


def table(results: dict[str, list[dict[str, Any]]], sizes: list[int], light: int) -> None:
    heads = " | ".join(head for _, head, _ in COLUMNS)
    print(f"\n| candidate | items | {heads} |")
    print("|" + "---|" * (len(COLUMNS) + 2))
    for label, runs in results.items():
        for size in sizes:
            cells = [fmt.format(v) if (v := median_of(runs, str(size), key)) is not None else "-"
                     for key, _, fmt in COLUMNS]
            print(f"| {label} | {size:,} | {' | '.join(cells)} |")
        if label == "shared":
            for size in sizes:
                p50, p95 = median_of(runs, str(size), "unfiltered_p50"), median_of(runs, str(size), "unfiltered_p95")
                print(f"| shared, no filter | {size:,} | {p50:.1f} | {p95:.1f} |" + " |" * (len(COLUMNS) - 2))
    print(f"\n| candidate | {light:,} light people stored (s) | RSS before -> after (MB) |\n|---|---|---|")
    for label, runs in results.items():
        seconds = statistics.median(r["light"]["seconds"] for r in runs)
        before = statistics.median(r["light"]["rss_before_mb"] for r in runs)
        after = statistics.median(r["light"]["rss_mb"] for r in runs)
        print(f"| {label} | {seconds:.1f} | {before:.0f} -> {after:.0f} |")
    print("\nGrowth: each figure at a size over the figure at the size before (items grow by the first column)")
    for label, runs in results.items():
        for before, after in zip(sizes, sizes[1:]):
            cells = []
            for key, head, _ in COLUMNS:
                a, b = median_of(runs, str(before), key), median_of(runs, str(after), key)
                cells.append(f"{head} x{b / a:.2f}" if a and b is not None else f"{head} -")
            print(f"  {label} {before:,}->{after:,} (x{after / before:g} items): {', '.join(cells)}")


def driver(args: argparse.Namespace) -> None:
    engines = dict(spec.split("=", 1) for spec in args.engine)
    engines = {label: Path(path) for label, path in engines.items()}
    labels = args.candidates or ["today", *RAW, *engines, *settings_of(args.setting)]
    print(f"# memory_bench: {', '.join(labels)} at {', '.join(f'{s:,}' for s in sorted(args.sizes))} items, "
          f"{args.runs} run(s), {args.rounds} add+search rounds per size, {args.cold_runs} cold probes; "
          f"load average {os.getloadavg()[0]:.2f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    for label, path in engines.items():
        print(f"# {label}: the engine at {path} ({commit_of(path)})")
    for label, settings in settings_of(args.setting).items():
        print(f"# {label}: memory settings {', '.join(f'{k}={v}' for k, v in settings.items())}")
    if "today" in labels:
        print(f"# today: the engine of this checkout, {ROOT}", flush=True)
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    for n in range(args.runs):
        for label in labels[n % len(labels):] + labels[:n % len(labels)]:
            if (result := run_worker(label, engines, args)) is not None:
                results[label].append(result)
    table({label: runs for label, runs in results.items() if runs}, sorted(args.sizes), args.light_users)
    print(f"# load average at the end {os.getloadavg()[0]:.2f}", flush=True)


# --- the keyword side -----------------------------------------------------------------------------


def keyword(args: argparse.Namespace) -> None:
    import sqlite3

    KeywordIndex = engine_module("keyword_index").KeywordIndex
    tokenize = engine_module("ranking").tokenize

    sizes = sorted(args.sizes)
    texts = memory_corpus.texts(min(args.light_users * 10 + sizes[-1], 60_000))
    questions = memory_corpus.queries(200, args.seed + 4)
    light_rows = args.light_users * 10
    print(f"# keyword side: FTS5 vs memory.keyword_index; {args.light_users:,} light people beside; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    print("| items | ours: query p50 / p95 ms | FTS5, everyone's table: p50 / p95 ms | FTS5, the person's own table: "
          "p50 / p95 ms | ours: add us/item | FTS5: add+commit ms/item | top-10 shared |\n|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="memory-bench-fts-") as tmp:
        db = sqlite3.connect(Path(tmp) / "fts.sqlite3", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE VIRTUAL TABLE items USING fts5(user, body)")
        db.execute("CREATE VIRTUAL TABLE own USING fts5(body)")  # the heavy person's items alone
        db.execute("BEGIN")
        db.executemany("INSERT INTO items(user, body) VALUES (?, ?)",
                       ((f"u{n // 10}", " ".join(tokenize(texts[n]))) for n in range(light_rows)))
        db.execute("COMMIT")
        index, had = KeywordIndex(), 0
        for size in sizes:
            rows = [memory_corpus.corpus_text(texts, light_rows + r) for r in range(had, size)]
            started = time.perf_counter()
            for r, text in enumerate(rows, start=had):
                index.add(r, text)
            ours_add = (time.perf_counter() - started) / len(rows) * 1e6
            db.execute("BEGIN")
            db.executemany("INSERT INTO items(user, body) VALUES (?, ?)",
                           ((f"u{HEAVY}", " ".join(tokenize(t))) for t in rows[:-20]))
            db.executemany("INSERT INTO own(body) VALUES (?)", ((" ".join(tokenize(t)),) for t in rows))
            db.execute("COMMIT")
            started = time.perf_counter()
            for text in rows[-20:]:  # one add per turn: its own transaction
                db.execute("INSERT INTO items(user, body) VALUES (?, ?)", (f"u{HEAVY}", " ".join(tokenize(text))))
            fts_add = (time.perf_counter() - started) / 20 * 1000
            had = size
            mask = np.ones(size, bool)
            ours, fts, own, shared = [], [], [], []
            for question in questions:
                started = time.perf_counter()
                found, scores = index.scores(question, mask)
                top = found[np.argsort(-scores, kind="stable")[:50]] if len(found) else found
                ours.append(time.perf_counter() - started)
                words = " OR ".join(f'"{w}"' for w in dict.fromkeys(tokenize(question)))
                started = time.perf_counter()
                hits = db.execute("SELECT rowid FROM items WHERE items MATCH ? ORDER BY bm25(items, 0.0, 1.0) "
                                  "LIMIT 50", (f'user : "u{HEAVY}" AND body : ({words})',)).fetchall() if words else []
                fts.append(time.perf_counter() - started)
                started = time.perf_counter()
                if words:
                    db.execute("SELECT rowid FROM own WHERE own MATCH ? ORDER BY bm25(own) LIMIT 50", (words,)).fetchall()
                own.append(time.perf_counter() - started)
                ours_top = {int(r) for r in top[:10]}
                fts_top = {rowid - light_rows - 1 for (rowid,) in hits[:10]}
                if ours_top:
                    shared.append(len(ours_top & fts_top) / len(ours_top))
            (o50, o95), (f50, f95), (w50, w95) = ms(ours), ms(fts), ms(own)
            print(f"| {size:,} | {o50:.2f} / {o95:.2f} | {f50:.2f} / {f95:.2f} | {w50:.2f} / {w95:.2f} | {ours_add:.0f} | "
                  f"{fts_add:.2f} | "
                  f"{statistics.mean(shared):.0%} |", flush=True)
    print("# FTS5 rows hold our tokens (memory.ranking.tokenize), so both match the same terms; its idf is over "
          "the whole table (everyone's items), ours over the person's; each query asks for the top 50")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("stores", "keyword"), default="stores")
    parser.add_argument("--candidates", nargs="+", help=f"labels (default: today {' '.join(RAW)} and each --engine)")
    parser.add_argument("--engine", action="append", default=[], metavar="LABEL=PATH",
                        help="another checkout's engine as a candidate")
    parser.add_argument("--setting", action="append", default=[], metavar="LABEL:NAME=VALUE",
                        help="a memory setting of one engine candidate (a new label: this checkout's engine)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--runs", type=int, default=1, help="workers per candidate (figures: their median)")
    parser.add_argument("--rounds", type=int, default=40, help="add + search rounds at each size")
    parser.add_argument("--cold-runs", type=int, default=3, help="fresh processes for the cold search at each size")
    parser.add_argument("--light-users", type=int, default=1_000)
    parser.add_argument("--chunk", type=int, default=2_000, help="items per bulk call")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--vectors", type=Path, default=Path("/tmp/membench/vectors.npz"),
                        help="the bulk vectors (bench/memory_corpus.py --prepare)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        asyncio.run(probe(args))
    elif args.worker:
        out = asyncio.run(worker(args))
        Path(args.result).write_text(json.dumps(out))
    elif args.part == "keyword":
        keyword(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
