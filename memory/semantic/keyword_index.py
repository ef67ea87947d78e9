"""Okapi BM25 over each person's items, its postings kept in SQLite tables.

Chroma holds the items (the truth); this file is an index derived from them, which
`memory.semantic` brings in step with Chroma before each search and can rebuild from Chroma
at any time (deleting the file loses nothing). Two tables: `items` (each item's owner, scope,
dates, length in terms, the facts the ranking reads: kind and exchange) and `postings` (one
row per item and term, with the term frequency, keyed by person and term, so a query term's
postings are one range of the primary key).

Scores equal those of a BM25 index built from scratch over exactly the person's items in the
scope: the statistics (document count, average length, each term's document frequency) are
taken over those items only, with Lucene's non-negative idf, k1 = 1.2 and b = 0.75.

Why not SQLite FTS5: its bm25() takes its statistics over the whole table (every person),
its idf goes negative for common terms, and it would still need our tokenizer applied before
it; scores equal to the ones the ranking was tuned on keep recall unchanged
(docs/decisions/0024-memory-engine.md). Both indexing and querying tokenize with
`memory.semantic.ranking.tokenize`.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from memory.semantic.ranking import tokenize

__all__ = ["Facts", "IndexedItem", "KeywordIndex"]

K1 = 1.2
B = 0.75
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE items (
    row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, user TEXT NOT NULL, scope TEXT NOT NULL,
    created_at REAL NOT NULL, added_at REAL NOT NULL, length INTEGER NOT NULL, terms TEXT NOT NULL,
    kind TEXT, exchange TEXT);
CREATE INDEX items_by_scope ON items (user, scope, created_at);
CREATE INDEX items_by_arrival ON items (user, scope, added_at);
CREATE TABLE postings (
    user TEXT NOT NULL, term TEXT NOT NULL, row INTEGER NOT NULL, scope TEXT NOT NULL,
    tf INTEGER NOT NULL, length INTEGER NOT NULL, PRIMARY KEY (user, term, row)) WITHOUT ROWID;
CREATE TABLE totals (
    user TEXT NOT NULL, scope TEXT NOT NULL, items INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (user, scope)) WITHOUT ROWID;
"""
_ADD_TOTAL = """INSERT INTO totals VALUES (?, ?, ?, ?) ON CONFLICT (user, scope)
    DO UPDATE SET items = items + excluded.items, length = length + excluded.length"""


class IndexedItem(NamedTuple):
    """What the index keeps of one item; `text` is what is indexed (context and text)."""

    id: str
    user: str
    scope: str
    created_at: float
    added_at: float
    text: str
    kind: str | None
    exchange: str | None


class Facts(NamedTuple):
    """What the ranking needs of an item besides its scores."""

    created_at: float
    kind: str | None
    exchange: str | None


