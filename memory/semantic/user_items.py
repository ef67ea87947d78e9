"""One user's items held in this process as columns: the arrays a search works on.

`UserItems` keeps, row by row, each item (`StoredItem`: id, text and metadata), unit vector (a
float32 matrix that grows by doubling, so an add copies nothing but the new rows most of the time), creation time, scope,
whether it is one of the bot's replies and which exchange it belongs to (`ranking.exchange_of`),
as numpy arrays, whether it is still alive, and an incremental BM25 index
(`memory.semantic.keyword_index`) over what it is keyword-indexed by (`memory.semantic.item_text.keyword_text`). An add
appends rows, a delete marks them dead, a forget of a scope marks that scope's rows dead:
nothing is rebuilt. `columns()` and `UserItems.from_columns` take the live rows out as flat
arrays (texts and metadata as UTF-8 blobs with each row's end) and back
(`memory.semantic.snapshot` keeps them on disk). Not thread-safe by itself: callers hold `lock`
around every use.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from memory.semantic.chroma_backend import StoredItem
from memory.semantic.keyword_index import KeywordIndex
from memory.semantic.ranking import exchange_of
from memory.semantic.item_text import keyword_text

__all__ = ["UserItems"]

_COPY_ROWS = 4096  # rows per call that holds the GIL throughout (JSON parsing, the row map's dict)
_ROW_OVERHEAD = 1200  # bytes per item besides its vector, text and postings: its tuple, metadata dict, id and
# values (tracemalloc counted about 1,130 for a stored turn's item beyond `_text_bytes`)


def _frozen(column: np.ndarray) -> np.ndarray:
    """A read-only view: the columns of rows already appended are never written again."""
    view = column.view()
    view.flags.writeable = False
    return view


def _blob(parts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Byte strings as one uint8 array and each one's end offset in it."""
    ends = np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)), dtype=np.int64)
    return np.frombuffer(b"".join(parts), np.uint8), ends


def _unblob(blob: np.ndarray, ends: np.ndarray) -> list[bytes]:
    """`_blob`'s parts back."""
    data = np.asarray(blob, np.uint8).tobytes()
    bounds = [0, *np.asarray(ends, np.int64).tolist()]
    if bounds != sorted(bounds) or bounds[-1] != len(data):
        raise ValueError("restored items: texts or metadata do not fit their ends")
    return [data[start:end] for start, end in zip(bounds, bounds[1:])]


def _metadata(parts: list[bytes]) -> list[dict[str, Any]]:
    """Each part's JSON object, parsed as one JSON array per `_COPY_ROWS` parts: one `json.loads`
    per row took most of a heavy user's restore, and one call for all of them holds the GIL
    throughout. A part that is not exactly one object leaves a count or a type that differs."""
    out: list[Any] = []
    for start in range(0, len(parts), _COPY_ROWS):
        out.extend(json.loads(b"[" + b",".join(parts[start:start + _COPY_ROWS]) + b"]"))
    if len(out) != len(parts) or not all(isinstance(value, dict) for value in out):
        raise ValueError("restored items: an item's metadata is not one object")
    return out


def created_of(item: StoredItem) -> float:
    value = item.metadata.get("created_at")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _text_bytes(item: StoredItem) -> int:
    return 2 * len(item.text) + sum(len(str(v)) for v in item.metadata.values())


UNREAD = -2  # UserItems._who of a row whose metadata was not read yet


