"""Retrieval evaluation of the per-user memory on two datasets: recall@1/5/10, MRR, search p95.

Run: `python bench/retrieval_eval.py` (about 35 minutes on a loaded 2-core machine: every
ablation, the weight grid and every text unit; `--quick`, about 8: the main variants and the
second round's ablations on the bot's own text unit, the main variants on the same unit with
its context index-only, and the easy set's "before" unit).
Both datasets print side by side with their tune / held-out splits, then the target lines
("TARGET ...: MET / NOT MET"), each measured in the same run.

Datasets, side by side:
- easy: the hand-written dialogues of bench/data/dialogues.py (6 users, 814 exchanges,
  149 questions; split alternately into tune / held-out halves; any answer turn is a hit).
- hard: bench/data/hard_histories.py (8 users, 432 exchanges each over 18 sessions and nine
  months, 730 questions; users "aiko" and "dev" are the held-out split). A question's
  recall@k is the share of its evidence turns in the top k ("window" questions: any one).

Every turn is stored as the bot stores it: `bot.turn_store.persistence.exchange_items` gives the items
(text + metadata), `memory.semantic.open_user_memory` (embedded Chroma, offline
all-MiniLM-L6-v2) stores them with created_at = the turn's time, in time order; each
question is asked at its own time with only the earlier turns stored. Text-unit variants
are made from the bot's items (replies dropped, context dropped).

Ranking variants differ only in how the same candidates are ordered, so each question
gathers its candidates once and every variant orders them with `memory.semantic.ranking.fuse`
and its own `RankingConfig`, passed as an argument: dense similarities from the very
vectors the store computed (the store's embedder is wrapped to keep them), BM25 scores
from an index over the same indexed texts with the variant's tokenizer. The store's own
`search` is checked against this: the share of questions where both give the same top 10
is printed. Each item's kind and exchange (metadata "kind", "trace_id") go to `fuse` as the
store's search passes them to `fuse_keyed`. Search latency is the store's own `search`, hybrid vs dense, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import logging
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "data"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hard_histories  # noqa: E402
import locomo_eval  # noqa: E402
from dialogues import SESSIONS, filler_turns  # noqa: E402
from questions import QUESTIONS  # noqa: E402

from bot.turn_store.persistence import CONTEXT_MAX_AGE_S, exchange_items  # noqa: E402
from bot.turn_store.recall_fields import recall_fields  # noqa: E402
from bot.turn.requests import TurnRequest  # noqa: E402
from memory.semantic import ranking  # noqa: E402
from memory.semantic.embeddings import LocalEmbedder  # noqa: E402
from memory.semantic.item_text import DATES_KEY, kept_metadata, keyword_text  # noqa: E402
from memory.semantic.keyword_index import hidden_term  # noqa: E402
from memory.semantic import UserMemory, open_user_memory  # noqa: E402
from memory.semantic.validation import indexed_text as store_indexed_text  # noqa: E402
from figures import percentile  # noqa: E402

K = 10
OP_TIMEOUT_S = 600.0  # a store call may wait this long on a loaded machine before the run gives up
TIME_EVERY = 2  # time the store's search on every second question
# The ranking before this evaluation's second round: one BM25 weight for every query, every item
# of an exchange ranked alone, replies weighted as the person's messages (all fields spelled out,
# so a change of the defaults does not move it).
PREVIOUS = ranking.RankingConfig(fusion="rrf", dense_weight=1.0, keyword_weight=0.2, name_keyword_weight=None,
                                 current_keyword_weight=None, asked_keyword_weight=None, reply_weight=1.0,
                                 asked_reply_weight=1.0, one_per_exchange=False, fusion_depth=None, rrf_k=10.0,
                                 window_bonus=1.0, recency_boost=0.5, half_life_days=7.0, rewrite=False,
                                 strip_time=False, parse_time=True, speaker_bonus=0.0, dated_bonus=0.0,
                                 keyword_scale="minmax", dense_scale="minmax", dense_candidates=50,
                                 speaker_keyword_weight=None)
PLAIN = replace(PREVIOUS, parse_time=False, window_bonus=0.0, recency_boost=0.0)
TODAY = replace(PREVIOUS, keyword_weight=0.1)
SHIPPED = ranking.DEFAULT_CONFIG
# The shipped ranking before the LoCoMo round: no bonus for who said it or for dated items.
# The shipped ranking after the first LoCoMo round: 50 dense candidates, speaker bonus 0.2, no
# BM25 weight of its own for a question naming a speaker, min-max scaled signals.
ROUND1 = replace(SHIPPED, keyword_scale="minmax", dense_scale="minmax", dense_candidates=50, speaker_bonus=0.2,
                 speaker_keyword_weight=None)
BEFORE_LOCOMO = replace(ROUND1, speaker_bonus=0.0, dated_bonus=0.0)
# memory.semantic embeds and keyword-indexes an item with metadata "context" as
# context + "\n" + text once the memscale branch lands; before, the eval folds it in itself.
NATIVE_CONTEXT = importlib.util.find_spec("memory.semantic.validation") is not None


# -- the data, as one shape ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    id: str
    when: float
    said: str
    reply: str
    previous: str | None  # the bot's last message in the conversation, if there is one
    previous_said: str | None = None  # the person's message that `previous` answered


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    user: str
    asked_at: float
    text: str
    evidence: tuple[str, ...]
    kind: str
    split: str
    match: str  # "all": share of evidence found; "any": one is enough


@dataclass(slots=True)
class Dataset:
    name: str
    turns: dict[str, list[Turn]]
    questions: list[Question]


def _epoch(stamp: str | datetime) -> float:
    moment = datetime.fromisoformat(stamp) if isinstance(stamp, str) else stamp
    return moment.replace(tzinfo=UTC).timestamp()


def _chain(rows: Iterable[tuple[str, float, str, str]], gap_s: float = CONTEXT_MAX_AGE_S) -> list[Turn]:
    """Turns in time order; each knows the bot's previous reply when it came within `gap_s`."""
    out: list[Turn] = []
    for tid, when, said, reply in sorted(rows, key=lambda r: r[1]):
        recent = out[-1] if out and when - out[-1].when <= gap_s else None
        out.append(Turn(tid, when, said, reply, recent.reply if recent else None, recent.said if recent else None))
    return out