class KeywordIndex:
    """The BM25 index of every person's items in one SQLite file (or in memory: `path` None).

    Thread-safe: one connection, one lock; several processes may share the file (WAL)."""

    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False,
                                   isolation_level=None, timeout=10.0)
        self._lock = threading.Lock()
        with self._lock:
            if path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            if self._db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                # a derived index: one of another layout is rebuilt from Chroma, not migrated
                self._db.executescript("DROP TABLE IF EXISTS items; DROP TABLE IF EXISTS postings;"
                                       " DROP TABLE IF EXISTS totals;")
                self._db.executescript(_SCHEMA)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- writing -----------------------------------------------------------------------------

    def add(self, items: Iterable[IndexedItem]) -> None:
        """Index these items (ids already indexed are left as they are), in one transaction."""
        prepared = []
        for it in items:
            terms = Counter(tokenize(it.text))
            prepared.append((it, terms, sum(terms.values())))
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            for it, terms, length in prepared:
                cur = self._db.execute(
                    "INSERT OR IGNORE INTO items (id, user, scope, created_at, added_at, length, terms, kind, exchange)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (it.id, it.user, it.scope, it.created_at, it.added_at, length, " ".join(terms), it.kind,
                     it.exchange))
                if cur.rowcount != 1:
                    continue
                row = cur.lastrowid
                self._db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?, ?, ?)",
                                     [(it.user, term, row, it.scope, tf, length) for term, tf in terms.items()])
                self._db.execute(_ADD_TOTAL, (it.user, it.scope, 1, length))

    def remove(self, user: str, ids: Sequence[str]) -> int:
        """Unindex these items of `user`; how many were indexed."""
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            found = []
            for start in range(0, len(ids), 500):
                chunk = list(ids[start:start + 500])
                found += self._db.execute(
                    f"SELECT row, scope, length, terms FROM items WHERE user = ? AND id IN ({','.join('?' * len(chunk))})",
                    [user, *chunk]).fetchall()
            self._db.executemany("DELETE FROM postings WHERE user = ? AND term = ? AND row = ?",
                                 [(user, term, row) for row, _, _, terms in found for term in terms.split()])
            self._db.executemany("DELETE FROM items WHERE row = ?", [(row,) for row, *_ in found])
            self._db.executemany(_ADD_TOTAL, [(user, scope, -1, -length) for _, scope, length, _ in found])
            return len(found)

    def remove_scope(self, user: str, scope: str) -> int:
        """Unindex all of the person's items in `scope`; how many there were."""
        return self.remove(user, sorted(self.ids(user, scope)))

    # -- reading -----------------------------------------------------------------------------

    @staticmethod
    def _where(user: str, scope: str | None) -> tuple[str, list[object]]:
        return ("user = ?", [user]) if scope is None else ("user = ? AND scope = ?", [user, scope])

    def _rows(self, sql: str, args: Sequence[object]) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def ids(self, user: str, scope: str) -> set[str]:
        return {r[0] for r in self._rows("SELECT id FROM items WHERE user = ? AND scope = ?", (user, scope))}

    def _totals(self, user: str, scope: str | None) -> tuple[int, int]:
        """(items, their length in terms) of the person's scope (None: all scopes)."""
        where, args = self._where(user, scope)
        count, length = self._rows(f"SELECT total(items), total(length) FROM totals WHERE {where}", args)[0]
        return int(count), int(length)

    def count(self, user: str, scope: str | None = None) -> int:
        return self._totals(user, scope)[0]

    def last_added(self, user: str, scope: str) -> float | None:
        """When the newest indexed item of the person's scope was written to Chroma (None: none)."""
        return self._rows("SELECT max(added_at) FROM items WHERE user = ? AND scope = ?", (user, scope))[0][0]

    def facts(self, ids: Iterable[str]) -> dict[str, Facts]:
        ids = list(ids)
        out: dict[str, Facts] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = self._rows(f"SELECT id, created_at, kind, exchange FROM items WHERE id IN ({','.join('?' * len(chunk))})",
                              chunk)
            out.update((r[0], Facts(r[1], r[2], r[3])) for r in rows)
        return out

    def between(self, user: str, scope: str | None, since: float, until: float) -> dict[str, float]:
        """id -> created_at of the person's items in `scope` (None: all) made in [since, until]."""
        where, args = self._where(user, scope)
        return dict(self._rows(f"SELECT id, created_at FROM items WHERE {where} AND created_at BETWEEN ? AND ?",
                               [*args, since, until]))

    def scores(self, user: str, text: str, scope: str | None, best: int | None = None) -> dict[str, float]:
        """id -> BM25 score of the person's items in `scope` (None: all) sharing a term with `text`:
        all of them, or the `best` highest and the lowest (which keeps a min-max normalisation of
        the scores as it is over all of them)."""
        query = Counter(tokenize(text or ""))
        count, total = self._totals(user, scope)
        if not query or not count:
            return {}
        average = total / count if total else 1.0
        where, args = self._where(user, scope)
        rows: list[np.ndarray] = []
        parts: list[np.ndarray] = []
        for term, qtf in query.items():
            found = self._rows(f"SELECT row, tf, length FROM postings WHERE {where} AND term = ?", [*args, term])
            if not found:
                continue
            postings = np.asarray(found, np.float64)
            tf = postings[:, 1]
            idf = math.log(1.0 + (count - len(found) + 0.5) / (len(found) + 0.5))
            norm = K1 * (1.0 - B + B * postings[:, 2] / average)
            rows.append(postings[:, 0].astype(np.int64))
            parts.append(idf * tf * (K1 + 1.0) / (tf + norm) * qtf)
        if not rows:
            return {}
        keys, slot = np.unique(np.concatenate(rows), return_inverse=True)
        sums = np.bincount(slot, weights=np.concatenate(parts), minlength=len(keys))
        if best is not None and len(keys) > best + 1:
            chosen = np.concatenate([np.argpartition(-sums, best - 1)[:best], [int(np.argmin(sums))]])
            keys, sums = keys[chosen], sums[chosen]
        by_row = dict(zip(keys.tolist(), sums.tolist(), strict=True))
        ids: dict[int, str] = {}
        marks = list(by_row)
        for start in range(0, len(marks), 500):
            chunk = marks[start:start + 500]
            ids.update(self._rows(f"SELECT row, id FROM items WHERE row IN ({','.join('?' * len(chunk))})", chunk))
        return {ids[row]: score for row, score in by_row.items() if row in ids}
