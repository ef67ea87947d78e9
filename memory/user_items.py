"""One user's items held in this process as columns: the arrays a search works on.

`UserItems` keeps, row by row, each item's id, text, metadata, unit vector (a float32 matrix
that grows by doubling, so an add copies nothing but the new rows most of the time), creation
time and scope (numpy arrays), whether it is still alive, and an incremental BM25 index
(`memory.keyword_index`) over what it is indexed by (`memory.validation.indexed_text`). An add
appends rows, a delete marks them dead, a forget of a scope marks that scope's rows dead:
nothing is rebuilt. `live_columns()` and `UserItems.restored` take the live rows out as flat
columns and back (`memory.snapshot` keeps them on disk). Not thread-safe by itself: callers hold `lock` around every use.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np

from memory.chroma_backend import StoredItem
from memory.keyword_index import KeywordIndex
from memory.validation import indexed_text

__all__ = ["UserItems"]

_ROW_OVERHEAD = 400  # bytes per item besides its vector, text and postings: list slots, dicts, ids


def created_of(item: StoredItem) -> float:
    value = item.metadata.get("created_at")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _text_bytes(item: StoredItem) -> int:
    return 2 * len(item.text) + sum(len(str(v)) for v in item.metadata.values())


class UserItems:
    """A user's items: rows of ids, texts, metadata, vectors, times and scopes, plus BM25."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.lock = threading.Lock()
        self.ids: list[str] = []
        self.items: list[StoredItem] = []
        self.keywords = KeywordIndex()
        self._rows: dict[str, int] = {}
        self._scopes: dict[str, int] = {}
        self._matrix = np.zeros((0, 0), np.float32)
        self._created = np.zeros(0, np.float64)
        self._scope = np.zeros(0, np.int32)
        self._alive = np.zeros(0, bool)
        self._text_bytes = 0
        self.unsaved = 0  # rows appended since the owner last scheduled a snapshot (it resets this)

    @classmethod
    def restored(cls, version: int, items: Sequence[StoredItem], matrix: np.ndarray,
                 keywords: KeywordIndex, text_bytes: int) -> UserItems:
        """Items whose vectors (row i = item i) and BM25 index (`keywords`, over the same rows)
        were kept, and `text_bytes` as `text_bytes` gave it: nothing is re-indexed. ValueError when the three do not match."""
        if len(items) != len(matrix) or len(keywords) != len(items) or matrix.ndim != 2:
            raise ValueError("restored items: items, vectors and keyword index differ in length")
        entry = cls(version)
        entry._grow(len(items), int(matrix.shape[1]))
        entry._matrix[: len(items)] = matrix
        entry._created[: len(items)] = [created_of(it) for it in items]
        entry._scope[: len(items)] = [entry._scopes.setdefault(str(it.metadata.get("scope", "")), len(entry._scopes))
                                      for it in items]
        entry._alive[: len(items)] = True
        entry.ids = [it.id for it in items]
        entry.items = list(items)
        entry._rows = {item_id: row for row, item_id in enumerate(entry.ids)}
        if len(entry._rows) != len(items):
            raise ValueError("restored items: an id appears twice")
        entry.keywords = keywords
        entry._text_bytes = text_bytes
        return entry

    def live_columns(self) -> tuple[list[StoredItem], np.ndarray, dict[str, np.ndarray], int]:
        """The live rows' items, a copy of their vectors, their keyword index state
        (`KeywordIndex.state`), all renumbered 0..m-1, and about how many bytes their texts and
        metadata take (for `restored`)."""
        alive = self._alive[: len(self.ids)]
        rows = np.flatnonzero(alive)
        text_bytes = self._text_bytes * len(rows) // max(1, len(self.ids))
        return ([self.items[r] for r in rows.tolist()], self.matrix[rows], self.keywords.state(alive),
                text_bytes)

    def __len__(self) -> int:
        """How many rows (live or dead)."""
        return len(self.ids)

    @property
    def live(self) -> int:
        return int(np.count_nonzero(self._alive[: len(self.ids)]))

    @property
    def nbytes(self) -> int:
        """About how much memory these items take in this process (the cache's measure)."""
        arrays = self._matrix.nbytes + self._created.nbytes + self._scope.nbytes + self._alive.nbytes
        return arrays + self._text_bytes + _ROW_OVERHEAD * len(self.ids) + self.keywords.nbytes

    @property
    def matrix(self) -> np.ndarray:
        """The vectors of rows 0..n-1 (a view)."""
        return self._matrix[: len(self.ids)]

    @property
    def created(self) -> np.ndarray:
        return self._created[: len(self.ids)]

    def _grow(self, rows: int, dimension: int) -> None:
        if self._matrix.shape[1] != dimension and len(self.ids):
            raise ValueError(f"vectors of {dimension} dimensions added to items of {self._matrix.shape[1]}")
        capacity = self._matrix.shape[0]
        if rows <= capacity and self._matrix.shape[1] == dimension:
            return
        capacity = max(rows, 2 * capacity, 8)
        matrix = np.zeros((capacity, dimension), np.float32)
        if len(self.ids):
            matrix[: len(self.ids)] = self._matrix[: len(self.ids)]
        self._matrix = matrix
        for name, dtype in (("_created", np.float64), ("_scope", np.int32), ("_alive", bool)):
            column = np.zeros(capacity, dtype)
            column[: len(self.ids)] = getattr(self, name)[: len(self.ids)]
            setattr(self, name, column)

    def append(self, items: Sequence[StoredItem], vectors: np.ndarray) -> None:
        """Add items (with their unit vectors, row i = item i); ids already here are skipped."""
        keep: list[int] = []
        taken: set[str] = set()
        for n, item in enumerate(items):
            if item.id not in self._rows and item.id not in taken:
                taken.add(item.id)
                keep.append(n)
        if not keep:
            return
        fresh = [items[n] for n in keep]
        start, end = len(self.ids), len(self.ids) + len(fresh)
        self._grow(end, int(vectors.shape[1]))
        self._matrix[start:end] = vectors[keep] if len(keep) < len(items) else vectors
        self._created[start:end] = [created_of(it) for it in fresh]
        self._scope[start:end] = [self._scopes.setdefault(str(it.metadata.get("scope", "")), len(self._scopes))
                                  for it in fresh]
        self._alive[start:end] = True
        for row, item in enumerate(fresh, start=start):
            self._rows[item.id] = row
            self.keywords.add(row, indexed_text(item.text, item.metadata))
            self._text_bytes += _text_bytes(item)
        self.unsaved += len(fresh)
        self.ids.extend(it.id for it in fresh)
        self.items.extend(fresh)

    def __contains__(self, item_id: object) -> bool:
        """Whether this live item is here."""
        return item_id in self._rows

    def row(self, item_id: str) -> int:
        """The row of a live item (KeyError if it is not here)."""
        return self._rows[item_id]

    def remove(self, ids: Iterable[str]) -> int:
        """Mark these items dead; returns how many were alive here."""
        rows = [r for i in ids if (r := self._rows.pop(i, None)) is not None and self._alive[r]]
        self._alive[rows] = False
        return len(rows)

    def remove_scope(self, scope: str | None) -> int:
        """Mark every item of `scope` (None = all) dead; returns how many were alive."""
        mask = self.mask(scope)
        for row in np.flatnonzero(mask).tolist():
            self._rows.pop(self.ids[row], None)
        self._alive[: len(self.ids)][mask] = False
        return int(np.count_nonzero(mask))

    def mask(self, scope: str | None) -> np.ndarray:
        """Boolean array over rows: the live items of `scope` (None = all scopes)."""
        alive = self._alive[: len(self.ids)]
        if scope is None:
            return alive.copy()
        code = self._scopes.get(scope)
        if code is None:
            return np.zeros(len(self.ids), bool)
        return alive & (self._scope[: len(self.ids)] == code)