def easy_dataset() -> Dataset:
    turns = {}
    for user in SESSIONS:
        rows = [t for session in SESSIONS[user] for t in session] + filler_turns(user)
        turns[user] = _chain((tid, _epoch(when), u, b) for tid, when, u, b in rows)
    questions = []
    per_user: Counter[str] = Counter()
    for qid, user, asked, text, answers, tags in QUESTIONS:
        split = "tune" if per_user[user] % 2 == 0 else "held-out"
        per_user[user] += 1
        questions.append(Question(qid, user, _epoch(asked), text, answers, tags[0], split, "any"))
    return Dataset("easy", turns, questions)


def hard_dataset() -> Dataset:
    turns, questions = {}, []
    for history in hard_histories.build():
        turns[history.user] = _chain((t.id, _epoch(t.when), t.user, t.bot) for t in history.turns)
        split = "held-out" if history.user in hard_histories.HELD_OUT else "tune"
        questions += [Question(q.id, q.user, _epoch(q.asked_at), q.text, q.evidence, q.kind, split, q.match)
                      for q in history.questions]
    return Dataset("hard", turns, questions)


# -- text units: what one turn stores ------------------------------------------------------

Item = tuple[str, dict]


def bot_items(user: str, turn: Turn) -> list[Item]:
    """The items the bot's pipeline stores for this turn."""
    req = TurnRequest(user_id=user, display_name=user, guild_id="1", channel_id="1", text=turn.said)
    return exchange_items(req, turn.said, turn.reply, f"trace-{turn.id}", previous=turn.previous)


def _no_replies(items: list[Item], turn: Turn, user: str = "") -> list[Item]:
    return [(text, meta) for text, meta in items if meta.get("kind") != "reply"]


def _message_only(items: list[Item], turn: Turn, user: str = "") -> list[Item]:
    return [(text, {k: v for k, v in meta.items() if k != "context"}) for text, meta in _no_replies(items, turn)]


def _context_always(items: list[Item], turn: Turn, user: str = "") -> list[Item]:
    return [(text, {**meta, "context": turn.previous} if turn.previous else meta)
            for text, meta in _no_replies(items, turn)]


def _whole_exchange(items: list[Item], turn: Turn, user: str = "") -> list[Item]:
    return [(f"user: {turn.said}\nbot: {turn.reply}", {"kind": "exchange", "shows_reply": True})]


def _who_when_before(items: list[Item], turn: Turn, user: str = "") -> list[Item]:
    """The bot's items with what its persistence writes for the ranking (bot.turn_store.recall_fields):
    the person's message with its speaker, its relative dates resolved, and the person's
    previous exchange (when within the context age) as `before` unless it carries `context`."""
    said_at = datetime.fromtimestamp(turn.when, UTC)
    before = [f"{user}: {turn.previous_said}", f"bot: {turn.previous}"] if turn.previous and turn.previous_said else []
    return [(text, {**meta, **recall_fields(user, turn.said, said_at, () if "context" in meta else before)})
            if meta.get("kind") == "exchange" else (text, meta) for text, meta in items]


def _context_index_only(items: list[Item], turn: Turn, user: str = "") -> list[Item]:
    """The bot's items as stored when the message before a short one is another person's: its
    context is indexed but not kept (`index_only_context`; the store keeps its terms' hashes)."""
    return [(text, {("index_only_context" if k == "context" and meta.get("kind") == "exchange" else k): v
                    for k, v in meta.items()}) for text, meta in items]


BEFORE_UNIT = "message only (before)"
INDEX_ONLY_UNIT = "bot's unit, context index-only"
WHO_WHEN_UNIT = "bot's unit + speaker, dates, before"
UNITS: dict[str, Callable[[list[Item], Turn, str], list[Item]]] = {
    "bot's unit": lambda items, turn, user="": items,
    INDEX_ONLY_UNIT: _context_index_only,
    WHO_WHEN_UNIT: _who_when_before,
    "no reply items": _no_replies,
    BEFORE_UNIT: _message_only,
    "context on every message": _context_always,
    "whole exchange as one text": _whole_exchange,
}


def indexed_text(text: str, meta: dict) -> str:
    """What the store embeds for an item (BM25 reads `keyword_text`)."""
    return store_indexed_text(text, meta) if NATIVE_CONTEXT else (
        f"{meta['context']}\n{text}" if isinstance(meta.get("context"), str) and meta["context"].strip() else text)


# -- signals -------------------------------------------------------------------------------