class UserItems:
    """A user's items: rows of ids, texts, metadata, vectors, times and scopes, plus BM25."""

    def __init__(self) -> None:
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
        self._reply = np.zeros(0, bool)
        self._exchange = np.zeros(0, np.int32)
        self._exchanges: dict[str, int] = {}
        # who said each row (a code into _speakers; -1: no one named; UNREAD: not read yet) and
        # whether it names a date: read from a row's metadata the first time a search needs them
        self._who = np.zeros(0, np.int32)
        self._dated = np.zeros(0, bool)
        self._speakers: dict[str, int] = {}
        self._text_bytes = 0
        self.unsaved = 0  # rows appended since the owner last scheduled a snapshot (it resets this)
        # the user's version (memory.semantic.versions) these rows are known to be current for;
        # None: unknown. Set by the owner (memory.semantic), which says when it may be trusted.
        self.store_version: str | None = None

    @classmethod
    def from_columns(cls, columns: Mapping[str, np.ndarray]) -> UserItems:
        """Items as `columns()` gave them (nothing is re-indexed). ValueError (or KeyError,
        TypeError) when the arrays do not fit."""
        ids = np.asarray(columns["ids"], dtype=str).tolist()
        count = len(ids)
        matrix = np.asarray(columns["matrix"], np.float32)
        scopes = [str(s) for s in np.asarray(columns["scope_names"]).tolist()]
        traces = np.asarray(columns["exchange_names"], dtype=str).tolist()
        scope = np.asarray(columns["scope"], np.int32)
        exchange = np.asarray(columns["exchange"], np.int32)
        lengths = [len(matrix), len(columns["created"]), len(scope), len(columns["reply"]), len(exchange)]
        if matrix.ndim != 2 or any(n != count for n in lengths):
            raise ValueError("restored items: the columns differ in length")
        if count and (int(scope.min()) < 0 or int(scope.max()) >= len(scopes)
                      or int(exchange.min()) < -1 or int(exchange.max()) >= len(traces)):
            raise ValueError("restored items: a scope or exchange code out of range")
        keywords = KeywordIndex.from_state({name: columns[f"kw_{name}"] for name in KeywordIndex.STATE})
        if len(keywords) != count:
            raise ValueError("restored items: the keyword index has another number of rows")
        entry = cls()
        texts = [text.decode() for text in _unblob(columns["texts"], columns["text_ends"])]
        metas = _metadata(_unblob(columns["metas"], columns["meta_ends"]))
        if len(texts) != count or len(metas) != count:
            raise ValueError("restored items: ids, texts and metadata differ in number")
        entry.items = list(map(StoredItem, ids, texts, metas))
        entry._grow(count, int(matrix.shape[1]))
        if matrix.flags.writeable and matrix.flags.c_contiguous:
            entry._matrix = matrix  # the loaded array itself: 50,000 vectors are 77 MB to copy
        else:
            entry._matrix[:count] = matrix
        entry._created[:count] = columns["created"]
        entry._scope[:count] = scope
        entry._reply[:count] = columns["reply"]
        entry._exchange[:count] = exchange
        entry._alive[:count] = True
        entry._scopes = {name: code for code, name in enumerate(scopes)}
        entry._exchanges = {name: code for code, name in enumerate(traces)}
        entry.ids = ids
        entry._rows = {}
        for start in range(0, count, _COPY_ROWS):  # one dict(zip(...)) held the GIL 85-190 ms at 400,000 ids
            entry._rows.update(zip(ids[start:start + _COPY_ROWS], range(start, start + _COPY_ROWS)))
        if len(entry._rows) != count or len(entry._scopes) != len(scopes) or len(entry._exchanges) != len(traces):
            raise ValueError("restored items: an id, scope or exchange appears twice")
        entry.keywords = keywords
        entry._text_bytes = int(columns["text_bytes"])
        return entry

    def columns(self) -> dict[str, np.ndarray]:
        """The live rows, renumbered 0..m-1, as flat arrays (for `from_columns`): ids, texts
        and metadata (JSON) as UTF-8 blobs with each row's end, their vectors, times, scope and exchange
        codes with their names, which are the bot's replies, the keyword index state (`kw_*`,
        `KeywordIndex.state`) and about how many bytes the texts and metadata take.

        When every row is alive, the vectors and the other per-row columns are read-only
        views, not copies: a row's columns are written once, when it is appended (a later
        append writes only rows past it, or moves the rows to new arrays), so the views stay
        as they are while this object goes on growing (50,000 vectors are 77 MB to copy)."""
        alive = self._alive[: len(self.ids)]
        count = len(self.ids)
        scope_names = sorted(self._scopes, key=self._scopes.__getitem__)
        exchange_names = sorted(self._exchanges, key=self._exchanges.__getitem__)
        if bool(alive.all()):
            rows = np.arange(count)
            ids = np.array(self.ids, dtype=str)
            per_row = {"matrix": _frozen(self.matrix), "created": _frozen(self.created),
                       "scope": _frozen(self._scope[:count]), "reply": _frozen(self.replies),
                       "exchange": _frozen(self.exchanges)}
        else:
            rows = np.flatnonzero(alive)
            ids = np.array([self.ids[r] for r in rows.tolist()], dtype=str)
            per_row = {"matrix": self.matrix[rows], "created": self.created[rows],
                       "scope": self._scope[rows], "reply": self._reply[rows], "exchange": self._exchange[rows]}
        chosen = [self.items[r] for r in rows.tolist()]
        texts, text_ends = _blob([item.text.encode() for item in chosen])
        metas, meta_ends = _blob([json.dumps(item.metadata, ensure_ascii=False).encode() for item in chosen])
        out = {
            "ids": ids,
            "texts": texts, "text_ends": text_ends, "metas": metas, "meta_ends": meta_ends,
            **per_row,
            "scope_names": np.array(scope_names, dtype=str),
            "exchange_names": np.array(exchange_names, dtype=str),
            "text_bytes": np.array(self._text_bytes * len(rows) // max(1, count)),
        }
        out.update({f"kw_{name}": value for name, value in self.keywords.state(alive).items()})
        return out

    def __len__(self) -> int:
        """How many rows (live or dead)."""
        return len(self.ids)

    @property
    def live(self) -> int:
        return int(np.count_nonzero(self._alive[: len(self.ids)]))

    @property
    def nbytes(self) -> int:
        """About how much memory these items take in this process (the cache's measure)."""
        arrays = sum(a.nbytes for a in (self._matrix, self._created, self._scope, self._alive, self._reply,
                                        self._exchange, self._who, self._dated))
        return arrays + self._text_bytes + _ROW_OVERHEAD * len(self.ids) + self.keywords.nbytes

    @property
    def matrix(self) -> np.ndarray:
        """The vectors of rows 0..n-1 (a view)."""
        return self._matrix[: len(self.ids)]

    @property
    def created(self) -> np.ndarray:
        return self._created[: len(self.ids)]

    @property
    def replies(self) -> np.ndarray:
        """Whether each row is one of the bot's replies (metadata kind "reply")."""
        return self._reply[: len(self.ids)]

    @property
    def exchanges(self) -> np.ndarray:
        """Each row's exchange code (`ranking.exchange_of`; -1 for none): equal codes, one exchange."""
        return self._exchange[: len(self.ids)]

    def who_and_dated(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        """For these rows: who said each (a code of the returned names; -1 for no one named,
        metadata "speaker") and whether each names a date (metadata "dates"), with the codes
        of the speakers' names. Each row's metadata is decoded the first time it is asked for,
        then read from columns (a search asks for hundreds of candidates). The caller holds `lock`."""
        unread = rows[self._who[rows] == UNREAD]
        for row in unread.tolist():
            meta = self.items[row].metadata
            speaker = meta.get("speaker")
            self._who[row] = self._speakers.setdefault(speaker, len(self._speakers)) if isinstance(speaker, str) else -1
            self._dated[row] = bool(meta.get("dates"))
        return self._who[rows], self._dated[rows], self._speakers

    def _grow(self, rows: int, dimension: int) -> None:
        if self._matrix.shape[1] != dimension and len(self.ids):
            raise ValueError(f"vectors of {dimension} dimensions added to items of {self._matrix.shape[1]}")
        capacity = self._matrix.shape[0]
        if rows <= capacity and self._matrix.shape[1] == dimension:
            return
        capacity = max(rows, 2 * capacity, 8)
        matrix = np.zeros((capacity, dimension), np.float32)
        if len(self.ids):
            matrix[: len(self.ids)] = self._matrix[: len(self.ids)]  # numpy copies without the GIL
        self._matrix = matrix
        for name, dtype, empty in (("_created", np.float64, 0), ("_scope", np.int32, 0), ("_alive", bool, False),
                                   ("_reply", bool, False), ("_exchange", np.int32, 0), ("_who", np.int32, UNREAD),
                                   ("_dated", bool, False)):
            column = np.full(capacity, empty, dtype)
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
        self._reply[start:end] = [it.metadata.get("kind") == "reply" for it in fresh]
        self._exchange[start:end] = [-1 if (trace := exchange_of(it.metadata)) is None
                                     else self._exchanges.setdefault(trace, len(self._exchanges)) for it in fresh]
        for row, item in enumerate(fresh, start=start):
            self._rows[item.id] = row
            self.keywords.add(row, keyword_text(item.text, item.metadata))
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
