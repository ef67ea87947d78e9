"""One search over one user's cached items: dense and BM25 candidates, then `ranking.fuse_keyed`.

Works on the columns of `memory.semantic.user_items.UserItems` with numpy: the scope is a row mask,
the dense candidates are the top max(`RankingConfig.dense_candidates`, 10k) rows of the scope by a dot
product of unit vectors, the keyword scores come from the incremental BM25 index over the
scope's rows, and the candidates (plus, when the query has a time window, the scope's items
inside it) go to `ranking.fuse_keyed` as arrays of rows, with which of them are the bot's
replies when the configuration weights those: no Python loop runs over the items, only over
the candidates (their ids, and their kinds). The caller holds the items' lock and runs this in a worker thread.

A search comes in two halves: `prepare` does what needs no query vector (the mask, BM25, the
window, the id order of those rows), so that it can run while the query is embedded, and
`finish` adds the dense candidates and fuses; `finish` prepares again when the items changed
in between, so the two give what `rank` (both at once) gives over the items as they are then.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memory.semantic import ranking
from memory.semantic.user_items import UserItems

__all__ = ["SEARCH_MODES", "Prepared", "finish", "prepare", "rank", "similarities"]

SEARCH_MODES = ("hybrid", "dense", "keyword")


@dataclass(frozen=True, slots=True)
class Prepared:
    """What one search needs that does not depend on the query's vector (`prepare`): the
    scope's rows as a mask, the BM25 matches, the rows inside the plan's time window, and these
    rows (`rows`, ascending) in id order (`by_id`, with their ids sorted: `sorted_ids`)."""

    scope: str | None
    mask: np.ndarray
    keyword: ranking.Keyed
    inside: np.ndarray
    rows: np.ndarray
    by_id: np.ndarray
    sorted_ids: np.ndarray


def prepare(items: UserItems, plan: ranking.QueryPlan, search_text: str, *, scope: str | None, mode: str) -> Prepared:
    """The vector-free part of a search over `items` as they are now (the caller holds their
    lock): run while the query is embedded, then `finish` it."""
    mask = items.mask(scope)
    keyword = items.keywords.scores(search_text, mask) if mode != "dense" and mask.any() else _NONE
    inside = _NONE[0]
    if (plan.since is not None or plan.until is not None) and mask.any():
        lo = plan.since if plan.since is not None else -math.inf
        hi = plan.until if plan.until is not None else math.inf
        inside = np.flatnonzero(mask & (items.created >= lo) & (items.created <= hi))
    rows = np.unique(np.concatenate([keyword[0], inside]))
    ids = _ids_of(items, rows)
    order = np.argsort(ids)
    return Prepared(scope, mask, keyword, inside, rows, rows[order], ids[order])


def finish(items: UserItems, prepared: Prepared, plan: ranking.QueryPlan, search_text: str,
           vector: np.ndarray | None, *, k: int, mode: str, now: float,
           config: ranking.RankingConfig) -> list[tuple[int, float]]:
    """The best `k` rows of `items` in the prepared scope, as (row, fused score), best first:
    the same as `rank` over `items` as they are now (the caller holds their lock). When rows
    were added or removed since `prepare`, it is prepared again first."""
    mask = items.mask(prepared.scope)
    if not np.array_equal(mask, prepared.mask):  # unequal lengths are unequal too
        prepared = prepare(items, plan, search_text, scope=prepared.scope, mode=mode)
    if not mask.any():
        return []
    dense = _NONE
    if vector is not None and mode != "keyword":
        rows = np.flatnonzero(mask)
        similarity = similarities(items.matrix, rows, vector)
        n = min(len(rows), max(config.dense_candidates, 10 * k))
        top = np.argpartition(-similarity, n - 1)[:n] if n < len(rows) else np.arange(len(rows))
        dense = (rows[top], similarity[top])
    # Keys for `fuse_keyed`: each candidate's place in id order, so that ties fall as `fuse`
    # lets them; `prepare` sorted the BM25 and window rows by id, the dense ones join them here.
    extra = np.unique(dense[0][~np.isin(dense[0], prepared.rows, assume_unique=True)])
    extra_ids = _ids_of(items, extra)
    order = np.argsort(extra_ids)
    by_id = np.insert(prepared.by_id, np.searchsorted(prepared.sorted_ids, extra_ids[order]), extra[order])
    candidates = np.sort(by_id)
    key_of = np.empty(len(candidates), np.int64)
    key_of[np.searchsorted(candidates, by_id)] = np.arange(len(by_id))

    def keyed(rows: np.ndarray, values: np.ndarray) -> ranking.Keyed:
        return key_of[np.searchsorted(candidates, rows)], values

    replies, exchanges = _kinds_and_exchanges(items, plan, config, candidates, key_of)
    said_by_named, dated = _who_and_when(items, plan, config, candidates, key_of)

    timed = plan.since is not None or plan.until is not None or plan.recency_weight > 0
    keys, scores = ranking.fuse_keyed(plan, dense=keyed(*dense), keyword=keyed(*prepared.keyword),
                                      created_at=keyed(candidates, items.created[candidates]) if timed else _NONE,
                                      now=now, k=k, mode=mode, config=config, replies=replies,
                                      exchanges=exchanges, said_by_named=said_by_named, dated=dated)
    return list(zip(by_id[keys].tolist(), scores.tolist(), strict=True))


def rank(items: UserItems, plan: ranking.QueryPlan, search_text: str, vector: np.ndarray | None, *,
         scope: str | None, k: int, mode: str, now: float,
         config: ranking.RankingConfig) -> list[tuple[int, float]]:
    """The best `k` rows of `items` in `scope` for the query, as (row, fused score), best first:
    `prepare` then `finish` at once. Ties are broken by id, as `ranking.fuse` breaks them."""
    prepared = prepare(items, plan, search_text, scope=scope, mode=mode)
    return finish(items, prepared, plan, search_text, vector, k=k, mode=mode, now=now, config=config)


_NONE = (np.zeros(0, np.int64), np.zeros(0, np.float64))


def _ids_of(items: UserItems, rows: np.ndarray) -> np.ndarray:
    return np.array([items.ids[r] for r in rows.tolist()], dtype=str)


def similarities(matrix: np.ndarray, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each of these rows' dot product with `vector`. By einsum, not BLAS: OpenBLAS's worker
    thread spins on a core after each call, and on the 2-core target that slowed the rest of
    the search and the query's embedding more than its second thread sped up this product
    (docs/decisions/0017-search-beside-the-embedding.md). Rows are gathered first only when they are few."""
    if len(rows) < len(matrix) // 4:
        return np.einsum("ij,j->i", matrix[rows], vector)
    return np.einsum("ij,j->i", matrix, vector)[rows]