class RecordingEmbedder:
    """The offline model, keeping every vector it computes by the text's search form."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self._inner = inner
        self.vectors: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def load(self) -> None:
        self._inner.load()

    def embed(self, texts: list[str]) -> np.ndarray:
        out = self._inner.embed(texts)
        for text, vector in zip(texts, out, strict=True):
            self.vectors[ranking.search_form(text)] = vector
        return out


class Bm25:
    """Okapi BM25 (Lucene idf, k1=1.2, b=0.75, as the store's index) over growing documents,
    with a tokenizer of its own, so that tokenizers can be compared on the same items."""

    def __init__(self, tokenize: Callable[[str], list[str]]) -> None:
        self._tokenize = tokenize
        self._tfs: list[Counter[str]] = []
        self._lengths: list[int] = []
        self._postings: dict[str, list[int]] = {}
        self._total = 0

    def add(self, text: str) -> None:
        terms = Counter(self._tokenize(text))
        for term in terms:
            self._postings.setdefault(term, []).append(len(self._tfs))
        self._tfs.append(terms)
        self._lengths.append(sum(terms.values()))
        self._total += self._lengths[-1]

    def scores(self, query: str) -> dict[int, float]:
        n_docs = len(self._tfs)
        avg = self._total / n_docs if n_docs and self._total else 1.0
        out: dict[int, float] = {}
        for term, qtf in Counter(self._tokenize(query)).items():
            hidden = hidden_term(term)  # a term and its hidden stand-in count as one, as in the store's index
            docs = sorted({*self._postings.get(term, ()), *self._postings.get(hidden, ())})
            idf = math.log(1.0 + (n_docs - len(docs) + 0.5) / (len(docs) + 0.5))
            for doc in docs:
                tf = self._tfs[doc][term] + self._tfs[doc][hidden]
                norm = 1.2 * (0.25 + 0.75 * self._lengths[doc] / avg)
                out[doc] = out.get(doc, 0.0) + qtf * idf * tf * 2.2 / (tf + norm)
        return out


@dataclass(frozen=True)
class Variant:
    name: str
    mode: str
    config: ranking.RankingConfig
    tokenizer: str = "default"


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "default": ranking.tokenize,
    "light": ranking.make_tokenizer("light"),
    "none": ranking.make_tokenizer("none"),
    "no stop words": ranking.make_tokenizer(stop_words=False),
}


def main_variants() -> list[Variant]:
    return [
        Variant("plain dense", "dense", PLAIN),
        Variant("plain BM25", "keyword", PLAIN),
        Variant("naive fusion (RRF 1:1, k=60)", "hybrid", replace(PLAIN, keyword_weight=1.0, rrf_k=60.0)),
        Variant("today's hybrid (BM25 0.1, k=10, time)", "hybrid", TODAY),
        Variant("previous defaults (BM25 0.2, k=10, time)", "hybrid", PREVIOUS),
        Variant("TUNED hybrid (shipped defaults)", "hybrid", SHIPPED),
        Variant("shipped before the LoCoMo round", "hybrid", BEFORE_LOCOMO),
        Variant("shipped after the first LoCoMo round", "hybrid", ROUND1),
    ]


ONE_WEIGHT = {"name_keyword_weight": None, "current_keyword_weight": None, "asked_keyword_weight": None}
NO_REPLY_WEIGHTS = {"reply_weight": 1.0, "asked_reply_weight": 1.0}


def second_round_variants() -> list[Variant]:
    """Each idea of the second round alone on the previous defaults, and each taken out of the
    shipped ranking: one item per exchange, the replies' weights, per-query BM25 weights, fusion."""
    other_fusion = "rrf" if SHIPPED.fusion == "sum" else "sum"
    return [
        Variant("previous + one item per exchange", "hybrid", replace(PREVIOUS, one_per_exchange=True)),
        Variant("previous + replies x3 when asked about", "hybrid", replace(PREVIOUS, asked_reply_weight=3.0)),
        Variant("previous + replies x0.5 otherwise", "hybrid", replace(PREVIOUS, reply_weight=0.5)),
        Variant("previous + per-query BM25 weights", "hybrid",
                replace(PREVIOUS, **{k: getattr(SHIPPED, k) for k in ONE_WEIGHT})),
        Variant("previous, fusion=sum", "hybrid", replace(PREVIOUS, fusion="sum")),
        Variant("plain dense + one per exchange + replies", "dense",
                replace(PLAIN, one_per_exchange=True, asked_reply_weight=SHIPPED.asked_reply_weight)),
        Variant("tuned - one item per exchange", "hybrid", replace(SHIPPED, one_per_exchange=False)),
        Variant("tuned - reply weights", "hybrid", replace(SHIPPED, **NO_REPLY_WEIGHTS)),
        Variant("tuned, replies x0.5 otherwise", "hybrid", replace(SHIPPED, reply_weight=0.5)),
        Variant("tuned, replies x0.8 otherwise", "hybrid", replace(SHIPPED, reply_weight=0.8)),
        Variant("tuned - per-query BM25 weights", "hybrid", replace(SHIPPED, **ONE_WEIGHT)),
        Variant("tuned - BM25 weight for names", "hybrid", replace(SHIPPED, name_keyword_weight=None)),
        Variant("tuned - BM25 weight for 'now' questions", "hybrid", replace(SHIPPED, current_keyword_weight=None)),
        Variant("tuned - BM25 weight for 'did you' questions", "hybrid", replace(SHIPPED, asked_keyword_weight=None)),
        Variant(f"tuned, fusion={other_fusion}", "hybrid", replace(SHIPPED, fusion=other_fusion)),
        Variant("tuned, recency half-life 60 days", "hybrid", replace(SHIPPED, half_life_days=60.0)),
    ]


# The second LoCoMo round: each change taken out of the shipped ranking, and the candidates not
# kept (chosen on LoCoMo's tuning part; checked here for no loss).
ROUND2_CHANGES = {"50 dense candidates": {"dense_candidates": 50},
                  "- BM25 weight for a named speaker": {"speaker_keyword_weight": None},
                  "speaker bonus 0.2": {"speaker_bonus": 0.2},
                  "BM25 weight 2 for every named question": {"name_keyword_weight": 2.0, "speaker_keyword_weight": None},
                  "BM25 scaled by its max": {"keyword_scale": "max"},
                  "both scaled by their max": {"keyword_scale": "max", "dense_scale": "max"}}


def scaling_variants() -> list[Variant]:
    """The shipped ranking with each change of the second LoCoMo round undone or replaced."""
    return [Variant(f"tuned, {name}", "hybrid", replace(SHIPPED, **change)) for name, change in ROUND2_CHANGES.items()]


def ablation_variants() -> list[Variant]:
    out = [
        Variant("dense + time (no BM25)", "dense", SHIPPED),
        Variant("BM25 + time (no dense)", "keyword", SHIPPED),
        Variant("tuned - time parsing", "hybrid", replace(SHIPPED, parse_time=False)),
        Variant("tuned - window bonus", "hybrid", replace(SHIPPED, window_bonus=0.0)),
        Variant("tuned - recency", "hybrid", replace(SHIPPED, recency_boost=0.0)),
        Variant("tuned + query rewriting", "hybrid", replace(SHIPPED, rewrite=True)),
    ]
    for weight in (0.1, 0.3, 0.5, 0.7, 1.0, 1.5):
        out.append(Variant(f"tuned, BM25 weight {weight:g}", "hybrid", replace(SHIPPED, keyword_weight=weight)))
    for rrf_k in (5.0, 10.0, 30.0, 60.0):
        out.append(Variant(f"tuned, fusion=rrf, k={rrf_k:g}", "hybrid", replace(SHIPPED, fusion="rrf", rrf_k=rrf_k)))
    for name_weight in (None, 0.5, 1.0, 1.5, 2.0):
        out.append(Variant(f"tuned, BM25 weight with names {name_weight}", "hybrid",
                           replace(SHIPPED, name_keyword_weight=name_weight)))
    for depth in (10, 20, 50):
        out.append(Variant(f"tuned, fusion depth {depth}", "hybrid", replace(SHIPPED, fusion_depth=depth)))
    for tokenizer in TOKENIZERS:
        if tokenizer != "default":
            out.append(Variant(f"tuned, BM25 tokens: {tokenizer}", "hybrid", SHIPPED, tokenizer))
            out.append(Variant(f"plain BM25, tokens: {tokenizer}", "keyword", PLAIN, tokenizer))
    return out


def grid_variants() -> list[Variant]:
    """Weights chosen across both sets: fusion x BM25 weight x its weight for named queries x
    the replies' weight when asked about x BM25's weight then (one item per exchange; BM25 off
    for questions about now)."""
    out = []
    for fusion, weight, name_weight, asked_reply, asked_keyword in itertools.product(
            ("rrf", "sum"), (0.1, 0.2, 0.4), (1.0, 1.5, 2.0), (1.5, 3.0), (0.2, 0.5)):
        config = replace(SHIPPED, fusion=fusion, keyword_weight=weight, name_keyword_weight=name_weight,
                         asked_reply_weight=asked_reply, asked_keyword_weight=asked_keyword)
        out.append(Variant(f"grid {fusion} BM25 {weight:g}, named {name_weight:g}, asked {asked_reply:g}/{asked_keyword:g}",
                           "hybrid", config))
    return out


# -- one run over one dataset and one text unit --------------------------------------------


@dataclass(slots=True)
class Outcome:
    """Per variant: question id -> (recall@1, recall@5, recall@10, reciprocal rank)."""

    scores: dict[str, dict[str, tuple[float, float, float, float]]] = field(default_factory=dict)
    agree: int = 0
    checked: int = 0
    latency_ms: dict[str, list[float]] = field(default_factory=dict)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass(slots=True)
class Stored:
    """One user's stored items so far, row by row, as the eval's own ranking sees them."""

    ids: list[str] = field(default_factory=list)          # the store's id (ties break by id, as in the store)
    turn_of: list[str] = field(default_factory=list)      # the turn it was stored from
    reply_shown: list[bool] = field(default_factory=list)  # does the item show the bot's reply
    created: list[float] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)     # id -> metadata "kind"
    exchanges: dict[str, str] = field(default_factory=dict)  # id -> ranking.exchange_of(metadata)
    speakers: dict[str, str] = field(default_factory=dict)   # id -> metadata "speaker"
    dated: set[str] = field(default_factory=set)             # ids with metadata "dates"


