"""LoCoMo in the retrieval evaluation: recall@5 of evidence turns, by category, per split.

Called by `bench/retrieval_eval.py --locomo PATH` (the data is read from PATH, never copied:
bench/locomo.py). Each conversation is one person's memory: every turn is one `add()` to the
store (`memory.semantic.open_user_memory`, offline all-MiniLM-L6-v2), in order, created at its
session's date, its metadata written as the bot writes it: who said it (`speaker`), the turns
just before it in the session (`before`, keyword-indexed only), the relative dates it names
resolved against its date (`dates`, `memory.semantic.time_mentions`). All questions are asked after
the last session.

Recall@5 is the share of a question's evidence turns in the top 5 (every evidence id counts,
an id naming no turn too), averaged over questions: the definition behind the reference
figures of the data's README (its plain dense search is reproduced within 0.01 here).

Text units (what each turn stores and indexes) and rankings are compared on the same turns:
each unit is embedded once (vectors cached by text in this process), BM25 is the store's own
index (`memory.keyword_index`) over what the unit keyword-indexes, and every ranking is
`memory.ranking.fuse_keyed` over the same candidates the store gathers (dense top 50, every
BM25 match). Baselines: plain dense and plain BM25 on the README's item format
("[<session date>] <speaker>: <text>") and on the bot's items.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import locomo
from memory.semantic import ranking
from memory.semantic.item_text import BEFORE_KEY, DATES_KEY, keyword_text
from memory.semantic.keyword_index import KeywordIndex
from memory.semantic import open_user_memory
from memory.semantic.time_mentions import dates_of
from memory.semantic.validation import indexed_text
from figures import percentile

__all__ = ["Candidate", "LocomoRun", "candidates", "run"]

K = 5
TIME_EVERY = 4  # the store's search is timed on every fourth question


@dataclass(frozen=True)
class Unit:
    """What one turn stores: `speaker` in its metadata, the `window` turns before it in the
    session as `before` (keyword-indexed only), `dates` resolved; `reference` the README's item text."""

    speaker: bool = True
    window: int = 0
    dates: bool = False
    reference: bool = False


REFERENCE = "README's item: [date] speaker: text"
UNITS: dict[str, Unit] = {
    REFERENCE: Unit(speaker=False, reference=True),
    "turn alone": Unit(speaker=False),
    "speaker": Unit(),
    "speaker + dates": Unit(dates=True),
    "speaker, window 1 (keyword)": Unit(window=1),
    "speaker, window 2 (keyword)": Unit(window=2),
    "speaker, window 3 (keyword)": Unit(window=3),
    "speaker, window 2 (keyword) + dates": Unit(window=2, dates=True),
    "speaker, window 3 (keyword) + dates": Unit(window=3, dates=True),
}


def turn_items(conv: locomo.Conversation, unit: Unit) -> list[tuple[str, dict]]:
    """(text, metadata) of every turn as `unit` stores it."""
    out = []
    for n, turn in enumerate(conv.turns):
        if unit.reference:
            out.append((f"[{turn.session_date}] {turn.speaker}: {turn.text}", {"created_at": turn.when}))
            continue
        meta: dict = {"created_at": turn.when, "kind": "exchange", "turn": turn.id}
        if unit.speaker:
            meta["speaker"] = turn.speaker
        same = [t for t in conv.turns[max(0, n - unit.window):n] if t.session_date == turn.session_date]
        if same:
            lines = "\n".join(f"{t.speaker}: {t.text}" if unit.speaker else t.text for t in same)
            meta[BEFORE_KEY] = lines
        if unit.dates and (dates := dates_of(turn.text, turn.when)):
            meta[DATES_KEY] = dates
        out.append((turn.text, meta))
    return out


@dataclass(frozen=True)
class Variant:
    name: str
    unit: str
    mode: str
    config: ranking.RankingConfig
    expand: bool = False  # query expansion from the person's own items (pseudo-relevance feedback)


@dataclass
class Candidate:
    """One conversation's signals for one unit: item vectors, BM25 index, who said what, dated items."""

    ids: list[str]
    vectors: np.ndarray
    index: KeywordIndex
    keyword_texts: list[str]
    created: np.ndarray
    speakers: list[str]
    dated: np.ndarray


