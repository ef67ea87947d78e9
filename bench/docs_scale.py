"""Server documents at their limit: one server filled to 5,000 passages (DOCS_MAX_PASSAGES),
timed at 140 / 1,000 / 5,000 passages, side by side for the code of several checkouts.

Each candidate (`--engine LABEL=PATH`: the code of that checkout, its worker run with
PYTHONPATH=PATH; `--chroma-process LABEL=on|off` for a checkout whose `open_server_documents`
takes `chroma_process`) runs in a worker process of its own, one after another; with `--runs N`
the order rotates and each figure is the median of the runs. In each worker one server gets
11 generated Markdown documents (no downloads: sections made from the sentences of
bench/data/server_documents.py with random numbers and words; one passage per section) of
140, 430, 430 and 8 x 500 passages, so it holds 140, 1,000 and 5,000 passages after the
first, third and last. At each of those it prints:
  - add: seconds per document (median of the documents added since the last size) and the
    event loop's worst stall during those adds;
  - cold: the first search after the index was dropped (SQLite rows, Chroma vectors, BM25
    build, the query's embedding, the search), median of 3, and its worst stall;
  - search p50 / p95 over 76 questions (the query's embedding included), and the worst stall;
  - idle: the worst stall while the loop only waits for 2 s (the floor the machine's load
    sets: on a loaded VM the loop's thread itself waits for a core);
  - the longest garbage collection in this process during the adds, and during the cold
    builds and searches (a collection holds the GIL, so it stalls the loop from any thread);
  - the worker's RSS with its children (a Chroma child process counts).
The stall is measured by the bot's own monitor (bot.process.health.LoopLag) waking every 2 ms.

The passages' vectors are not made by the model in the fill (on this machine it embeds about
ten 1,000-character passages a second, so one fill would take minutes per run): they are
seeded random unit vectors of the model's dimension; every question is embedded by the model.
The model's own rate, and the loop's worst stall while it runs in a worker thread, are
measured once per worker (`model` line), so an add's full time is the add's figure plus the
passages over that rate.

Figures only: nothing here asserts on timings. Run from the repository:

    git archive main | tar -x -C /tmp/docs-main     # the code before, as a baseline
    python bench/docs_scale.py --engine before=/tmp/docs-main --engine after=. \\
        --engine threads=. --chroma-process after=on --chroma-process threads=off --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from figures import commit_of, percentile

ROOT = Path(__file__).resolve().parent.parent
GUILD = "900000000000000001"
PLAN = [140, 430, 430] + [500] * 8  # passages per document: 140, 1,000 and 5,000 in all
SIZES = (140, 1000, 5000)
COLD_PROBES = 3
IDLE_S = 2.0  # the loop idle, ticker only: the floor the machine's load sets for every stall
MODEL_SAMPLE = 64  # passages embedded by the model to measure its rate
SECTION_CHARS = 850  # one passage per section (passages hold at most 1,000 characters)
TOPICS = ("Schedule", "Roles", "Fees", "Rules", "Equipment", "Events", "Appeals", "Voice", "Travel", "Prizes")


# --- the worker: one candidate --------------------------------------------------------------------


def sentences() -> list[str]:
    from bench.data.server_documents import DOCUMENTS

    out = []
    for _, text in DOCUMENTS:
        body = " ".join(line for line in text.splitlines() if line and not line.startswith("#"))
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", body) if len(s.strip()) > 20]
    return out


def document(rng: random.Random, pool: list[str], number: int, sections: int) -> str:
    """A Markdown document of ``sections`` sections of about SECTION_CHARS characters each."""
    parts = [f"# Handbook {number}\n"]
    for n in range(sections):
        text = ""
        while len(text) < SECTION_CHARS - 120:
            sentence = re.sub(r"\d+", lambda _: str(rng.randint(2, 999)), rng.choice(pool))
            text += sentence + f" Ref {rng.choice(TOPICS).lower()}-{rng.randint(100, 99999)}. "
        parts.append(f"## {rng.choice(TOPICS)} {n + 1}\n{text.strip()}\n")
    return "\n".join(parts)


class GcPauses:
    """The longest garbage collection (it holds the GIL, whichever thread runs it) since the last take."""

    def __init__(self) -> None:
        self._started = 0.0
        self.worst = 0.0

    def observe(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.worst = max(self.worst, time.perf_counter() - self._started)

    def take(self) -> float:
        worst, self.worst = self.worst, 0.0
        return worst * 1000


class FillEmbedder:
    """The model for questions; seeded random unit vectors for passages while `fill` is set."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.name = model.name
        self.dimension = model.dimension
        self.fill = False
        self._rng = np.random.default_rng(1)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not self.fill:
            return self._model.embed(texts)
        vectors = self._rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


