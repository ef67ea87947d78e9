"""One server's passages searched in this process: BM25 and dense similarity, fused.

`PassageIndex` holds a server's passages (with their document's title and section), their
vectors as one float32 matrix, and a `memory.semantic.keyword_index.KeywordIndex` over their
indexed text; `search` ranks them by "dense", "keyword" or "hybrid" (the memory's own
`memory.semantic.ranking.fuse_keyed`, with `DOCS_RANKING`: no time, speakers or exchanges,
which documents do not have). A server's passages are few (bounded by its limits), so the
whole index is built from the stores when first searched and rebuilt after a change.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory.semantic.keyword_index import KeywordIndex
from memory.semantic.ranking import RankingConfig, fuse_keyed, plan_query
from memory.semantic.search import similarities  # einsum, not BLAS: the memory's reason holds here

__all__ = ["DOCS_RANKING", "DocHit", "IndexedPassage", "PassageIndex"]

# The winner of bench/docs_eval.py on its tuning half (bench/README.md, "Server documents";
# docs/decisions/0030-server-documents.md): BM25 weighs a fifth of the dense similarity, for
# every question (a higher weight for questions naming things changed nothing there).
DOCS_RANKING = RankingConfig(
    fusion="sum", keyword_weight=0.2, name_keyword_weight=None, current_keyword_weight=None,
    asked_keyword_weight=None, reply_weight=1.0, asked_reply_weight=1.0, one_per_exchange=False,
    window_bonus=0.0, recency_boost=0.0, parse_time=False, speaker_bonus=0.0, dated_bonus=0.0)


@dataclass(frozen=True, slots=True)
class IndexedPassage:
    """A passage as the index keeps it."""

    id: str
    document_id: str
    title: str
    section: str
    text: str


@dataclass(frozen=True, slots=True)
class DocHit:
    """One passage found: its document's id and title, its section, its text, and its score."""

    document_id: str
    title: str
    section: str
    text: str
    score: float


class PassageIndex:
    """The passages of one server, searchable at once (built whole, never changed)."""

    def __init__(self, passages: Sequence[IndexedPassage], vectors: np.ndarray) -> None:
        if len(passages) != len(vectors):
            raise ValueError(f"{len(passages)} passages but {len(vectors)} vectors")
        self._passages = list(passages)
        self._vectors = np.asarray(vectors, np.float32)
        self._keywords = KeywordIndex()
        for row, passage in enumerate(self._passages):
            self._keywords.add(row, f"{passage.title}\n{passage.section}\n{passage.text}")
        self._all = np.ones(len(self._passages), bool)

    def __len__(self) -> int:
        return len(self._passages)

    def search(self, query: str, vector: np.ndarray | None, *, k: int = 5, mode: str = "hybrid",
               config: RankingConfig = DOCS_RANKING) -> list[DocHit]:
        """The best ``k`` passages for ``query`` (``vector``: its embedding; None only in the
        "keyword" mode), best first."""
        if not self._passages or k <= 0:
            return []
        rows = np.arange(len(self._passages), dtype=np.int64)
        dense = (np.zeros(0, np.int64), np.zeros(0))
        if mode != "keyword":
            if vector is None:
                raise ValueError(f"mode {mode!r} needs the query's vector")
            dense = (rows, similarities(self._vectors, rows, np.asarray(vector, np.float32)))
        keyword = self._keywords.scores(query, self._all) if mode != "dense" else (np.zeros(0, np.int64), np.zeros(0))
        plan = plan_query(query, 0.0, config)
        keys, scores = fuse_keyed(plan, dense=dense, keyword=keyword,
                                  created_at=(np.zeros(0, np.int64), np.zeros(0)), now=0.0, k=k,
                                  mode=mode, config=config)
        return [DocHit(p.document_id, p.title, p.section, p.text, float(s))
                for p, s in ((self._passages[int(key)], score) for key, score in zip(keys, scores, strict=True))]