class VectorCache:
    """Vectors by text from one embedder, each text embedded once in this process."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray]) -> None:
        self._embed = embed
        self.vectors: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        for start in range(0, len(missing), 128):
            batch = missing[start:start + 128]
            self.vectors.update(zip(batch, self._embed(batch), strict=True))
        return np.vstack([self.vectors[t] for t in texts])


class CachedEmbedder:
    """The store's embedder: `inner`, answering from `cache` what this evaluation embedded
    already (the same model, the same texts), so that storing every turn costs no second pass."""

    def __init__(self, inner, cache: VectorCache) -> None:
        self.name: str = inner.name
        self.dimension: int = inner.dimension
        self._cache = cache

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._cache(texts)


def candidates(conv: locomo.Conversation, unit: Unit, vectors: VectorCache) -> Candidate:
    items = turn_items(conv, unit)
    index = KeywordIndex()
    texts = [keyword_text(t, m) for t, m in items]
    for row, text in enumerate(texts):
        index.add(row, text)
    return Candidate(
        ids=[t.id for t in conv.turns], vectors=vectors([indexed_text(t, m) for t, m in items]), index=index,
        keyword_texts=texts, created=np.array([t.when for t in conv.turns]),
        speakers=[str(m.get("speaker", "")) for _, m in items],
        dated=np.array([n for n, (_, m) in enumerate(items) if m.get(DATES_KEY)], np.int64))


def expanded(query: str, cand: Candidate, mask: np.ndarray, feedback: int = 3, terms: int = 5) -> str:
    """`query` with the `terms` words that best mark its `feedback` best BM25 matches among the
    person's own items (tf x idf over those items; pseudo-relevance feedback, no model call)."""
    rows, scores = cand.index.scores(query, mask)
    if not len(rows):
        return query
    top = rows[np.argsort(-scores)[:feedback]]
    asked = set(ranking.tokenize(query))
    counts: Counter[str] = Counter()
    for row in top.tolist():
        counts.update(w for w in ranking.tokenize(cand.keyword_texts[row]) if w not in asked)
    n = len(cand.ids)
    weight = {w: c * np.log(1 + n / (1 + len(cand.index.scores(w, mask)[0]))) for w, c in counts.items()}
    return query + " " + " ".join(sorted(weight, key=lambda w: -weight[w])[:terms])


def rank(q: locomo.LocomoQuestion, cand: Candidate, query_vector: np.ndarray, variant: Variant,
         now: float) -> list[str]:
    plan = ranking.plan_query(q.text, now, variant.config)
    mask = np.ones(len(cand.ids), bool)
    sims = cand.vectors @ query_vector
    top = np.argsort(-sims)[:max(variant.config.dense_candidates, 10 * K)]  # as memory.semantic.search
    text = expanded(plan.search_text, cand, mask) if variant.expand else plan.search_text
    keyword = cand.index.scores(text, mask)
    named = np.array([n for n, who in enumerate(cand.speakers) if ranking.said_by(plan, who)], np.int64)
    keys, _ = ranking.fuse_keyed(plan, dense=(top, sims[top]), keyword=keyword,
                                 created_at=(np.arange(len(cand.ids)), cand.created), now=now, k=K,
                                 mode=variant.mode, config=variant.config, said_by_named=named, dated=cand.dated)
    return [cand.ids[k] for k in keys.tolist()]


def recall_at_5(order: list[str], evidence: tuple[str, ...]) -> float:
    wanted = list(dict.fromkeys(evidence))
    return sum(e in order[:K] for e in wanted) / len(wanted)


@dataclass
class LocomoRun:
    conversations: list[locomo.Conversation]
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # variant -> question id -> R@5
    latency_ms: dict[str, list[float]] = field(default_factory=dict)
    agree: int = 0
    checked: int = 0


async def _store_and_time(conv: locomo.Conversation, unit: Unit, config: ranking.RankingConfig, embedder,
                          folder: Path, out: LocomoRun, expected: list[list[str]]) -> None:
    """Every turn through the store, one `add()` each in order; then the store's own search on
    every question (checked against `expected`, this evaluation's order for the same unit and
    ranking), and timed: hybrid vs dense, alternating which goes first."""
    clock = {"now": 0.0}
    memory = open_user_memory(str(folder / conv.id), embedder=embedder, clock=lambda: clock["now"],
                              collection="locomo", ranking_config=config, op_timeout_s=600.0)
    try:
        for (text, meta), turn in zip(turn_items(conv, unit), conv.turns, strict=True):
            clock["now"] = turn.when
            await memory.add(conv.id, text, meta, scope=None)
        clock["now"] = conv.turns[-1].when + 86_400.0
        for n, q in enumerate(conv.questions):
            hits = await memory.search(conv.id, q.text, k=K, scope=None)
            out.checked += 1
            out.agree += [h.metadata.get("turn") for h in hits] == expected[n]
            if n % TIME_EVERY:
                continue
            # each mode on a text not embedded yet (the suffixes are stop words), alternating which goes first
            modes = (("hybrid", " please"), ("dense", " thanks")) if n % 2 == 0 else (("dense", " please"), ("hybrid", " thanks"))
            for mode, suffix in modes:
                memory.search_mode = mode
                started = time.perf_counter()
                await memory.search(conv.id, q.text + suffix, k=K, scope=None)
                out.latency_ms.setdefault(mode, []).append((time.perf_counter() - started) * 1000.0)
            memory.search_mode = "hybrid"
    finally:
        await memory.close()