async def worker(args: argparse.Namespace) -> dict[str, Any]:
    import psutil

    from bench.data.server_documents import QUESTIONS
    from bot.process.health import LoopLag
    from memory.documents import open_server_documents
    from memory.documents.extract import extract
    from memory.documents.passages import split_passages
    from memory.semantic.embeddings import LocalEmbedder
    from memory.stores.database import Database

    lag = LoopLag(0.002, clock=time.perf_counter)
    ticker = asyncio.get_running_loop().create_task(lag.run())
    collections = GcPauses()
    gc.callbacks.append(collections.observe)

    async def timed(call: Any) -> tuple[float, float]:
        lag.take_worst()
        started = time.perf_counter()
        await call
        return time.perf_counter() - started, lag.take_worst() * 1000

    model = LocalEmbedder()
    model.load()
    model.embed(["a first query warms the session up"])
    rng = random.Random(args.seed)
    pool = sentences()
    texts = [document(rng, pool, n, count) for n, count in enumerate(PLAN)]
    for text, count in zip(texts, PLAN, strict=True):
        made = len(split_passages(extract(text.encode(), "markdown")))
        if made != count:
            raise SystemExit(f"a generated document split into {made} passages, not {count}")
    sample = [p.text for p in split_passages(extract(texts[0].encode(), "markdown"))][:MODEL_SAMPLE]
    model_s, model_stall = await timed(asyncio.to_thread(model.embed, sample))
    out: dict[str, Any] = {"model_passages_s": len(sample) / model_s, "model_stall_ms": model_stall, "sizes": {}}

    embedder = FillEmbedder(model)
    options = {}
    if args.chroma_process is not None:
        if "chroma_process" not in inspect.signature(open_server_documents).parameters:
            raise SystemExit("this checkout's open_server_documents takes no chroma_process")
        options["chroma_process"] = args.chroma_process == "on"
    questions = [q for q, *_ in QUESTIONS]
    process = psutil.Process()
    with tempfile.TemporaryDirectory() as folder:
        async with Database.open(Path(folder) / "bot.sqlite3") as db:
            store = await asyncio.to_thread(open_server_documents, db, embedder, path=Path(folder) / "documents",
                                            **options)
            await store.load()
            held, adds, add_stalls = 0, [], []
            for n, (text, count) in enumerate(zip(texts, PLAN, strict=True)):
                embedder.fill = True
                took, stall = await timed(store.add(GUILD, title=f"Handbook {n}", source=f"handbook-{n}.md",
                                                    kind="markdown", data=text.encode(), added_by="bench"))
                embedder.fill = False
                held += count
                adds.append(took)
                add_stalls.append(stall)
                if held not in SIZES:
                    continue
                gc_add = collections.take()
                colds, cold_stalls = [], []
                for probe in range(COLD_PROBES):
                    store._indexes.clear()  # the index as an add or a remove leaves it: dropped
                    took, stall = await timed(store.search(GUILD, questions[probe], k=5))
                    colds.append(took)
                    cold_stalls.append(stall)
                searches, search_stalls = [], []
                for q in questions:
                    took, stall = await timed(store.search(GUILD, q, k=5))
                    searches.append(took * 1000)
                    search_stalls.append(stall)
                gc_search = collections.take()
                _, idle = await timed(asyncio.sleep(IDLE_S))  # the floor: nothing of ours runs
                rss = process.memory_info().rss + sum(c.memory_info().rss for c in process.children(recursive=True))
                out["sizes"][str(held)] = {
                    "add_s": statistics.median(adds), "add_stall_ms": max(add_stalls),
                    "cold_ms": statistics.median(colds) * 1000, "cold_stall_ms": max(cold_stalls),
                    "search_p50": statistics.median(searches), "search_p95": percentile(searches, 95),
                    "search_stall_ms": max(search_stalls), "idle_stall_ms": idle, "gc_add_ms": gc_add, "gc_search_ms": gc_search,
                    "rss_mb": rss / 2**20}
                adds, add_stalls = [], []
            await store.close()
    ticker.cancel()
    return out