async def evaluate(dataset: Dataset, unit: str, variants: list[Variant], embedder: RecordingEmbedder,
                   folder: Path, timing: bool) -> Outcome:
    """Store every turn of `dataset` as `unit` says, ask every question, score every variant."""
    clock = Clock()
    outcome = Outcome(scores={v.name: {} for v in variants})
    make_unit = UNITS[unit]
    memory = open_user_memory(str(folder / f"{dataset.name}-{unit.replace(' ', '_').replace(chr(39), '')}"),
                              embedder=embedder, clock=clock, collection=dataset.name, op_timeout_s=OP_TIMEOUT_S)
    tokenizers = sorted({v.tokenizer for v in variants})
    try:
        for user, turns in dataset.turns.items():
            pending = list(turns)
            stored_rows = Stored()
            indexes = {name: Bm25(TOKENIZERS[name]) for name in tokenizers}
            for q in sorted((q for q in dataset.questions if q.user == user), key=lambda q: (q.asked_at, q.id)):
                batch: list[tuple[str, str, dict, str | None]] = []
                rows: list[tuple[str, str, str, float, bool, dict]] = []
                while pending and pending[0].when <= q.asked_at:
                    turn = pending.pop(0)
                    for text, meta in make_unit(bot_items(user, turn), turn, user):
                        meta = {**meta, "created_at": turn.when}
                        indexed = indexed_text(text, meta)
                        keyworded = keyword_text(text, kept_metadata(meta))  # as the store indexes it
                        stored = text if NATIVE_CONTEXT else indexed
                        batch.append((user, stored, meta, "guild:1"))
                        shows_reply = meta.pop("shows_reply", meta.get("kind") == "reply")
                        rows.append((turn.id, indexed, keyworded, turn.when, shows_reply, meta))
                if batch:
                    ids = await memory.add_many(batch)
                    for item_id, (tid, indexed, keyworded, when, shows_reply, meta) in zip(ids, rows, strict=True):
                        stored_rows.ids.append(item_id)
                        stored_rows.turn_of.append(tid)
                        stored_rows.reply_shown.append(shows_reply)
                        stored_rows.created.append(when)
                        stored_rows.vectors.append(embedder.vectors[ranking.search_form(" ".join(indexed.split()))])
                        if isinstance(meta.get("kind"), str):
                            stored_rows.kinds[item_id] = meta["kind"]
                        if (exchange := ranking.exchange_of(meta)) is not None:
                            stored_rows.exchanges[item_id] = exchange
                        if isinstance(meta.get("speaker"), str):
                            stored_rows.speakers[item_id] = meta["speaker"]
                        if meta.get(DATES_KEY):
                            stored_rows.dated.add(item_id)
                        for index in indexes.values():
                            index.add(keyworded)
                clock.now = q.asked_at
                await _ask(memory, embedder, user, q, variants, outcome, stored_rows, indexes, timing)
    finally:
        await memory.close()
    return outcome


