"""Version records (memory.semantic.versions) against a real embedded Chroma: a dirty value while a
write runs and a clean one after it, and the loads and checks of memory.semantic that trust a copy
of a user's items (cached, or a snapshot) only under the version it was made under."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import numpy as np
import pytest

from memory.errors import StoreUnavailable
from memory.semantic import UserMemory, open_user_memory, scope_for
from memory.semantic.chroma_backend import ChromaStore, StoredItem
from memory.semantic.embeddings import LocalEmbedder
from memory.semantic.versions import VERSION_SUFFIX, VersionRecords, current
from tests.child_env import with_repo_on_path
from tests.memory.fixtures_semantic import opened, snapshot_files

pytestmark = pytest.mark.slow  # loads the embedding model and waits out op timeouts: handed out first (tests/conftest.py)

ALICE = "111111111111111111"
BOB = "222222222222222222"
GUILD = scope_for("900000000000000000")
TEXTS = [f"note {n}: I keep bees number {n} on the roof in Porto" for n in range(12)]

DYING_WRITER = """
import os, sys
import numpy as np
from memory.semantic.chroma_backend import ChromaStore
from memory.semantic.versions import VERSION_SUFFIX, VersionRecords
store = ChromaStore.open(path=sys.argv[1], host=None, port=None, collection="user_memory",
                         embedder_name=sys.argv[2], dimension=None)
VersionRecords(store.log(VERSION_SUFFIX)).bump([sys.argv[3]], dirty=True)
store.add(["dying-item"], np.asarray([sys.argv[4].split(",")], np.float32), ["the write that died"],
          [{"user_id": sys.argv[3], "scope": "", "created_at": 1.0}])
os._exit(3)  # dies after its items landed, before its clean value
"""


def records_of(path: Path, embedder: str = "test") -> VersionRecords:
    store = ChromaStore.open(path=path, host=None, port=None, collection="user_memory", embedder_name=embedder,
                             dimension=None)
    return VersionRecords(store.log(VERSION_SUFFIX))


async def texts_found(mem: UserMemory, query: str = "bees roof Porto") -> set[str]:
    return {hit.text for hit in await mem.search(ALICE, query, k=50)}


async def stored_and_closed(path: Path, embedder: LocalEmbedder, texts: list[str] = TEXTS) -> list[str]:
    """ALICE's items stored and loaded once; closing writes her snapshot with her version."""
    async with opened(path, embedder) as mem:
        ids = await mem.add_many([(ALICE, t, None, GUILD) for t in texts])
        await mem.search(ALICE, "bees")
    return ids


def snapshot_file(path: Path) -> Path:
    [file] = [f for f in snapshot_files(path) if f.suffix == ".npz"]
    return file


# -- the records themselves --------------------------------------------------------------------


def test_a_user_has_no_version_until_a_write_of_theirs(tmp_path: Path) -> None:
    records = records_of(tmp_path / "chroma")
    assert records.read([ALICE, BOB]) == {ALICE: None, BOB: None}

    records.write([ALICE], lambda: None)

    now = records.read([ALICE, BOB])
    assert current(now[ALICE]) and now[BOB] is None


def test_a_write_puts_a_dirty_value_before_its_change_and_a_clean_new_one_after(tmp_path: Path) -> None:
    records = records_of(tmp_path / "chroma")
    records.write([ALICE], lambda: None)
    before = records.read([ALICE])[ALICE]

    seen, written = records.write([ALICE], lambda: records.read([ALICE])[ALICE])

    assert seen == written.dirty[ALICE] and not current(seen)  # while the change ran
    after = records.read([ALICE])[ALICE]
    assert after == written.after[ALICE] and current(after) and after not in (before, seen)
    assert written.before[ALICE] == before and written.during[ALICE] == seen


def test_a_change_that_fails_still_ends_with_a_clean_new_value_and_its_error(tmp_path: Path) -> None:
    records = records_of(tmp_path / "chroma")
    records.write([ALICE], lambda: None)
    before = records.read([ALICE])[ALICE]

    def failing() -> None:
        raise ValueError("the store refused the batch")

    with pytest.raises(ValueError, match="refused"):
        records.write([ALICE], failing)

    after = records.read([ALICE])[ALICE]
    assert current(after) and after != before


