"""Per-user version records: whether a user's items in Chroma may have changed, in one read.

One small record per user, in a sibling collection `<collection>__versions` of the same Chroma
(folder or server), named by a hash of the user id (the id itself is not stored); its
metadata holds a random `version`. Every write of a user's items (`write`: an add, delete or
forget of `memory.semantic`) puts a new *dirty* value ("w:" and random) BEFORE it touches the
items and a new *clean* value AFTER they are written, on the worker thread that wrote them: a
write whose caller gave up waiting still bumps the value once it has landed.

A reader reads the record FIRST and the user's ids only when the value differs from the one its
copy of the items (a cache entry, a snapshot) was made under; it keeps the value it read first,
and only a clean one (`current`). So a copy kept under a value that is still the record's holds
every write that ended before that value was read; a write that ended since has changed the
value. A writer that dies mid-write leaves a dirty value (unless another write of the same
user put a clean one after it): every reader checks ids until the user's next write. Values
are never reused.

What one record cannot say, having no compare-and-set: a process that writes a user takes in
its own items and the clean value it put, as current, only when the value read just before its
write was the one its copy held and no other write put a value during its own (`Written.claim`);
two writes of one user by two processes that start together and end together (within one Chroma
write of each other) can still leave the one that wrote last without the other's items until
the user's next write anywhere (docs/decisions/0035-version-record.md).

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from memory.errors import StoreUnavailable
from memory.semantic.chroma_backend import StoredItem

__all__ = ["VERSION_SUFFIX", "VersionRecords", "Written", "current"]

T = TypeVar("T")

VERSION_SUFFIX = "__versions"
DIRTY = "w:"


class RecordStore(Protocol):
    """What the records need of a Chroma collection (`ChromaStore`, or its child-process proxy)."""

    def upsert(self, ids: Sequence[str], documents: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None: ...

    def get(self, *, where: Mapping[str, Any], ids: Sequence[str] | None = None) -> list[StoredItem]: ...


def current(value: str | None) -> bool:
    """Whether a value read may be kept with a copy of the items (set, and no write running)."""
    return value is not None and not value.startswith(DIRTY)


def _record_id(user_id: str) -> str:
    return "v:" + hashlib.sha256(user_id.encode()).hexdigest()[:40]


@dataclass(frozen=True, slots=True)
class Written:
    """What one write saw of each user's record: the value just before it, the dirty value it
    put, the value read after its items, and the clean value it put last."""

    before: Mapping[str, str | None]
    dirty: Mapping[str, str]
    during: Mapping[str, str | None]
    after: Mapping[str, str]

    def claim(self, user_id: str, held: str | None) -> str | None:
        """The value a copy of the user's items, held under `held` and given this write's own
        changes, is current for: the clean value put after the write when the copy was current
        just before it (or already took that value) and no other write put a value meanwhile;
        else None (the copy's next read checks ids)."""
        after = self.after[user_id]
        if held == after:
            return after
        if held is not None and held == self.before[user_id] and self.during[user_id] == self.dirty[user_id]:
            return after
        return None


class VersionRecords:
    """The version records of one collection's users (blocking: run in a worker thread)."""

    def __init__(self, store: RecordStore) -> None:
        self._store = store

    def read(self, user_ids: Iterable[str]) -> dict[str, str | None]:
        """Each user's value now (None: no write of theirs since the records began)."""
        named = {_record_id(u): u for u in set(user_ids)}
        values = {r.id: r.metadata.get("version") for r in self._store.get(where={}, ids=list(named))}
        return {u: str(values[rid]) if values.get(rid) else None for rid, u in named.items()}

    def bump(self, user_ids: Iterable[str], *, dirty: bool) -> dict[str, str]:
        """Put a new value for each user (dirty: a write is about to touch their items)."""
        users = sorted(set(user_ids))
        values = {u: (DIRTY if dirty else "") + uuid.uuid4().hex for u in users}
        self._store.upsert([_record_id(u) for u in users], [""] * len(users),
                           [{"version": values[u]} for u in users])
        return values

    def write(self, user_ids: Iterable[str], change: Callable[[], T]) -> tuple[T, Written]:
        """Run `change` (a write of these users' items) between a dirty and a clean value. When
        `change` raises, the clean value is still put (its items may have landed in part) and
        the error goes on; the dirty value stays only when the store is out of reach."""
        users = sorted(set(user_ids))
        before = self.read(users)
        dirty = self.bump(users, dirty=True)
        try:
            result = change()
        except BaseException:
            with contextlib.suppress(StoreUnavailable):  # out of reach: the dirty value stays
                self.bump(users, dirty=False)
            raise
        during = self.read(users)
        return result, Written(before, dirty, during, self.bump(users, dirty=False))