async def _ask(memory: UserMemory, recorder: RecordingEmbedder, user: str, q: Question, variants: list[Variant],
               outcome: Outcome, stored: Stored, indexes: dict[str, Bm25], timing: bool) -> None:
    ids, turn_of, reply_shown = stored.ids, stored.turn_of, stored.reply_shown
    matrix = np.vstack(stored.vectors)
    row_of = {item_id: n for n, item_id in enumerate(ids)}
    created_at = dict(zip(ids, stored.created, strict=True))

    def shows(row: str) -> bool:
        # a question about what the bot said is answered only by an item that shows the reply
        return q.kind != "bot" or reply_shown[row_of[row]]

    similarity_cache: dict[tuple[str, int], dict[str, float]] = {}
    keyword_cache: dict[tuple[str, str], dict[str, float]] = {}
    for variant in variants:
        plan = ranking.plan_query(q.text, q.asked_at, variant.config)
        search_text = plan.search_text
        dense: dict[str, float] = {}
        if variant.mode != "keyword":
            depth = max(variant.config.dense_candidates, 10 * K)  # the store's dense candidates
            if (search_text, depth) not in similarity_cache:
                sims = matrix @ await _query_vector(recorder, search_text)
                top = np.argsort(-sims)[:depth]
                similarity_cache[(search_text, depth)] = {ids[r]: float(sims[r]) for r in top}
            dense = similarity_cache[(search_text, depth)]
        keyword: dict[str, float] = {}
        if variant.mode != "dense":
            key = (variant.tokenizer, search_text)
            if key not in keyword_cache:
                keyword_cache[key] = {ids[d]: v for d, v in indexes[variant.tokenizer].scores(search_text).items()}
            keyword = keyword_cache[key]
        ranked = ranking.fuse(plan, dense=dense, keyword=keyword, created_at=created_at, now=q.asked_at,
                              k=K, mode=variant.mode, config=variant.config, kinds=stored.kinds,
                              exchanges=stored.exchanges, speakers=stored.speakers, dated=stored.dated)
        rows = [r for r, _ in ranked]
        order = [turn_of[row_of[r]] for r in rows]
        outcome.scores[variant.name][q.id] = _score_rows(rows, order, q, shows)
        if variant.config is SHIPPED and variant.mode == "hybrid" and variant.tokenizer == "default":
            hits = await memory.search(user, q.text, k=K, scope=None)
            outcome.checked += 1
            outcome.agree += [h.id for h in hits] == rows
    if timing and len(outcome.scores[variants[0].name]) % TIME_EVERY == 0:
        await _time_search(memory, user, q, outcome)


async def _query_vector(recorder: RecordingEmbedder, text: str) -> np.ndarray:
    """The query's vector, from the model the store uses (computed once per text)."""
    key = ranking.search_form(" ".join(text.split()))
    if key not in recorder.vectors:
        await asyncio.to_thread(recorder.embed, [" ".join(text.split())])
    return recorder.vectors[key]


def _score_rows(rows: list[str], order: list[str], q: Question,
                shows: Callable[[str], bool]) -> tuple[float, float, float, float]:
    good = [n for n, (row, tid) in enumerate(zip(rows, order, strict=True), start=1)
            if tid in q.evidence and shows(row)]

    def recall(k: int) -> float:
        found = {order[n - 1] for n in good if n <= k}
        if q.match == "any":
            return 1.0 if found else 0.0
        return len(found) / len(set(q.evidence))

    return recall(1), recall(5), recall(10), (1.0 / good[0] if good else 0.0)


async def _time_search(memory: UserMemory, user: str, q: Question, outcome: Outcome) -> None:
    """The store's own search, hybrid vs dense, each on a text it has not embedded yet
    (the suffixes are BM25 stop words), alternating which goes first."""
    modes = ["hybrid", "dense"] if len(outcome.latency_ms.get("hybrid", ())) % 2 == 0 else ["dense", "hybrid"]
    for mode, suffix in zip(modes, (" please", " thanks"), strict=True):
        memory.search_mode = mode
        started = time.perf_counter()
        await memory.search(user, q.text + suffix, k=5, scope=None)
        outcome.latency_ms.setdefault(mode, []).append((time.perf_counter() - started) * 1000.0)
        started = time.perf_counter()
        await memory.search(user, q.text + suffix, k=5, scope=None)
        outcome.latency_ms.setdefault(f"{mode}, query vector known", []).append(
            (time.perf_counter() - started) * 1000.0)
    memory.search_mode = "hybrid"