def test_a_write_claims_its_clean_value_only_for_a_copy_current_before_it_and_no_write_during_it(
        tmp_path: Path) -> None:
    records = records_of(tmp_path / "chroma")
    records.write([ALICE], lambda: None)
    held = records.read([ALICE])[ALICE]
    _, alone = records.write([ALICE], lambda: None)
    other = records_of(tmp_path / "chroma")
    _, overlapped = records.write([ALICE], lambda: other.write([ALICE], lambda: None))  # another write inside

    assert alone.claim(ALICE, held) == alone.after[ALICE]
    assert alone.claim(ALICE, alone.after[ALICE]) == alone.after[ALICE]  # a check took it already
    assert alone.claim(ALICE, "a version of long ago") is None
    assert alone.claim(ALICE, None) is None
    assert overlapped.claim(ALICE, alone.after[ALICE]) is None


def test_many_users_are_read_and_bumped_in_one_call_each(tmp_path: Path) -> None:
    records = records_of(tmp_path / "chroma")
    users = [f"user-{n}" for n in range(300)]
    calls: list[str] = []
    store = records._store
    real_get, real_upsert = store.get, store.upsert

    def get(**kwargs: object) -> list[StoredItem]:
        calls.append("get")
        return real_get(**kwargs)  # type: ignore[arg-type]

    def upsert(*args: object) -> None:
        calls.append("upsert")
        real_upsert(*args)  # type: ignore[arg-type]

    store.get, store.upsert = get, upsert  # type: ignore[method-assign]

    records.write(users, lambda: None)
    assert calls == ["get", "upsert", "get", "upsert"]  # before, dirty, during, clean

    values = records.read(users)
    assert calls[4:] == ["get"]
    assert len(set(values.values())) == len(users) and all(current(v) for v in values.values())


# -- cold loads of the memory -----------------------------------------------------------------


async def test_a_cold_load_whose_version_is_current_reads_no_ids_and_ranks_as_chroma_does(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)

    async with opened(path, local_embedder) as mem:
        from_snapshot = [(h.text, round(h.score, 9)) for h in await mem.search(ALICE, "bees number 7", k=10)]
        assert mem.last_load is not None and mem.last_load.route == "version"
        assert mem.last_load.items == len(TEXTS)
    async with opened(path, local_embedder, snapshots=False) as plain:
        from_chroma = [(h.text, round(h.score, 9)) for h in await plain.search(ALICE, "bees number 7", k=10)]
        assert plain.last_load is not None and plain.last_load.route == "chroma"
    assert from_snapshot == from_chroma


