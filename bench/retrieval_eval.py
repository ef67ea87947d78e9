"""Retrieval evaluation of the per-user memory: recall@1/5/10 and MRR on written dialogues.

Run: `python bench/retrieval_eval.py` (add `--quick` for the main table only).

Each user's turns (bench/data/dialogues.py, plus generic everyday requests as distractors)
are added in time order to a fresh `memory.semantic.open_user_memory` store (real Chroma,
real offline all-MiniLM-L6-v2), with the store's clock set to each turn's time. Before each
question (bench/data/questions.py) only the turns said before it are in the store, and the
question is asked with the clock at its own time. Every ranking variant runs through the
store's own `search`: the store's `ranking_config` is set to the variant's
`memory.ranking.RankingConfig` and its `search_mode` to the variant's, for that search.

Questions are split into a tuning half and a held-out half (alternating within each user);
the tuned configuration was chosen on the tuning half only.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "data"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from dialogues import SESSIONS, filler_turns  # noqa: E402
from questions import QUESTIONS  # noqa: E402

from memory import ranking  # noqa: E402
from memory.embeddings import LocalEmbedder  # noqa: E402
from memory.semantic import open_user_memory  # noqa: E402

TUNED = ranking.DEFAULT_CONFIG
PLAIN = ranking.RankingConfig(rewrite=False, parse_time=False, window_bonus=0.0, recency_boost=0.0)


@dataclass(frozen=True)
class Variant:
    name: str
    mode: str
    config: ranking.RankingConfig
    dedupe: bool = False


def _variants(quick: bool) -> list[Variant]:
    main = [
        Variant("plain dense", "dense", PLAIN),
        Variant("plain keyword (BM25)", "keyword", PLAIN),
        Variant("naive fusion (RRF 1:1)", "hybrid", replace(PLAIN, fusion="rrf", dense_weight=1.0,
                                                            keyword_weight=1.0)),
        Variant("naive fusion (sum 1:1)", "hybrid", replace(PLAIN, fusion="sum", dense_weight=1.0,
                                                            keyword_weight=1.0)),
        Variant("TUNED hybrid", "hybrid", TUNED),
    ]
    if quick:
        return main
    ablation = [
        Variant("tuned + query rewriting", "hybrid", replace(TUNED, rewrite=True)),
        Variant("tuned + time words stripped", "hybrid", replace(TUNED, strip_time=True)),
        Variant("tuned - time parsing", "hybrid", replace(TUNED, parse_time=False)),
        Variant("tuned - window bonus", "hybrid", replace(TUNED, window_bonus=0.0)),
        Variant("tuned - recency", "hybrid", replace(TUNED, recency_boost=0.0)),
        Variant("tuned + near-dup removal", "hybrid", TUNED, dedupe=True),
        Variant("tuned, fusion=sum", "hybrid", replace(TUNED, fusion="sum")),
        Variant("dense + time (no BM25)", "dense", TUNED),
        Variant("keyword + time (no dense)", "keyword", TUNED),
    ]
    for weight in (0.05, 0.2, 0.3, 0.5, 1.0):
        ablation.append(Variant(f"tuned, keyword weight {weight:g}", "hybrid", replace(TUNED, keyword_weight=weight)))
    for rrf_k in (3.0, 20.0, 60.0):
        ablation.append(Variant(f"tuned, rrf k={rrf_k:g}", "hybrid", replace(TUNED, rrf_k=rrf_k)))
    return main + ablation


UNITS: dict[str, Callable[[str, str], str]] = {
    "user message": lambda user, bot: user,
    "exchange": lambda user, bot: f"user: {user}\nbot: {bot}",
}


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()


def _turns(user: str) -> list[tuple[str, float, str, str]]:
    turns = [t for session in SESSIONS[user] for t in session] + filler_turns(user)
    return sorted(((tid, _epoch(when), u, b) for tid, when, u, b in turns), key=lambda t: t[1])


def _half(question_id: str) -> str:
    index = [q[0] for q in QUESTIONS if q[1] == question_id.split("-")[1]].index(question_id)
    return "tune" if index % 2 == 0 else "held-out"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _evaluate_unit(unit: str, variants: list[Variant], embedder: LocalEmbedder,
                         folder: Path) -> dict[str, dict[str, int | None]]:
    """{variant name: {question id: rank of the first answer (1-based) or None}}."""
    render = UNITS[unit]
    clock = Clock()
    ranks: dict[str, dict[str, int | None]] = {v.name: {} for v in variants}
    memory = open_user_memory(str(folder / unit.replace(" ", "_")), embedder=embedder, clock=clock)
    try:
        for user in SESSIONS:
            pending = _turns(user)
            ids: dict[str, str] = {}
            for qid, _, asked_at, text, answers, _tags in sorted(
                    (q for q in QUESTIONS if q[1] == user), key=lambda q: q[2]):
                asked = _epoch(asked_at)
                while pending and pending[0][1] <= asked:
                    tid, when, said, reply = pending.pop(0)
                    clock.now = when
                    item = await memory.add(user, render(said, reply), {"turn_id": tid})
                    ids[item] = tid
                clock.now = asked
                for variant in variants:
                    memory.ranking_config = variant.config
                    memory.search_mode = variant.mode
                    hits = await memory.search(user, text, k=30 if variant.dedupe else 10)
                    found = [(h.id, h.score) for h in hits]
                    if variant.dedupe:
                        found = ranking.drop_near_duplicates(found, {h.id: h.text for h in hits})
                    order = [ids[i] for i, _ in found[:10]]
                    ranks[variant.name][qid] = next(
                        (n for n, tid in enumerate(order, start=1) if tid in answers), None)
    finally:
        await memory.close()
    return ranks


def _metrics(ranks: list[int | None]) -> tuple[float, float, float, float]:
    def recall(k: int) -> float:
        return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)
    mrr = statistics.fmean(1.0 / r if r is not None else 0.0 for r in ranks)
    return recall(1), recall(5), recall(10), mrr


def _table(title: str, ranks: dict[str, dict[str, int | None]], names: list[str]) -> None:
    halves = {"tune": [], "held-out": []}
    for q in QUESTIONS:
        halves[_half(q[0])].append(q[0])
    time_qs = [q[0] for q in QUESTIONS if "time" in q[5]]
    para_qs = [q[0] for q in QUESTIONS if "para" in q[5]]
    name_qs = [q[0] for q in QUESTIONS if "name" in q[5]]
    print(f"\n## {title}  (tune n={len(halves['tune'])}, held-out n={len(halves['held-out'])}, "
          f"time n={len(time_qs)}, paraphrase n={len(para_qs)}, by-name n={len(name_qs)})")
    print(f"{'variant':34} | {'tuning half: R@1  R@5  R@10  MRR':34} | {'held-out half: R@1  R@5  R@10  MRR':35} "
          f"| all MRR | time R@5 | para R@5 | name R@5")
    for name in names:
        per = ranks[name]
        cells = []
        for half in ("tune", "held-out"):
            r1, r5, r10, mrr = _metrics([per[q] for q in halves[half]])
            cells.append(f"{r1:.2f} {r5:.2f} {r10:.2f} {mrr:.3f}")
        all_mrr = _metrics(list(per.values()))[3]
        t5 = _metrics([per[q] for q in time_qs])[1]
        p5 = _metrics([per[q] for q in para_qs])[1]
        n5 = _metrics([per[q] for q in name_qs])[1]
        print(f"{name:34} | {'':13}{cells[0]:21} | {'':14}{cells[1]:21} | {all_mrr:.3f}   | {t5:.2f}     "
              f"| {p5:.2f}     | {n5:.2f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="main table only, user-message unit only")
    parser.add_argument("--misses", action="store_true", help="list the tuned hybrid's misses at 5")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    variants = _variants(args.quick)
    users = len(SESSIONS)
    sessions = sum(len(s) for s in SESSIONS.values())
    turns = sum(len(_turns(u)) for u in SESSIONS)
    print(f"# retrieval eval: {users} users, {sessions} sessions, {turns} stored exchanges "
          f"(incl. generic distractors), {len(QUESTIONS)} questions")
    embedder = LocalEmbedder()
    started = time.perf_counter()
    embedder.load()
    print(f"embedding model loaded in {time.perf_counter() - started:.1f} s")
    units = ["user message"] if args.quick else list(UNITS)
    main_names = [v.name for v in variants[:5]]
    with tempfile.TemporaryDirectory(prefix="retrieval-eval-") as tmp:
        results = {}
        for unit in units:
            started = time.perf_counter()
            results[unit] = await _evaluate_unit(unit, variants, embedder, Path(tmp))
            print(f"[{unit}] evaluated {len(variants)} variants in {time.perf_counter() - started:.1f} s")
        for unit in units:
            _table(f"Main: text unit = {unit}", results[unit], main_names)
        if not args.quick:
            _table("Ablation (text unit = user message)", results["user message"], [v.name for v in variants])
            print("\n## Text unit (tuned hybrid and plain baselines)")
            for unit in units:
                for name in main_names:
                    r1, r5, r10, mrr = _metrics(list(results[unit][name].values()))
                    print(f"{unit:14} {name:28} R@1 {r1:.2f}  R@5 {r5:.2f}  R@10 {r10:.2f}  MRR {mrr:.3f}")
        if args.misses:
            per = results[units[0]]["TUNED hybrid"]
            print("\n## tuned hybrid misses at 5")
            for q in QUESTIONS:
                if per[q[0]] is None or per[q[0]] > 5:
                    print(f"{q[0]:10} rank={per[q[0]]} {q[3]!r} -> {q[4]}")


if __name__ == "__main__":
    asyncio.run(main())