# -- reporting -----------------------------------------------------------------------------


def _mean(values: list[tuple[float, ...]], i: int) -> float:
    return statistics.fmean(v[i] for v in values) if values else float("nan")


def _cells(per: dict[str, tuple[float, ...]], questions: list[Question]) -> str:
    values = [per[q.id] for q in questions]
    return f"{_mean(values, 0):.2f} {_mean(values, 1):.2f} {_mean(values, 2):.2f} {_mean(values, 3):.3f}"


def print_table(title: str, dataset: Dataset, outcome: Outcome, names: list[str]) -> None:
    splits = {s: [q for q in dataset.questions if q.split == s] for s in ("tune", "held-out")}
    kinds = sorted({q.kind for q in dataset.questions})
    by_kind = {k: [q for q in dataset.questions if q.kind == k] for k in kinds}
    print(f"\n## {title}  (tune n={len(splits['tune'])}, held-out n={len(splits['held-out'])}; "
          + ", ".join(f"{k} n={len(v)}" for k, v in by_kind.items()) + ")")
    print(f"{'variant':44} | tune: R@1  R@5  R@10 MRR   | held-out: R@1 R@5 R@10 MRR | "
          + " ".join(f"{k[:7]:>7}" for k in kinds) + "  (R@5 by kind, all splits)")
    for name in names:
        per = outcome.scores[name]
        kind_cells = " ".join(f"{_mean([per[q.id] for q in by_kind[k]], 1):7.2f}" for k in kinds)
        print(f"{name:44} | {_cells(per, splits['tune']):24} | {_cells(per, splits['held-out']):24} | {kind_cells}")


def print_grid(datasets: list[Dataset], outcomes: list[Outcome], names: list[str], top: int = 15) -> None:
    """The grid ranked on the TUNING splits only: by the worse of the two sets' gain in R@5
    over the previous defaults, then by the mean tuning MRR."""
    def tune(d: Dataset, o: Outcome, name: str) -> tuple[float, float]:
        values = [o.scores[name][q.id] for q in d.questions if q.split == "tune"]
        return _mean(values, 1), _mean(values, 3)

    base = [tune(d, o, "previous defaults (BM25 0.2, k=10, time)")[0] for d, o in zip(datasets, outcomes, strict=True)]
    rows = []
    for name in names:
        cells = [tune(d, o, name) for d, o in zip(datasets, outcomes, strict=True)]
        gain = min(r5 - b for (r5, _), b in zip(cells, base, strict=True))
        rows.append((gain, statistics.fmean(m for _, m in cells), name, cells))
    rows.sort(key=lambda r: (-r[0], -r[1], r[2]))
    print(f"\n## Fusion grid, {len(rows)} settings, ranked on the tuning splits only (top {top})")
    print(f"{'setting':44} | " + " | ".join(f"{d.name} tune R@5  MRR" for d in datasets) + " | worse gain in R@5")
    for gain, _, name, cells in rows[:top]:
        print(f"{name:44} | " + " | ".join(f"{r5:13.2f} {m:.3f}" for r5, m in cells) + f" | {gain:+.2f}")


def _split_r5_mrr(dataset: Dataset, outcome: Outcome, name: str, split: str) -> tuple[float, float]:
    values = [outcome.scores[name][q.id] for q in dataset.questions if q.split == split]
    return _mean(values, 1), _mean(values, 3)


def print_side_by_side(datasets: list[Dataset], results: dict[tuple[str, str], Outcome], names: list[str]) -> None:
    """Both datasets in one table (the bot's text unit): R@5 / MRR per split."""
    heads = [f"{d.name} {split}" for d in datasets for split in ("tune", "held-out")]
    print("\n## Both datasets side by side (text unit = the bot's): R@5 / MRR")
    print(f"{'variant':44} | " + " | ".join(f"{h:>14}" for h in heads))
    for name in names:
        cells = [_split_r5_mrr(d, results[(d.name, "bot's unit")], name, split)
                 for d in datasets for split in ("tune", "held-out")]
        print(f"{name:44} | " + " | ".join(f"{r5:6.3f} / {m:.3f}" for r5, m in cells))