async def test_an_add_by_another_writer_since_the_snapshot_makes_the_load_check_ids(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    async with opened(path, local_embedder, snapshots=False) as elsewhere:
        await elsewhere.add(ALICE, "I moved the bees to Lisbon", scope=GUILD)

    async with opened(path, local_embedder) as mem:
        found = await texts_found(mem)
        assert mem.last_load is not None and mem.last_load.route == "ids"
    assert found == {*TEXTS, "I moved the bees to Lisbon"}
    async with opened(path, local_embedder) as again:  # the load rewrote the snapshot with the version
        assert await texts_found(again) == found
        assert again.last_load is not None and again.last_load.route == "version"


async def test_a_forget_by_another_writer_is_honoured_by_a_cold_load(tmp_path: Path,
                                                                      local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    ids = await stored_and_closed(path, local_embedder)
    async with opened(path, local_embedder, snapshots=False) as elsewhere:
        assert await elsewhere.delete(ALICE, ids[0])
        await elsewhere.add(BOB, "bees", scope=GUILD)

    async with opened(path, local_embedder) as mem:
        found = await texts_found(mem)
        assert mem.last_load is not None and mem.last_load.route == "ids"
    assert found == set(TEXTS[1:])


async def test_a_writer_that_died_between_its_items_and_its_clean_value_is_found(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    vector = ",".join(str(v) for v in local_embedder.embed(["the write that died"])[0])
    done = subprocess.run([sys.executable, "-c", DYING_WRITER, str(path), local_embedder.name, ALICE, vector],
                          capture_output=True, text=True, timeout=120,
                          env=with_repo_on_path())
    assert done.returncode == 3, done.stderr

    async with opened(path, local_embedder) as mem:
        found = await texts_found(mem, "the write that died")
        assert mem.last_load is not None and mem.last_load.route == "ids"
    assert "the write that died" in found and len(found) == len(TEXTS) + 1


async def test_items_added_while_a_cold_load_runs_are_in_every_later_load(tmp_path: Path,
                                                                          local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    late = [f"late note {n} about the bees" for n in range(6)]

    async with opened(path, local_embedder) as mem:
        results = await asyncio.gather(mem.search(ALICE, "bees", k=50),
                                       *(mem.add(ALICE, text, scope=GUILD) for text in late))
        assert set(TEXTS) <= {h.text for h in results[0]} <= {*TEXTS, *late}
        assert await texts_found(mem) == {*TEXTS, *late}
    async with opened(path, local_embedder) as again:
        assert await texts_found(again) == {*TEXTS, *late}


async def test_a_snapshot_whose_version_is_current_but_whose_file_is_corrupt_is_not_used(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    file = snapshot_file(path)
    raw = bytearray(file.read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 64] = bytes(64)  # bytes flipped inside the file: its checksums fail
    file.write_bytes(bytes(raw))

    async with opened(path, local_embedder) as mem:
        assert await texts_found(mem) == set(TEXTS)
        assert mem.last_load is not None and mem.last_load.route == "chroma"


async def test_a_snapshot_after_many_adds_in_one_process_keeps_the_version_of_the_last_write(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    async with opened(path, local_embedder) as mem:
        await mem.search(ALICE, "bees")
        for n in range(3):
            await mem.add(ALICE, f"one more hive, number {n}", scope=GUILD)
    kept = np.load(snapshot_file(path))["version"]
    assert str(kept) == records_of(path, local_embedder.name).read([ALICE])[ALICE]


async def test_a_cold_load_overtaken_by_an_add_is_checked_again_by_the_next_load(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    async with opened(path, local_embedder) as writer:  # a write that leaves the snapshot behind
        await writer.add(ALICE, "a note about the bees from elsewhere", scope=GUILD)

    async with opened(path, local_embedder) as mem:
        store, reached, go_on = mem._store, threading.Event(), threading.Event()
        read_ids = store.ids
        read_where: dict[str, object] = {}

        def ids_then_wait(**where: object) -> list[str]:
            found = read_ids(**where)  # the ids as they were before the add below
            read_where.update(where)
            reached.set()
            go_on.wait(30)
            return found

        store.ids = ids_then_wait  # type: ignore[method-assign]  # holds the cold load mid-read
        search = asyncio.create_task(mem.search(ALICE, "bees", k=50))
        assert await asyncio.to_thread(reached.wait, 30)
        held_ids = len(await asyncio.to_thread(read_ids, **read_where))
        adding = asyncio.create_task(mem.add(ALICE, "the note that overtook the load", scope=GUILD))

        async def landed() -> bool:
            return len(await asyncio.to_thread(read_ids, **read_where)) > held_ids

        assert await until(landed)  # the add's items are in Chroma while the load still holds its old ids
        go_on.set()
        await search
        await adding
        store.ids = read_ids  # type: ignore[method-assign]
        assert "the note that overtook the load" in await texts_found(mem, "the note that overtook the load")
    async with opened(path, local_embedder) as again:
        found = await texts_found(again, "the note that overtook the load")
    assert "the note that overtook the load" in found and "a note about the bees from elsewhere" in found


# -- a cached user ----------------------------------------------------------------------------


class CountedIds:
    """Counts the id reads (the checks) of a memory's store."""

    def __init__(self, mem: UserMemory) -> None:
        self.calls = 0
        real = mem._store.ids

        def counted(**where: object) -> list[str]:
            self.calls += 1
            return real(**where)  # type: ignore[arg-type]

        mem._store.ids = counted  # type: ignore[method-assign]


async def test_a_cached_user_is_checked_against_ids_only_after_another_writer_changed_her_version(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    async with opened(path, local_embedder, snapshots=False) as mem, \
            opened(path, local_embedder, snapshots=False) as other:
        await mem.add_many([(ALICE, t, None, GUILD) for t in TEXTS])
        await mem.search(ALICE, "bees")
        checks = CountedIds(mem)
        await mem.add(ALICE, "my own new note on the bees", scope=GUILD)
        await mem.search(ALICE, "bees")
        await mem.list(ALICE)
        assert checks.calls == 0  # her version is the one this memory's copy holds

        await other.add(ALICE, "the bees swarmed in May", scope=GUILD)

        assert "the bees swarmed in May" in await texts_found(mem, "bees swarmed")  # the next search
        assert checks.calls == 1
        await mem.search(ALICE, "bees")
        assert checks.calls == 1


async def test_a_delete_elsewhere_of_a_cached_users_item_purges_it_from_this_processs_snapshot(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    ids = await stored_and_closed(path, local_embedder, [*TEXTS, "a secret about the cello teacher"])
    async with opened(path, local_embedder) as mem:
        await mem.search(ALICE, "bees")
        assert b"cello" in snapshot_file(path).read_bytes()
        async with opened(path, local_embedder, snapshots=False) as elsewhere:
            assert await elsewhere.delete(ALICE, ids[-1])

        assert "a secret about the cello teacher" not in await texts_found(mem, "cello secret teacher")

        async def purged() -> bool:
            return not mem._copies._saving and b"cello" not in snapshot_file(path).read_bytes()

        assert await until(purged)


# -- writes whose caller gave up --------------------------------------------------------------


class HeldCall:
    """One Chroma call of a memory held until the test lets it go (it then runs as it would)."""

    def __init__(self, mem: UserMemory, name: str) -> None:
        self.store, self.name, self.go_on = mem._store, name, threading.Event()
        self.real = getattr(self.store, name)

        def held(*args: object, **kwargs: object) -> object:
            self.go_on.wait(60)
            return self.real(*args, **kwargs)

        setattr(self.store, name, held)

    def release(self) -> None:
        setattr(self.store, self.name, self.real)  # later calls run at once
        self.go_on.set()


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 20.0) -> bool:
    for _ in range(int(seconds / 0.1)):
        if await check():
            return True
        await asyncio.sleep(0.1)
    return False


async def found_while_a_write_outlives_its_caller(mem: UserMemory, call: str, write: Awaitable[object]) -> set[str]:
    """What a search finds while `write`, its store `call` held past the op timeout, has failed for
    its caller and still runs on its thread (let go afterwards)."""
    held = HeldCall(mem, call)
    try:
        with pytest.raises(StoreUnavailable):
            await write
        return await texts_found(mem)
    finally:
        held.release()


async def test_an_add_that_timed_out_but_landed_is_found_by_later_searches_and_after_a_restart(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    async with opened(path, local_embedder, op_timeout_s=1.0) as mem:
        await mem.add(ALICE, "bees one", scope=GUILD)
        meanwhile = await found_while_a_write_outlives_its_caller(
            mem, "add", mem.add(ALICE, "bees that were late", scope=GUILD))
        assert "bees that were late" not in meanwhile  # loaded while it still writes

        async def found() -> bool:
            return "bees that were late" in await texts_found(mem)

        assert await until(found)
        await mem.add(ALICE, "bees three", scope=GUILD)
    async with opened(path, local_embedder) as again:
        assert await texts_found(again) == {"bees one", "bees that were late", "bees three"}


async def test_a_forget_that_timed_out_but_landed_stays_forgotten_in_later_searches_and_after_a_restart(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    async with opened(path, local_embedder, op_timeout_s=1.0) as mem:
        await mem.add(ALICE, "bees secret", scope=GUILD)
        meanwhile = await found_while_a_write_outlives_its_caller(mem, "delete", mem.forget(ALICE))
        assert "bees secret" in meanwhile  # loaded before the delete landed

        async def gone() -> bool:
            return "bees secret" not in await texts_found(mem)

        assert await until(gone)
        await mem.add(ALICE, "bees later", scope=GUILD)
    async with opened(path, local_embedder) as again:
        assert await texts_found(again) == {"bees later"}


class HeldAfterReading:
    """The store's `get_with_embeddings` reads, then waits until the test lets it answer: a cold
    load that outlives the search that started it, holding what it read."""

    def __init__(self, mem: UserMemory) -> None:
        self.store, self.go_on = mem._store, threading.Event()
        self.real = self.store.get_with_embeddings

        def held(*args: object, **kwargs: object) -> object:
            read = self.real(*args, **kwargs)
            if kwargs.get("embeddings", True):  # a load's read (the store's own `get` reads without)
                self.go_on.wait(60)
            return read

        self.store.get_with_embeddings = held  # type: ignore[method-assign]

    def release(self) -> None:
        self.store.get_with_embeddings = self.real  # type: ignore[method-assign]
        self.go_on.set()


def counted_loads(mem: UserMemory) -> list[str]:
    loads: list[str] = []
    real = mem._copies._load

    def load(user_id: str, version: str | None) -> object:
        loads.append(user_id)
        return real(user_id, version)

    mem._copies._load = load  # type: ignore[method-assign]
    return loads


@contextlib.asynccontextmanager
async def search_given_up_on_a_held_load(tmp_path: Path, local_embedder: LocalEmbedder
                                         ) -> AsyncIterator[tuple[UserMemory, HeldAfterReading, list[str]]]:
    """Alice's 12 items stored (no snapshot: a load reads Chroma), the store opened again with a
    3 s op timeout, and her first search given up on its load, which has read her items and is
    held: (the memory, the hold, the users loaded)."""
    path = tmp_path / "chroma"
    async with open_user_memory(str(path), embedder=local_embedder) as mem:
        await mem.add_many([(ALICE, t, None, GUILD) for t in TEXTS])
    async with open_user_memory(str(path), embedder=local_embedder, op_timeout_s=3.0) as mem:
        loads = counted_loads(mem)
        held = HeldAfterReading(mem)
        with pytest.raises(StoreUnavailable):
            await mem.search(ALICE, "bees")
        yield mem, held, loads


async def test_a_cold_load_that_outlives_its_search_is_taken_over_by_the_next_not_started_again(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    async with search_given_up_on_a_held_load(tmp_path, local_embedder) as (mem, held, loads):
        search = asyncio.create_task(texts_found(mem))  # waits for the load still running
        await asyncio.sleep(0.2)
        assert ALICE in mem._copies._loads and not search.done()
        held.release()

        assert await search == set(TEXTS)
        assert loads == [ALICE]


async def test_a_load_that_read_before_a_forget_is_never_cached_nor_served_after_it(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    async with search_given_up_on_a_held_load(tmp_path, local_embedder) as (mem, held, _):
        load = mem._copies._loads[ALICE]
        try:
            assert await mem.forget(ALICE) == len(TEXTS)
        finally:
            held.release()
        await asyncio.wrap_future(load)
        await asyncio.sleep(0.1)  # its done-callback has run on the loop

        assert mem._copies._cache.peek(ALICE) is None
        assert await texts_found(mem) == set()
        await mem.add(ALICE, "bees after the forget", scope=GUILD)
        assert await texts_found(mem) == {"bees after the forget"}


async def test_a_load_that_read_before_a_forget_that_timed_out_is_never_cached(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    async with search_given_up_on_a_held_load(tmp_path, local_embedder) as (mem, held, _):
        load = mem._copies._loads[ALICE]
        erasing = HeldCall(mem, "delete")  # the forget's delete outlives the op timeout
        try:
            with pytest.raises(StoreUnavailable):
                await mem.forget(ALICE)
            held.release()
            await asyncio.wrap_future(load)
            await asyncio.sleep(0.1)  # its done-callback has run on the loop

            assert mem._copies._cache.peek(ALICE) is None
        finally:
            held.release()
            erasing.release()


async def test_a_cold_load_that_ends_after_its_search_gave_up_is_cached_not_held_aside(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    async with search_given_up_on_a_held_load(tmp_path, local_embedder) as (mem, held, loads):
        held.release()

        async def cached() -> bool:
            return mem._copies._cache.peek(ALICE) is not None

        assert await until(cached)  # no search waits for it any more
        assert mem._copies._loads == {}
        assert await texts_found(mem) == set(TEXTS)
        assert loads == [ALICE]
