"""One search over one user's cached items: dense and BM25 candidates, then `ranking.fuse`.

Works on the columns of `memory.user_items.UserItems` with numpy: the scope is a row mask,
the dense candidates are the top max(DENSE_CANDIDATES, 10k) rows of the scope by a dot
product of unit vectors, the keyword scores come from the incremental BM25 index over the
scope's rows, and only the candidates (plus, when the query has a time window, the scope's
items inside it) are handed to `fuse`: no Python loop runs over every item. The caller holds
the items' lock and runs this in a worker thread.

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
    """The best `k` rows of `items` in `scope` for the query, as (row, fused score), best first."""
    mask = items.mask(scope)
    if not mask.any():
        return []
    ids = items.ids
    dense: dict[str, float] = {}
    if vector is not None and mode != "keyword":
        rows = np.flatnonzero(mask)
        similarity = items.matrix[rows] @ vector if len(rows) < len(ids) // 4 else (items.matrix @ vector)[rows]
        n = min(len(rows), max(DENSE_CANDIDATES, 10 * k))
        top = np.argpartition(-similarity, n - 1)[:n] if n < len(rows) else np.arange(len(rows))
        dense = dict(zip([ids[r] for r in rows[top].tolist()], similarity[top].tolist(), strict=True))
    keyword: dict[str, float] = {}
    if mode != "dense":
        rows, scores = items.keywords.scores(search_text, mask)
        keyword = dict(zip([ids[r] for r in rows.tolist()], scores.tolist(), strict=True))
    return _fused(items, plan, mask, dense, keyword, k=k, mode=mode, now=now, config=config)


def _fused(items: UserItems, plan: ranking.QueryPlan, mask: np.ndarray, dense: dict[str, float],
           keyword: dict[str, float], *, k: int, mode: str, now: float,
           config: ranking.RankingConfig) -> list[tuple[int, float]]:
    created = items.created
    candidates = set(dense) | set(keyword)
    timed = [items.row(i) for i in candidates]
    if plan.since is not None or plan.until is not None:
        lo = plan.since if plan.since is not None else -math.inf
        hi = plan.until if plan.until is not None else math.inf
        timed.extend(np.flatnonzero(mask & (created >= lo) & (created <= hi)).tolist())
    created_at = {items.ids[r]: float(created[r]) for r in timed}
    ranked = ranking.fuse(plan, dense=dense, keyword=keyword, created_at=created_at, now=now, k=k,
                          mode=mode, config=config)
    return [(items.row(i), score) for i, score in ranked]
