"""One search over one user's cached items: dense and BM25 candidates, then `ranking.fuse_keyed`.

Works on the columns of `memory.user_items.UserItems` with numpy: the scope is a row mask,
the dense candidates are the top max(DENSE_CANDIDATES, 10k) rows of the scope by a dot
product of unit vectors, the keyword scores come from the incremental BM25 index over the
scope's rows, and the candidates (plus, when the query has a time window, the scope's items
inside it) go to `ranking.fuse_keyed` as arrays of rows, with which of them are the bot's
replies when the configuration weights those: no Python loop runs over the items, only over
the candidates (their ids, and their kinds). The caller holds the items' lock and runs this in a worker thread.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import math

import numpy as np

from memory import ranking
from memory.user_items import UserItems

__all__ = ["DENSE_CANDIDATES", "SEARCH_MODES", "rank"]

DENSE_CANDIDATES = 50
SEARCH_MODES = ("hybrid", "dense", "keyword")


def rank(items: UserItems, plan: ranking.QueryPlan, search_text: str, vector: np.ndarray | None, *,
         scope: str | None, k: int, mode: str, now: float,
         config: ranking.RankingConfig) -> list[tuple[int, float]]:
    """The best `k` rows of `items` in `scope` for the query, as (row, fused score), best first.

    Ties are broken by id, as `ranking.fuse` breaks them.
    """
    mask = items.mask(scope)
    if not mask.any():
        return []
    none = (np.zeros(0, np.int64), np.zeros(0, np.float64))
    dense = none
    if vector is not None and mode != "keyword":
        rows = np.flatnonzero(mask)
        similarity = items.matrix[rows] @ vector if len(rows) < len(mask) // 4 else (items.matrix @ vector)[rows]
        n = min(len(rows), max(DENSE_CANDIDATES, 10 * k))
        top = np.argpartition(-similarity, n - 1)[:n] if n < len(rows) else np.arange(len(rows))
        dense = (rows[top], similarity[top])
    keyword = items.keywords.scores(search_text, mask) if mode != "dense" else none
    inside = none[0]
    if plan.since is not None or plan.until is not None:
        lo = plan.since if plan.since is not None else -math.inf
        hi = plan.until if plan.until is not None else math.inf
        inside = np.flatnonzero(mask & (items.created >= lo) & (items.created <= hi))
    # Keys for `fuse_keyed`: each candidate's place in id order (a sort of the candidates' ids,
    # not of all the items'), so that ties fall as `fuse` lets them.
    candidates = np.unique(np.concatenate([dense[0], keyword[0], inside]))
    by_id = candidates[np.argsort(np.array([items.ids[r] for r in candidates.tolist()], dtype=str))]
    key_of = np.empty(len(candidates), np.int64)
    key_of[np.searchsorted(candidates, by_id)] = np.arange(len(by_id))

    def keyed(rows: np.ndarray, values: np.ndarray) -> ranking.Keyed:
        return key_of[np.searchsorted(candidates, rows)], values

    replies, exchanges = _kinds_and_exchanges(items, plan, config, candidates, key_of)

    timed = plan.since is not None or plan.until is not None or plan.recency_weight > 0
    keys, scores = ranking.fuse_keyed(plan, dense=keyed(*dense), keyword=keyed(*keyword),
                                      created_at=keyed(candidates, items.created[candidates]) if timed else none,
                                      now=now, k=k, mode=mode, config=config, replies=replies,
                                      exchanges=exchanges)
    return list(zip(by_id[keys].tolist(), scores.tolist(), strict=True))


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