async def run(path: str, variants: list[Variant], embedder, store_unit: str, store_config: ranking.RankingConfig,
              folder: Path) -> LocomoRun:
    """Every variant on every conversation; the store holds `store_unit`'s items, ranks with
    `store_config` and is timed. `embedder` is the store's model (name, dimension, embed)."""
    conversations = locomo.load(path)
    out = LocomoRun(conversations, scores={v.name: {} for v in variants})
    vectors = VectorCache(embedder.embed)
    store_embedder = CachedEmbedder(embedder, vectors)
    for conv in conversations:
        now = conv.turns[-1].when + 86_400.0
        # the question as the store embeds it: its search form (`ranking.plan_query` without rewriting)
        query_vectors = await asyncio.to_thread(vectors, [ranking.search_form(q.text) for q in conv.questions])
        for unit_name in dict.fromkeys(v.unit for v in variants):
            cand = await asyncio.to_thread(candidates, conv, UNITS[unit_name], vectors)
            for variant in (v for v in variants if v.unit == unit_name):
                for q, qv in zip(conv.questions, query_vectors, strict=True):
                    out.scores[variant.name][q.id] = recall_at_5(rank(q, cand, qv, variant, now), q.evidence)
        cand = await asyncio.to_thread(candidates, conv, UNITS[store_unit], vectors)
        stored = Variant("store", store_unit, "hybrid", store_config)
        expected = [rank(q, cand, qv, stored, now) for q, qv in zip(conv.questions, query_vectors, strict=True)]
        await _store_and_time(conv, UNITS[store_unit], store_config, store_embedder, folder, out, expected)
    return out


# -- reporting -----------------------------------------------------------------------------


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def split_cells(run_: LocomoRun, name: str, split: str) -> tuple[float, dict[int, float]]:
    """(R@5 over categories 1-4, R@5 per category) of `name` on `split`."""
    per = run_.scores[name]
    qs = [q for c in run_.conversations if c.split == split for q in c.questions]
    return _mean([per[q.id] for q in qs]), {
        cat: _mean([per[q.id] for q in qs if q.category == cat]) for cat in locomo.CATEGORIES}


def print_tables(run_: LocomoRun, names: list[str]) -> None:
    for split in ("tune", "untuned"):
        convs = [c for c in run_.conversations if c.split == split]
        counts = Counter(q.category for c in convs for q in c.questions)
        print(f"\n## LoCoMo, {split} part ({', '.join(c.id for c in convs)}): R@5 of evidence turns, "
              f"categories 1-4 (n={sum(counts.values())})")
        print(f"{'variant':64} | {'all':>5} | " + " | ".join(
            f"{locomo.CATEGORIES[c]} n={counts[c]}" for c in locomo.CATEGORIES))
        for name in names:
            overall, cats = split_cells(run_, name, split)
            print(f"{name:64} | {overall:5.3f} | " + " | ".join(
                f"{cats[c]:{len(locomo.CATEGORIES[c]) + len(str(counts[c])) + 3}.3f}" for c in locomo.CATEGORIES))


def print_targets(run_: LocomoRun, chosen: str, baselines: list[str]) -> None:
    print("\n## LoCoMo targets (untuned part, this run)")
    overall, cats = split_cells(run_, chosen, "untuned")
    print(f"TARGET locomo untuned R@5 {overall:.3f} (>= 0.65; DRAGON in the paper: 0.588): "
          f"{'MET' if overall >= 0.65 else 'NOT MET'}")
    for cat, label in locomo.CATEGORIES.items():
        best_name = max(baselines, key=lambda b: split_cells(run_, b, "untuned")[1][cat])
        best = split_cells(run_, best_name, "untuned")[1][cat]
        print(f"TARGET locomo untuned {label:11}: {cats[cat]:.3f} vs the better plain baseline {best:.3f} "
              f"({best_name}): {'MET' if cats[cat] > best else 'NOT MET'}")
    lat = run_.latency_ms
    ratio = percentile(lat["hybrid"], 95) / percentile(lat["dense"], 95)
    print(f"TARGET locomo search p95: the store's hybrid {percentile(lat['hybrid'], 95):.1f} ms / its dense "
          f"{percentile(lat['dense'], 95):.1f} ms = {ratio:.2f}x (<= 1.5x), {len(lat['hybrid'])} searches each: "
          f"{'MET' if ratio <= 1.5 else 'NOT MET'}")