# --- the driver -------------------------------------------------------------------------------------

COLUMNS = [  # (key, heading, format)
    ("add_s", "add s/doc", "{:.2f}"), ("add_stall_ms", "add stall", "{:.0f}"),
    ("cold_ms", "cold build", "{:,.0f}"), ("cold_stall_ms", "cold stall", "{:.0f}"),
    ("search_p50", "search p50", "{:.1f}"), ("search_p95", "search p95", "{:.1f}"),
    ("search_stall_ms", "search stall", "{:.0f}"), ("idle_stall_ms", "idle stall", "{:.0f}"), ("gc_add_ms", "gc in adds", "{:.0f}"),
    ("gc_search_ms", "gc in cold+search", "{:.0f}"), ("rss_mb", "RSS MB", "{:,.0f}"),
]


def run_worker(label: str, root: Path, process: str | None, seed: int) -> dict[str, Any] | None:
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        command = [sys.executable, __file__, "--worker", "--result", result.name, "--seed", str(seed)]
        if process is not None:
            command += ["--process", process]
        done = subprocess.run(command, env=env, cwd=root)
        if done.returncode != 0:
            print(f"# {label}: the worker failed (exit status {done.returncode}); left out", flush=True)
            return None
        return json.loads(Path(result.name).read_text())


def driver(args: argparse.Namespace) -> None:
    engines = {label: Path(path).resolve() for label, path in (s.split("=", 1) for s in args.engine)} or {"this": ROOT}
    processes = dict(s.split("=", 1) for s in args.chroma_process_of)
    labels = list(engines)
    print(f"# docs_scale: {', '.join(labels)}; {len(PLAN)} documents, {sum(PLAN):,} passages in one server; "
          f"{args.runs} run(s); load average {os.getloadavg()[0]:.2f}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    for label, path in engines.items():
        print(f"# {label}: the code at {path} ({commit_of(path)})"
              + (f", chroma_process={processes[label]}" if label in processes else ""), flush=True)
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    for n in range(args.runs):
        for label in labels[n % len(labels):] + labels[:n % len(labels)]:
            if (result := run_worker(label, engines[label], processes.get(label), args.seed + n)) is not None:
                results[label].append(result)
    heads = " | ".join(head for _, head, _ in COLUMNS)
    print(f"\nmedians of the runs (ms unless said; stalls: the event loop's worst, ms)\n"
          f"| candidate | passages | {heads} |\n|" + "---|" * (len(COLUMNS) + 2))
    for label, runs in results.items():
        for size in SIZES:
            cells = []
            for key, _, fmt in COLUMNS:
                values = [r["sizes"][str(size)][key] for r in runs if str(size) in r["sizes"]]
                cells.append(fmt.format(statistics.median(values)) if values else "-")
            print(f"| {label} | {size:,} | {' | '.join(cells)} |")
    model = [r for runs in results.values() for r in runs]
    if model:
        rate = statistics.median(r["model_passages_s"] for r in model)
        print(f"\nmodel: {rate:.1f} passages/s embedded in a worker thread (median of {len(model)} workers; "
              f"a 500-passage document: {500 / rate:.0f} s more per add); worst loop stall meanwhile "
              f"{statistics.median(r['model_stall_ms'] for r in model):.0f} ms (median)")
    for label, runs in results.items():
        for size in SIZES:
            worst = [max(r["sizes"][str(size)][k] for k in ("add_stall_ms", "cold_stall_ms", "search_stall_ms"))
                     for r in runs if str(size) in r["sizes"]]
            if worst:
                print(f"  {label} at {size:,}: worst stall of each run {', '.join(f'{w:.0f}' for w in worst)} ms")
    print(f"# load average at the end {os.getloadavg()[0]:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", default=[], help="LABEL=PATH: the code of a checkout")
    parser.add_argument("--chroma-process", dest="chroma_process_of", action="append", default=[],
                        help="LABEL=on|off: open_server_documents(chroma_process=...) for that candidate")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--process", dest="chroma_process", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        Path(args.result).write_text(json.dumps(asyncio.run(worker(args))))
    else:
        driver(args)


if __name__ == "__main__":
    main()
