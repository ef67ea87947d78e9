"""This process's copies of users' items, kept current with the store: cached, on disk, checked.

`Copies.items(user_id)` gives a user's items (`memory.semantic.user_items.UserItems`) as Chroma
holds them now. It reads the user's version record FIRST (`memory.semantic.versions`) and uses
the cached items as they are when they were made under that version; otherwise it checks them
against the ids Chroma has (drops the rows Chroma no longer has, fetches the missing ones), or,
for a user not cached, loads them: from the user's snapshot (`memory.semantic.snapshot`) as it is
when it was saved under that version, else the snapshot (or nothing) checked the same way. The
cache is an LRU bounded by bytes (`memory.semantic.caches.ItemsCache`).

A memory's own writes go into the copies (`taken_in`, `forgotten`) with the version they put,
and snapshots are rewritten in the background once `snapshot_after` of a user's items, and a
quarter of them (`SNAPSHOT_BACKLOG`), are not in one, after a load or check that found the file
stale, and on close. A delete or forget removes the user's file before and after the store's
delete (then rewrites it from the cached items, without the forgotten ones); so does a check
that finds rows forgotten elsewhere. Blocking work runs on the memory's `WorkerPool`.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from memory.errors import StoreUnavailable
from memory.keyed_locks import KeyedLocks
from memory.semantic.caches import ItemsCache
from memory.semantic.chroma_backend import ChromaStore, StoredItem
from memory.semantic.chroma_process import ChromaProcess
from memory.semantic.pool import WorkerPool
from memory.semantic.snapshot import Snapshots
from memory.semantic.user_items import UserItems
from memory.semantic.versions import VersionRecords, Written, current

__all__ = ["SNAPSHOT_AFTER", "ColdLoad", "Copies"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Items per Chroma read when loading a user: Chroma converts a page's vectors holding the GIL
# (about 50 ms for 250 on the 2-core target, under load) and pages of 1,000 cost more per item.
LOAD_PAGE = 200
# A user's items are written to a snapshot once this many of them are not in one: a cold load
# then fetches at most about this many items from Chroma besides reading the snapshot.
SNAPSHOT_AFTER = 500
# ...and once this share of the user's items are not in it either: each rewrite copies all of
# the user's items, so a user growing by thousands at a time does not have them all copied
# after every batch (a cold load after a crash fetches at most that share).
SNAPSHOT_BACKLOG = 0.25


@dataclass(frozen=True, slots=True)
class ColdLoad:
    """How the last load of a user's items into this process went: `route` "version" (the
    snapshot as it was: its version is the user's now, no id read), "ids" (the snapshot checked
    against the ids Chroma has) or "chroma" (no snapshot), and how many items it gave."""

    route: str
    items: int


class Copies:
    """Users' items held by one memory, current with its store (see the module docstring)."""

    def __init__(self, store: ChromaStore | ChromaProcess, versions: VersionRecords, pool: WorkerPool, *,
                 cache_bytes: int, snapshots: Snapshots | None, snapshot_after: int = SNAPSHOT_AFTER) -> None:
        self._store = store
        self._versions = versions
        self._pool = pool
        self._cache = ItemsCache(cache_bytes)
        # one reader or cache update of a user at a time (cold loads, checks, own writes taken in)
        self._user_locks = KeyedLocks()
        self._snapshots = snapshots
        self._snapshot_after = max(1, snapshot_after)
        self.last_load: ColdLoad | None = None
        self._saving: dict[str, Future[None]] = {}  # users whose snapshot is being written (one at a time each)
        # cold loads still running after the search that started them gave up waiting (op_timeout_s):
        # the next search of that user takes the load over instead of starting another
        self._loads: dict[str, Future[tuple[UserItems, int | None]]] = {}
        self._saving_lock = threading.Lock()

    def peek(self, user_id: str) -> UserItems | None:
        """The user's cached items as they are (not checked, not marked used), or None."""
        return self._cache.peek(user_id)

    async def close(self) -> None:
        """Write the snapshots of cached users with many items not in one yet, and empty the cache."""
        # a snapshot begun earlier may miss the last rows: let it end, so that its user is
        # saved again below with what is cached now
        await asyncio.gather(*(asyncio.wrap_future(f) for f in list(self._saving.values())), return_exceptions=True)
        # users with many items get a current snapshot, so that the next start loads them fast
        saves = [self._snapshot_later(user_id, entry) for user_id, entry in self._cache.entries()
                 if entry.unsaved and entry.live >= self._snapshot_after]
        await asyncio.gather(*(asyncio.wrap_future(f) for f in saves if f is not None), return_exceptions=True)
        self._cache.clear()

    # -- this memory's writes ------------------------------------------------------------

    async def taken_in(self, items: Sequence[StoredItem], vectors: np.ndarray, written: Written) -> None:
        """A written batch into the cached items of its users, with the version each is now
        current for (`Written.claim`)."""
        positions: dict[str, list[int]] = {}
        for n, item in enumerate(items):
            positions.setdefault(item.metadata["user_id"], []).append(n)
        cached = [user_id for user_id in positions if self._cache.peek(user_id) is not None]
        if not cached:
            return
        async with contextlib.AsyncExitStack() as held:
            for user_id in sorted(cached):  # one order: two writes never wait for each other
                await held.enter_async_context(self._user_locks.held(user_id))
            updates = [(user_id, entry) for user_id in cached if (entry := self._cache.peek(user_id)) is not None]

            def append_all() -> None:
                # on a worker thread: a bulk write's rows are megabytes to copy
                for user_id, entry in updates:
                    chosen = positions[user_id]
                    with entry.lock:
                        entry.append([items[n] for n in chosen], vectors[chosen])
                        entry.store_version = written.claim(user_id, entry.store_version)

            await self._pool.run(append_all)
        self._cache.resized(user_id for user_id, _ in updates)

    def written(self, user_ids: Iterable[str]) -> None:
        """These users' writes ended: a snapshot of each whose cached items have many rows not in one."""
        for user_id in user_ids:
            entry = self._cache.peek(user_id)
            if entry is not None and entry.unsaved >= max(self._snapshot_after, SNAPSHOT_BACKLOG * entry.live):
                self._snapshot_later(user_id, entry)

    def failed(self, user_ids: Iterable[str]) -> None:
        """A write of these users failed part-way: their cached items go (the next read loads them)."""
        for user_id in user_ids:
            self._cache.drop(user_id)

    async def forgotten(self, user_id: str, remove: Callable[[UserItems], object], erase: Callable[[], T]) -> T:
        """Run `erase` (the store's delete) between the user's version bumps; then the user's
        cached items drop the same rows (`remove`), or the whole entry goes when the store
        failed part-way. The user's snapshot is removed before and after `erase` (and
        rewritten from the cached items, if any)."""
        snapshots = self._snapshots

        def erased() -> tuple[T, Written]:
            if snapshots is not None:
                snapshots.drop(user_id)
            try:
                return self._versions.write([user_id], erase)
            finally:
                if snapshots is not None:
                    snapshots.drop(user_id)

        # a cold load running now or during the erase may hold what is erased: never cached
        self._loads.pop(user_id, None)
        try:
            result, written = await self._pool.run(erased)
            async with self._user_locks.held(user_id):
                self._loads.pop(user_id, None)
                entry = self._cache.peek(user_id)
                if entry is not None:
                    def locked() -> None:
                        with entry.lock:
                            remove(entry)
                            entry.store_version = written.claim(user_id, entry.store_version)
                    await self._pool.run(locked)
        except BaseException:
            self._loads.pop(user_id, None)
            self._cache.drop(user_id)
            raise
        if entry is not None:
            self._snapshot_later(user_id, entry)
        return result

    # -- reading -------------------------------------------------------------------------

    async def items(self, user_id: str) -> UserItems:
        """The user's items, current for the user's version in Chroma, read FIRST: the cached
        items as they are when it is the one they were made under; else checked against the ids
        Chroma has (cached), or loaded (not cached). A store out of reach for that read leaves a
        cached user answered from the cache."""
        async with self._user_locks.held(user_id):
            try:
                version = (await self._pool.run(self._versions.read, [user_id]))[user_id]
            except StoreUnavailable as exc:
                if (entry := self._cache.get(user_id)) is None:
                    raise
                log.warning("semantic memory: a user's items answered from this process's copy: %s", exc)
                return entry
            # looked up after the await: a cold load that ended meanwhile is cached by then (`_adopt`)
            if (entry := self._cache.get(user_id)) is not None:
                if entry.store_version is not None and entry.store_version == version:
                    return entry
                try:
                    gone = await self._pool.run(self._checked, user_id, entry, version)
                except BaseException:
                    self._cache.drop(user_id)  # its check may still run on: no one else uses it
                    raise
                self._cache.resized([user_id])
                if gone or entry.unsaved >= max(self._snapshot_after, SNAPSHOT_BACKLOG * entry.live):
                    self._snapshot_later(user_id, entry)
                return entry
            load = self._loads.get(user_id)
            taken_over = load is not None
            if load is None:
                load = self._loads[user_id] = self._pool.submit(lambda: self._load(user_id, version))
                loop = asyncio.get_running_loop()  # cached when it ends, even if no search waits any more

                def adopt_on_the_loop(done: Future[tuple[UserItems, int | None]]) -> None:
                    with contextlib.suppress(RuntimeError):  # the loop closed first: nothing to cache into
                        loop.call_soon_threadsafe(self._adopt, user_id, done)

                load.add_done_callback(adopt_on_the_loop)
            entry, _ = await self._pool.awaited(load)
            self._adopt(user_id, load)  # if its done-callback has not run yet (else a no-op)
        if taken_over and not self._pool.closed:  # loaded under the version of the search that started it: checked now, cached
            return await self.items(user_id)
        return entry

    def _adopt(self, user_id: str, load: Future[tuple[UserItems, int | None]]) -> None:
        """Cache the user's items of a finished cold load (on the loop; once per load: the
        search awaiting it and the load's own done-callback both call this). Without the user's
        lock: a load runs only while the user has no cached items, a forget takes it out of
        `_loads` first, and a search holding the lock looks at the cache after its awaits."""
        if self._loads.get(user_id) is not load:
            return
        del self._loads[user_id]
        if self._pool.closed or load.cancelled() or load.exception() is not None:
            return
        entry, snapshot_generation = load.result()
        self._cache.put(user_id, entry)
        if snapshot_generation is not None:
            self._snapshot_later(user_id, entry, snapshot_generation)

    def _reconcile(self, user_id: str, entry: UserItems) -> tuple[int, int]:
        """Make `entry` hold exactly the ids Chroma has for the user now (worker thread): drop
        the rows Chroma no longer has, fetch the missing items in pages of LOAD_PAGE (no single
        Chroma call holds the GIL for long). Returns how many rows went and how many came."""
        ids = self._store.ids(where={"user_id": user_id})
        present = set(ids)
        with entry.lock:
            gone = entry.remove([i for i in entry.ids if i not in present])
            missing = [i for i in ids if i not in entry]
        for start in range(0, len(missing), LOAD_PAGE):
            self._fetch(user_id, entry, missing[start:start + LOAD_PAGE])
        return gone, len(missing)

    def _checked(self, user_id: str, entry: UserItems, version: str | None) -> int:
        """A cached user's items checked against Chroma's ids (another process wrote them since
        `entry.store_version`); returns how many rows went (their snapshot is removed at once)."""
        gone, _ = self._reconcile(user_id, entry)
        if gone and self._snapshots is not None:
            self._snapshots.drop(user_id)  # it holds items forgotten elsewhere: rewritten from `entry`
        with entry.lock:
            entry.store_version = version if current(version) else None
        return gone

    def _load(self, user_id: str, version: str | None) -> tuple[UserItems, int | None]:
        """All of the user's items and vectors (worker thread), current for `version` (read
        before this): the user's snapshot as it is when it was saved under that version, else
        the snapshot (or nothing) checked against the ids Chroma has (`_reconcile`). With them,
        the snapshot generation to write a new snapshot under when this fetched many or dropped
        any (else None): written once the entry is cached (`current`)."""
        snapshots = self._snapshots
        generation = snapshots.generation(user_id) if snapshots is not None else 0
        kept = snapshots.load(user_id) if snapshots is not None else None
        if kept is not None and current(version) and kept[1] == version:
            entry = kept[0]
            entry.store_version = version
            self.last_load = ColdLoad("version", entry.live)
            return entry, None
        entry = UserItems() if kept is None else kept[0]
        gone, fetched = self._reconcile(user_id, entry)
        entry.store_version = version if current(version) else None
        self.last_load = ColdLoad("chroma" if kept is None else "ids", entry.live)
        stale = kept is not None and (gone or fetched or kept[1] != entry.store_version)
        if snapshots is not None and (stale or entry.unsaved >= self._snapshot_after):
            return entry, generation
        return entry, None

    def _fetch(self, user_id: str, entry: UserItems, ids: Sequence[str]) -> None:
        """Read these items with their vectors into `entry`; ids of other users are ignored."""
        items, matrix = self._store.get_with_embeddings(where=None, ids=ids)
        mine = [n for n, it in enumerate(items) if it.metadata.get("user_id") == user_id]
        if mine:
            with entry.lock:
                entry.append([items[n] for n in mine], matrix[mine])

    def _snapshot_later(self, user_id: str, entry: UserItems, generation: int | None = None) -> Future[None] | None:
        """Write the user's snapshot from `entry`, with the version its rows are current for, on
        a worker thread (any thread may call this); a forget after `generation` (default: now)
        was taken discards it. While one is being written for the user, another is not started
        (the rows stay unsaved for the next)."""
        snapshots = self._snapshots
        if snapshots is None or self._pool.closed:
            return None

        def save() -> None:
            try:
                with entry.lock:
                    columns, version = entry.columns(), entry.store_version
                if len(columns["ids"]):
                    snapshots.save(user_id, columns, version, taken)
                else:
                    snapshots.drop(user_id)
            except (OSError, ValueError) as exc:
                log.warning("semantic memory: cannot write a snapshot in %s: %s", snapshots.folder, exc)
            finally:
                with self._saving_lock:
                    del self._saving[user_id]

        with self._saving_lock:
            if user_id in self._saving:
                return None
            entry.unsaved = 0
            taken = snapshots.generation(user_id) if generation is None else generation
            saving = self._saving[user_id] = self._pool.submit(save)
        return saving