def print_targets(datasets: list[Dataset], results: dict[tuple[str, str], Outcome]) -> None:
    """The targets, measured in this run: hard hybrid R@5 >= the better single signal + 0.08 on
    both splits; easy hybrid R@5 no lower than before the reply items (the message alone
    stored, today's hybrid); the store's hybrid search p95 <= 1.5 x its dense one."""
    tuned, dense, bm25 = "TUNED hybrid (shipped defaults)", "plain dense", "plain BM25"
    print("\n## Targets (this run)")
    by_name = {d.name: d for d in datasets}
    hard = results[("hard", "bot's unit")]
    for split in ("tune", "held-out"):
        got = _split_r5_mrr(by_name["hard"], hard, tuned, split)[0]
        best = max(_split_r5_mrr(by_name["hard"], hard, n, split)[0] for n in (dense, bm25))
        print(f"TARGET hard {split:8}: hybrid R@5 {got:.3f} - best of plain dense / BM25 {best:.3f} = "
              f"{got - best:+.3f} (>= +0.080): {'MET' if got - best >= 0.08 - 1e-9 else 'NOT MET'}")
    easy = results[("easy", "bot's unit")]
    before = results[("easy", BEFORE_UNIT)]
    for split in ("tune", "held-out"):
        got = _split_r5_mrr(by_name["easy"], easy, tuned, split)[0]
        was = _split_r5_mrr(by_name["easy"], before, "today's hybrid (BM25 0.1, k=10, time)", split)[0]
        print(f"TARGET easy {split:8}: hybrid R@5 {got:.3f} vs before (message alone, today's hybrid) {was:.3f}: "
              f"{'MET (no loss)' if got >= was - 1e-9 else 'NOT MET (loss)'}")
    for d in datasets:  # what the bot writes now (speaker, dates, before) against its items before
        for split in ("tune", "held-out"):
            was = _split_r5_mrr(d, results[(d.name, "bot's unit")], tuned, split)[0]
            got = _split_r5_mrr(d, results[(d.name, WHO_WHEN_UNIT)], tuned, split)[0]
            print(f"TARGET {d.name} {split:8}: hybrid R@5 {got:.3f} on the items the bot writes now vs {was:.3f} "
                  f"on its items before: {'MET (no loss)' if got >= was - 1e-9 else 'NOT MET (loss)'}")
    for d in datasets:
        lat = results[(d.name, "bot's unit")].latency_ms
        ratio = percentile(lat["hybrid"], 95) / percentile(lat["dense"], 95)
        print(f"TARGET {d.name} search p95: hybrid {percentile(lat['hybrid'], 95):.1f} ms / dense {percentile(lat['dense'], 95):.1f} ms "
              f"= {ratio:.2f}x (<= 1.5x): {'MET' if ratio <= 1.5 else 'NOT MET'}")


def print_latency(name: str, outcome: Outcome) -> None:
    lat = outcome.latency_ms
    if not lat:
        return
    print(f"\n## {name}: the store's own search (k=5), {len(lat['hybrid'])} queries per mode, same run")
    for mode in ("dense", "hybrid", "dense, query vector known", "hybrid, query vector known"):
        print(f"{mode:28} p50 {percentile(lat[mode], 50):6.1f} ms  p95 {percentile(lat[mode], 95):6.1f} ms")
    print(f"hybrid / dense p95: {percentile(lat['hybrid'], 95) / percentile(lat['dense'], 95):.2f} (query embedded), "
          f"{percentile(lat['hybrid, query vector known'], 95) / percentile(lat['dense, query vector known'], 95):.2f} "
          f"(vector known)")


LOCOMO_UNIT = "speaker, window 2 (keyword) + dates"  # what the bot's items carry (bench/locomo_eval.py)


def locomo_variants() -> list[locomo_eval.Variant]:
    """Baselines, the ranking before this round, each idea alone on it, the shipped ranking on
    the chosen unit, and each idea taken out of it."""
    v = locomo_eval.Variant
    ref, alone, chosen = locomo_eval.REFERENCE, "turn alone", LOCOMO_UNIT
    out = [v(f"plain dense, {ref}", ref, "dense", PLAIN), v(f"plain BM25, {ref}", ref, "keyword", PLAIN),
           v("plain dense, turn alone", alone, "dense", PLAIN), v("plain BM25, turn alone", alone, "keyword", PLAIN),
           v("plain dense, speaker", "speaker", "dense", PLAIN), v("plain BM25, speaker", "speaker", "keyword", PLAIN),
           v(f"before: shipped hybrid, {ref}", ref, "hybrid", BEFORE_LOCOMO),
           v("before: shipped hybrid, turn alone", alone, "hybrid", BEFORE_LOCOMO)]
    for unit in locomo_eval.UNITS:
        if unit not in (ref, alone):
            out.append(v(f"before + unit: {unit}", unit, "hybrid", BEFORE_LOCOMO))
    out += [v("before + speaker, + speaker bonus 0.2", "speaker", "hybrid", replace(BEFORE_LOCOMO, speaker_bonus=0.2)),
            v("before + speaker + dates, + dated bonus 0.3", "speaker + dates", "hybrid",
              replace(BEFORE_LOCOMO, dated_bonus=0.3)),
            v("before + speaker, BM25 weight 2 when named", "speaker", "hybrid",
              replace(BEFORE_LOCOMO, name_keyword_weight=2.0)),
            v("before + speaker, + query expansion", "speaker", "hybrid", BEFORE_LOCOMO, expand=True),
            v("first round (shipped before this one)", chosen, "hybrid", ROUND1),
            v("first round - dates in item (dated bonus idle)", "speaker, window 2 (keyword)", "hybrid", ROUND1),
            v("first round - window", "speaker + dates", "hybrid", ROUND1),
            v("first round, window 1", "speaker, window 1 (keyword)", "hybrid", ROUND1),
            v("first round - speaker bonus", chosen, "hybrid", replace(ROUND1, speaker_bonus=0.0)),
            v("first round - dated bonus", chosen, "hybrid", replace(ROUND1, dated_bonus=0.0)),
            v("first round + query expansion", chosen, "hybrid", ROUND1, expand=True),
            v("first round, fusion=rrf", chosen, "hybrid", replace(ROUND1, fusion="rrf")),
            v("SHIPPED (this round)", chosen, "hybrid", SHIPPED),
            v("SHIPPED, window 3", "speaker, window 3 (keyword) + dates", "hybrid", SHIPPED),
            v("SHIPPED - speaker bonus", chosen, "hybrid", replace(SHIPPED, speaker_bonus=0.0)),
            v("SHIPPED - dated bonus", chosen, "hybrid", replace(SHIPPED, dated_bonus=0.0))]
    out += [v(f"SHIPPED, {name}", chosen, "hybrid", replace(SHIPPED, **change)) for name, change in ROUND2_CHANGES.items()]
    return out