def _kinds_and_exchanges(items: UserItems, plan: ranking.QueryPlan, config: ranking.RankingConfig,
                         candidates: np.ndarray, key_of: np.ndarray) -> tuple[np.ndarray | None, ranking.Keyed | None]:
    """What `fuse_keyed` needs of the candidates' metadata, when `config` uses it: the keys of
    the bot's replies (kind "reply"), and (keys, exchange codes) by `ranking.exchange_of`
    (the columns `UserItems` keeps: no item's metadata is read)."""
    weighs_replies = (config.asked_reply_weight if plan.about_reply else config.reply_weight) != 1.0
    if not (weighs_replies or config.one_per_exchange) or not len(candidates):
        return None, None
    replies = key_of[items.replies[candidates]] if weighs_replies else None
    exchanges = None
    if config.one_per_exchange:
        codes = items.exchanges[candidates]
        has = codes >= 0
        if has.any():
            exchanges = (key_of[has], codes[has].astype(np.int64))
    return replies, exchanges


def _who_and_when(items: UserItems, plan: ranking.QueryPlan, config: ranking.RankingConfig,
                  candidates: np.ndarray, key_of: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The keys of the candidates said by a person the question names (metadata "speaker",
    `ranking.said_by`, asked once per distinct speaker) and of those naming a date (metadata
    "dates"), only when the plan and `config` use them (a question naming someone, asking
    when): `UserItems.who_and_dated` reads them as columns, decoding a row's metadata once."""
    who = (config.speaker_bonus > 0 or config.speaker_keyword_weight is not None) and bool(plan.named)
    when = config.dated_bonus > 0 and plan.asks_when
    if not (who or when) or not len(candidates):
        return None, None
    codes, dated, speakers = items.who_and_dated(candidates)
    named = [code for name, code in speakers.items() if ranking.said_by(plan, name)] if who else []
    said = np.flatnonzero(np.isin(codes, named)) if named else np.zeros(0, np.int64)
    return key_of[said], key_of[np.flatnonzero(dated) if when else np.zeros(0, np.int64)]
