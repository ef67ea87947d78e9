"""An incremental Okapi BM25 index over one user's items, scored with numpy over a row mask.

Documents are numbered rows (the rows of `memory.semantic.user_items.UserItems`); `add` indexes one
more row and never rebuilds anything. A query is scored over the rows a boolean mask keeps
(the user's live items in one scope): the collection statistics (document count, average
length, each term's document frequency) are taken over those rows only, so the scores equal
those of a BM25 index built from scratch over exactly those items. Deleted rows are simply
masked out; their postings stay until the user's items are next loaded.

`state(keep)` and `KeywordIndex.from_state` turn the index into a few flat arrays and back (for
`memory.semantic.snapshot`), keeping only the rows `keep` marks, renumbered in order, so a forgotten
item's terms are not written out.

Both indexing and querying tokenize with `memory.semantic.ranking.tokenize`, so a change to the
tokenizer applies here too.

Hidden terms (`hidden_terms`): words an item is found by but whose text it must not keep
(another person's message before a short reply: `memory.semantic.item_text`) are indexed as
hashes of their terms, and every query term is looked up as itself and as its hash, the two
counted as one term (so BM25 scores the item as if the words were indexed as they are). The
hash keeps the text unreadable in the stored metadata and `/memory export`; it is unkeyed, so
it hides words from a reader, not from someone who hashes a dictionary to find them.

Why this and not SQLite FTS5 or a library: FTS5's bm25() uses its own idf (log((N-n+0.5)/
(n+0.5)), which goes negative for common terms, where ours is Lucene's non-negative one),
keeps one set of statistics per table where we need them per scope, and would still need our
tokenizer applied before it; `rank_bm25` rebuilds its arrays over the whole corpus (no
incremental add); and the user's vectors already live in this process, so an inverted index
beside them, a few appends per add, is the smallest thing that does the job (docs/decisions/0007-keyword-index.md).

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import hashlib
import math
from array import array
from collections import Counter
from collections.abc import Sequence

import numpy as np

from memory.semantic.ranking import tokenize

__all__ = ["MAX_HIDDEN_TERMS", "KeywordIndex", "hidden_term", "hidden_terms"]

# A term's own cost: its key, its two arrays (headers and over-allocation) and its slots in
# two dicts, measured with tracemalloc (tests/memory/test_keyword_index.py); 100, as it was,
# let a user of many distinct words weigh 2.5-3 times what the items cache counted.
_TERM_BYTES = 360
_POSTING_BYTES = 12  # a row number (int32) and a term frequency (float64)


MAX_HIDDEN_TERMS = 100  # terms of a text kept as hashes (a short message's context: 500 characters)
_HIDDEN_PREFIX = "hid"  # then digits only: the tokenizer and its stemmer leave such a term alone


def hidden_term(term: str) -> str:
    """The indexed stand-in of a tokenized term: a word of letters and digits (64-bit hash)."""
    digest = hashlib.blake2b(term.encode(), digest_size=8, person=b"memory-hidden").digest()
    return f"{_HIDDEN_PREFIX}{int.from_bytes(digest, 'big')}"


def hidden_terms(text: str) -> str:
    """`text`'s terms (the first MAX_HIDDEN_TERMS, in order, repeats kept for BM25's term
    frequency) as hashes, space-separated: what is kept of words indexed but not stored."""
    return " ".join(hidden_term(t) for t in tokenize(text or "")[:MAX_HIDDEN_TERMS])


class KeywordIndex:
    """Okapi BM25 (k1, b) over rows 0..n-1; `scores(query, mask)` gives the matching rows."""

    STATE = ("lengths", "terms", "counts", "docs", "tfs")  # the arrays of `state()`

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._lengths = array("d")
        self._docs: dict[str, array[int] | np.ndarray] = {}
        self._tfs: dict[str, array[float] | np.ndarray] = {}
        self._postings = 0  # kept as rows are added: `nbytes` is read on the event loop, per write

    def __len__(self) -> int:
        return len(self._lengths)

    @property
    def nbytes(self) -> int:
        """About how much memory the postings take."""
        return 8 * len(self._lengths) + _POSTING_BYTES * self._postings + _TERM_BYTES * len(self._docs)

    def add(self, row: int, text: str) -> None:
        """Index `text` as row `row`, which must be the next row (len(self))."""
        if row != len(self._lengths):
            raise ValueError(f"rows are added in order: expected row {len(self._lengths)}, got {row}")
        terms = Counter(tokenize(text or ""))
        self._lengths.append(float(sum(terms.values())))
        self._postings += len(terms)
        for term, tf in terms.items():
            docs = self._docs.get(term)
            if not isinstance(docs, array):  # a new term, or one restored by from_state
                docs = self._docs[term] = array("i", b"" if docs is None else docs.tobytes())
                self._tfs[term] = array("d", self._tfs[term].tobytes() if term in self._tfs else b"")
            docs.append(row)
            self._tfs[term].append(float(tf))

    def state(self, keep: np.ndarray) -> dict[str, np.ndarray]:
        """The postings of the rows `keep` marks (a boolean array over rows), renumbered 0..m-1
        in order, as flat arrays: `lengths`, `terms` (str), `counts` (postings per term), and
        `docs` and `tfs` (every term's postings, one term after another). Every term's postings
        are joined into one array first and filtered there with numpy: a heavy user has tens of
        thousands of terms, and filtering them one by one was Python for each term."""
        keep = np.asarray(keep[: len(self._lengths)], bool)
        renumbered = np.cumsum(keep) - 1
        terms = list(self._docs)
        docs = _joined([self._docs[t] for t in terms], np.int32)
        tfs = _joined([self._tfs[t] for t in terms], np.float64)
        sizes = np.fromiter((len(self._docs[t]) for t in terms), np.int64, len(terms))
        kept = keep[docs]
        # postings kept per term (each term has at least one posting, so no slice is empty)
        counts = np.add.reduceat(kept.astype(np.int64), np.cumsum(sizes) - sizes) if len(terms) else sizes
        present = counts > 0
        return {
            "lengths": np.frombuffer(self._lengths, dtype=np.float64)[keep].copy(),
            "terms": np.array([t for t, p in zip(terms, present.tolist(), strict=True) if p], dtype=str),
            "counts": counts[present],
            "docs": renumbered[docs[kept]].astype(np.int32),
            "tfs": tfs[kept],
        }

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray], *, k1: float = 1.2, b: float = 0.75) -> KeywordIndex:
        """The index `state()` described; ValueError when the arrays do not fit together."""
        lengths = np.asarray(state["lengths"], np.float64)
        counts = np.asarray(state["counts"], np.int64)
        docs = np.asarray(state["docs"], np.int32)
        tfs = np.asarray(state["tfs"], np.float64)
        terms = [str(t) for t in np.asarray(state["terms"]).tolist()]
        if (len(terms) != len(counts) or int(counts.sum()) != len(docs) or len(docs) != len(tfs)
                or (len(docs) and (int(docs.min()) < 0 or int(docs.max()) >= len(lengths)))
                or (len(counts) and int(counts.min()) <= 0)):
            raise ValueError("keyword index state: the arrays do not fit together")
        index = cls(k1=k1, b=b)
        index._lengths = array("d", lengths.tobytes())
        index._postings = len(docs)
        # read-only numpy views until `add` first appends to a term (then it becomes an array)
        ends = np.cumsum(counts).tolist()
        starts = [0, *ends[:-1]] if ends else []
        index._docs = {term: docs[a:b] for term, a, b in zip(terms, starts, ends, strict=True)}
        index._tfs = {term: tfs[a:b] for term, a, b in zip(terms, starts, ends, strict=True)}
        return index

    def scores(self, text: str, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, BM25 scores) of the rows in `mask` that share a query term with `text`.

        `mask` is a boolean array over rows 0..len(self)-1: the documents of this search.
        """
        query = Counter(tokenize(text or ""))
        if not query or not len(self._lengths):
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        lengths = np.frombuffer(self._lengths, dtype=np.float64)
        mask = mask[: len(lengths)]
        count = int(np.count_nonzero(mask))
        total = float(lengths[mask].sum()) if count else 0.0
        average = total / count if count and total else 1.0
        acc = np.zeros(len(lengths), np.float64)
        hit = np.zeros(len(lengths), bool)
        for term, qtf in query.items():
            postings = self._postings_of(term)
            if postings is None:
                continue
            docs, tf = postings
            keep = mask[docs]
            rows = docs[keep]
            if not len(rows):
                continue
            tf = tf[keep]
            idf = math.log(1.0 + (count - len(rows) + 0.5) / (len(rows) + 0.5))
            norm = self.k1 * (1.0 - self.b + self.b * lengths[rows] / average)
            acc[rows] += idf * tf * (self.k1 + 1.0) / (tf + norm) * qtf
            hit[rows] = True
        rows = np.flatnonzero(hit)
        return rows, acc[rows]

    def _postings_of(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, term frequencies) of `term`, its hidden stand-in's counted as the term itself:
        one term to BM25 (its idf over the rows holding either), as if the hidden words were
        indexed as they are."""
        found = [(self._docs[t], self._tfs[t]) for t in (term, hidden_term(term)) if t in self._docs]
        if not found:
            return None
        if len(found) == 1:
            return np.frombuffer(found[0][0], dtype=np.int32), np.frombuffer(found[0][1], dtype=np.float64)
        docs = np.concatenate([np.frombuffer(d, dtype=np.int32) for d, _ in found])
        tfs = np.concatenate([np.frombuffer(f, dtype=np.float64) for _, f in found])
        rows, where = np.unique(docs, return_inverse=True)
        return rows.astype(np.int32), np.bincount(where, weights=tfs, minlength=len(rows))


def _joined(parts: Sequence[array[int] | array[float] | np.ndarray], dtype: type) -> np.ndarray:
    """Arrays of ``dtype`` one after another (an empty array for none)."""
    return np.concatenate([np.frombuffer(p, dtype=dtype) for p in parts]) if parts else np.zeros(0, dtype)