async def run_locomo(path: str, embedder: RecordingEmbedder, folder: Path) -> None:
    variants = locomo_variants()
    print(f"\n# LoCoMo from {path}; load average at the start {_load()}")
    started = time.perf_counter()
    out = await locomo_eval.run(path, variants, embedder, LOCOMO_UNIT, SHIPPED, folder)
    print(f"\n[locomo] {len(variants)} variants in {time.perf_counter() - started:.0f} s; the store's own search "
          f"gives the same top {locomo_eval.K} on {out.agree}/{out.checked} questions")
    locomo_eval.print_tables(out, [v.name for v in variants])
    lat = out.latency_ms
    print(f"\n## locomo: the store's own search (k=5), {len(lat['hybrid'])} queries per mode, same run")
    for mode in ("dense", "hybrid"):
        print(f"{mode:28} p50 {percentile(lat[mode], 50):6.1f} ms  p95 {percentile(lat[mode], 95):6.1f} ms")
    locomo_eval.print_targets(out, "SHIPPED (this round)", [v.name for v in variants if v.name.startswith("plain")])
    print(f"# load average at the end {_load()}")


def _load() -> str:
    """The machine's 1, 5 and 15 minute load averages (it is shared: figures depend on them)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def run(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    if args.locomo_only:
        embedder = RecordingEmbedder(LocalEmbedder())
        embedder.load()
        with tempfile.TemporaryDirectory(prefix="retrieval-eval-") as tmp:
            await run_locomo(args.locomo, embedder, Path(tmp))
        return
    datasets = [easy_dataset(), hard_dataset()]
    for d in datasets:
        print(f"# {d.name}: {len(d.turns)} users, {sum(len(t) for t in d.turns.values())} turns, "
              f"{len(d.questions)} questions ({', '.join(f'{k} {v}' for k, v in sorted(Counter(q.kind for q in d.questions).items()))})")
    print(f"# context metadata: {'embedded by the store' if NATIVE_CONTEXT else 'folded into the stored text by the eval (store has no context support yet)'}")
    embedder = RecordingEmbedder(LocalEmbedder())
    started = time.perf_counter()
    embedder.load()
    print(f"# embedding model loaded in {time.perf_counter() - started:.1f} s")
    main = main_variants()
    grid = [] if args.quick else grid_variants()
    variants = main + second_round_variants() + scaling_variants() + ([] if args.quick else ablation_variants() + grid)
    units = ["bot's unit", INDEX_ONLY_UNIT, WHO_WHEN_UNIT, BEFORE_UNIT] if args.quick else list(UNITS)
    results: dict[tuple[str, str], Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="retrieval-eval-") as tmp:
        for unit in units:
            for d in datasets:
                if args.quick and unit == BEFORE_UNIT and d.name != "easy":
                    continue  # --quick: "before" is needed for the easy set's target only
                started = time.perf_counter()
                chosen = variants if unit == "bot's unit" else main + (
                    scaling_variants() if unit == WHO_WHEN_UNIT else [])
                results[(d.name, unit)] = await evaluate(d, unit, chosen, embedder, Path(tmp),
                                                         timing=unit == "bot's unit")
                out = results[(d.name, unit)]
                print(f"[{d.name} / {unit}] {len(chosen)} variants in {time.perf_counter() - started:.0f} s; "
                      f"the store's own search gives the same top {K} on {out.agree}/{out.checked} questions")
    print_side_by_side(datasets, results, [v.name for v in main + second_round_variants() + scaling_variants()])
    for d in datasets:
        print_table(f"{d.name}: main (text unit = the bot's)", d, results[(d.name, "bot's unit")],
                    [v.name for v in main])
    for d in datasets:
        print_latency(d.name, results[(d.name, "bot's unit")])
    print_targets(datasets, results)
    if args.locomo:
        with tempfile.TemporaryDirectory(prefix="retrieval-eval-locomo-") as tmp:
            await run_locomo(args.locomo, embedder, Path(tmp))
    for d in datasets:
        print_table(f"{d.name}: text unit = {WHO_WHEN_UNIT}", d, results[(d.name, WHO_WHEN_UNIT)],
                    [v.name for v in main + scaling_variants()])
    if args.quick:
        print_table(f"easy: text unit = {BEFORE_UNIT}", datasets[0], results[("easy", BEFORE_UNIT)],
                    [v.name for v in main])
        for d in datasets:
            print_table(f"{d.name}: text unit = {INDEX_ONLY_UNIT}", d, results[(d.name, INDEX_ONLY_UNIT)],
                        [v.name for v in main])
        return
    for d in datasets:
        print_table(f"{d.name}: ablations (text unit = the bot's)", d, results[(d.name, "bot's unit")],
                    [v.name for v in variants if v not in grid])
    print_grid(datasets, [results[(d.name, "bot's unit")] for d in datasets], [v.name for v in grid])
    for unit in units[1:]:
        if unit == WHO_WHEN_UNIT:
            continue  # printed above
        for d in datasets:
            print_table(f"{d.name}: text unit = {unit}", d, results[(d.name, unit)], [v.name for v in main])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="main and second-round variants, the bot's text unit (and the easy set's before unit)")
    parser.add_argument("--locomo", metavar="PATH",
                        help="also LoCoMo (the public file, or a folder holding it): bench/locomo_eval.py")
    parser.add_argument("--locomo-only", action="store_true", help="with --locomo: LoCoMo alone")
    asyncio.run(run(parser.parse_args()))
