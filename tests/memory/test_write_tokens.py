"""Write tokens (memory.semantic.write_tokens) against a real embedded Chroma: a mark while a write runs,
a new token after it, and the cold loads of memory.semantic that trust a snapshot only then."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from concurrent.futures import Future
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np
import pytest

from memory.semantic.chroma_backend import ChromaStore
from memory.semantic.embeddings import LocalEmbedder
from memory.semantic import user_memory as semantic
from memory.semantic import UserMemory, open_user_memory, scope_for
from memory.semantic.write_tokens import TOKEN_SUFFIX, WriteHold, WriteTokens
from tests.memory.fixtures_semantic import Clock

ALICE = "111111111111111111"
BOB = "222222222222222222"
GUILD = scope_for("900000000000000000")
TEXTS = [f"note {n}: I keep bees number {n} on the roof in Porto" for n in range(12)]

CRASHING_WRITER = """
import os, sys
import numpy as np
from memory.semantic.chroma_backend import ChromaStore
from memory.semantic.write_tokens import TOKEN_SUFFIX, WriteHold, WriteTokens
store = ChromaStore.open(path=sys.argv[1], host=None, port=None, collection="user_memory",
                         embedder_name=sys.argv[2], dimension=None)
tokens = WriteTokens(store.log(TOKEN_SUFFIX))
tokens.begin([sys.argv[3]])
store.add(["crashed-item"], np.asarray([sys.argv[4].split(",")], np.float32), ["the write that crashed"],
          [{"user_id": sys.argv[3], "scope": "", "created_at": 1.0}])
os._exit(3)  # dies after the write, before its user is settled
"""


def tokens_of(path: Path, clock: Clock | None = None, embedder: str = "test",
              monotonic: Clock | None = None) -> WriteTokens:
    store = ChromaStore.open(path=path, host=None, port=None, collection="user_memory", embedder_name=embedder,
                             dimension=None)
    timing = {"clock": clock} if clock else {}
    return WriteTokens(store.log(TOKEN_SUFFIX), **timing, **({"monotonic": monotonic} if monotonic else {}))


def opened(path: Path, embedder: LocalEmbedder, **options: object) -> UserMemory:
    return open_user_memory(str(path), embedder=embedder, snapshot_after=1, **options)  # type: ignore[arg-type]


async def texts_found(mem: UserMemory, query: str = "bees roof Porto") -> set[str]:
    return {hit.text for hit in await mem.search(ALICE, query, k=50)}


async def stored_and_closed(path: Path, embedder: LocalEmbedder, texts: list[str] = TEXTS,
                            **options: object) -> list[str]:
    """ALICE's items stored and loaded once; closing writes her snapshot with her token."""
    async with opened(path, embedder, **options) as mem:
        ids = await mem.add_many([(ALICE, t, None, GUILD) for t in texts])
        await mem.search(ALICE, "bees")
    return ids


# -- the tokens themselves ---------------------------------------------------------------------


def test_a_user_has_no_token_until_one_is_asked_for_or_written(tmp_path: Path) -> None:
    tokens = tokens_of(tmp_path / "chroma")
    assert tokens.current(ALICE) is None
    made = tokens.current(ALICE, create=True)
    assert made is not None and tokens.current(ALICE) == made
    assert tokens.current(BOB) is None


def test_from_a_writes_begin_until_it_is_settled_there_is_no_token_then_a_new_one(tmp_path: Path) -> None:
    tokens = tokens_of(tmp_path / "chroma")
    before = tokens.current(ALICE, create=True)
    tokens.begin([ALICE])
    assert tokens.current(ALICE) is None
    assert tokens.current(BOB, create=True) is not None  # another user's writes are apart
    tokens.end([ALICE])
    assert tokens.current(ALICE) is None  # ended, not settled: the mark stands

    settled = tokens.settle(ALICE)
    assert settled is not None and settled != before and tokens.current(ALICE) == settled
    assert tokens.settle(ALICE) is None  # nothing written since


def test_a_user_is_not_settled_while_any_write_of_theirs_runs(tmp_path: Path) -> None:
    tokens = tokens_of(tmp_path / "chroma")
    tokens.begin([ALICE])
    tokens.begin([ALICE, BOB])
    tokens.end([ALICE, BOB])

    assert tokens.settle(ALICE) is None and tokens.current(ALICE) is None
    assert tokens.settle_idle(0.0).keys() == {BOB}
    tokens.end([ALICE])
    assert tokens.settle(ALICE) == tokens.current(ALICE) is not None


def test_two_writers_marks_keep_the_token_unknown_until_both_settled(tmp_path: Path) -> None:
    first, second = tokens_of(tmp_path / "chroma"), tokens_of(tmp_path / "chroma")  # two processes' tokens
    first.begin([ALICE])
    second.begin([ALICE])
    second.end([ALICE])
    assert second.settle(ALICE) is not None

    assert second.current(ALICE) is None  # the first writer's mark still stands
    first.end([ALICE])
    assert first.settle(ALICE) == second.current(ALICE) is not None


def test_a_mark_left_by_a_dead_writer_expires_once_a_reader_has_seen_it_unchanged_for_the_stale_time(
        tmp_path: Path, clock: Clock) -> None:
    tokens = tokens_of(tmp_path / "chroma", clock)
    before = tokens.current(ALICE, create=True)
    tokens.begin([ALICE])  # a writer that never comes back: its mark stays
    reader = tokens_of(tmp_path / "chroma", monotonic=clock)
    assert reader.current(ALICE) is None  # first seen now
    clock.advance(seconds=599)
    assert reader.current(ALICE) is None

    clock.advance(seconds=2)
    assert reader.current(ALICE) is None  # this read renews the token and removes the mark
    after = reader.current(ALICE)
    assert after is not None and after != before


def test_a_live_writers_mark_is_not_taken_as_dead_by_a_reader_whose_clock_is_hours_ahead(
        tmp_path: Path, clock: Clock) -> None:
    writer = tokens_of(tmp_path / "chroma", clock)
    writer.begin([ALICE])
    ahead = Clock(clock.now + 3 * 3600)  # another host's wall clock, three hours ahead
    reader = tokens_of(tmp_path / "chroma", ahead, monotonic=ahead)

    assert reader.current(ALICE) is None
    assert reader.current(ALICE) is None
    writer.end([ALICE])
    assert writer.settle(ALICE) is not None  # the mark was still there to settle
    assert reader.current(ALICE) is not None


def test_a_writer_that_keeps_writing_refreshes_its_mark_so_it_is_never_taken_as_dead(
        tmp_path: Path, clock: Clock) -> None:
    store = ChromaStore.open(path=tmp_path / "chroma", host=None, port=None, collection="user_memory",
                             embedder_name="test", dimension=None).log(TOKEN_SUFFIX)
    writer, reader = WriteTokens(store, clock=clock, monotonic=clock), WriteTokens(store, monotonic=clock)
    writer.begin([ALICE])
    writer.end([ALICE])
    reader.current(ALICE)
    clock.advance(seconds=400)
    writer.begin([ALICE])  # older than a quarter of the stale time: refreshed
    writer.end([ALICE])
    reader.current(ALICE)
    clock.advance(seconds=400)

    assert reader.current(ALICE) is None
    assert [r.metadata["kind"] for r in store.get(where={"user_id": ALICE})] == ["mark"]


def test_one_long_write_keeps_its_mark_alive_through_refreshes_while_it_runs(tmp_path: Path, clock: Clock) -> None:
    store = ChromaStore.open(path=tmp_path / "chroma", host=None, port=None, collection="user_memory",
                             embedder_name="test", dimension=None).log(TOKEN_SUFFIX)
    writer, reader = WriteTokens(store, clock=clock, monotonic=clock), WriteTokens(store, monotonic=clock)
    writer.begin([ALICE])  # a write that runs for 20 minutes
    reader.current(ALICE)
    refreshed = 0
    for _ in range(8):
        clock.advance(seconds=155)
        refreshed += writer.refresh()
        assert reader.current(ALICE) is None
    assert refreshed == 8
    assert [r.metadata["kind"] for r in store.get(where={"user_id": ALICE})] == ["mark"]


def test_a_recent_mark_is_not_put_again_by_a_refresh(tmp_path: Path, clock: Clock) -> None:
    writer = tokens_of(tmp_path / "chroma", clock, monotonic=clock)
    writer.begin([ALICE])
    clock.advance(seconds=100)
    assert writer.refresh() == 0


# -- holds: a write's marks end when its threads have returned -------------------------------


def test_a_hold_ends_its_users_session_only_when_released_and_its_thread_task_returned(tmp_path: Path) -> None:
    tokens = tokens_of(tmp_path / "chroma")
    hold = WriteHold(tokens, [ALICE])
    hold.begin()
    task: Future[object] = Future()
    task.set_running_or_notify_cancel()
    hold.keep(task)

    hold.release()  # the caller gave up waiting (a timeout): the thread still writes
    assert not hold.ended and tokens.settle(ALICE) is None
    task.set_result(None)
    assert hold.ended
    assert tokens.settle(ALICE) is not None


def test_a_hold_whose_begin_failed_ends_no_other_writes_session(tmp_path: Path) -> None:
    tokens = tokens_of(tmp_path / "chroma")
    tokens.begin([ALICE])  # another write of hers, still running
    failed = WriteHold(tokens, [ALICE])  # its begin never ran to the end
    failed.release()
    assert failed.ended
    assert tokens.settle(ALICE) is None  # the other write's session still counts
    tokens.end([ALICE])
    assert tokens.settle(ALICE) is not None


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


async def test_a_write_that_times_out_keeps_its_mark_until_its_thread_has_written(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    async with opened(tmp_path / "chroma", local_embedder, op_timeout_s=1.0) as mem:
        tokens = mem._tokens
        assert tokens is not None
        held = HeldCall(mem, "add")  # Chroma slower than the op timeout
        try:
            with pytest.raises(semantic.StoreUnavailable):
                await mem.add(ALICE, "the write that outlived its caller", scope=GUILD)
            await mem._settle(0.0)
            assert tokens.has_session(ALICE)  # still writing: not settled
        finally:
            held.release()

        async def settled() -> bool:
            await mem._settle(0.0)
            return not tokens.has_session(ALICE)

        assert await until(settled)


async def test_the_settle_timer_puts_the_mark_of_a_write_still_running_again(
        tmp_path: Path, local_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "SETTLE_AFTER_S", 0.2)
    path = tmp_path / "chroma"
    async with opened(path, local_embedder, op_timeout_s=1.0) as mem:
        assert mem._tokens is not None
        mem._tokens._stale_after_s = 0.4  # a mark held for 0.1 s is due to be put again
        reader = tokens_of(path, embedder=local_embedder.name)

        def mark_times() -> set[str]:
            return {str(r.metadata["at"]) for r in reader._store.get(where={"user_id": ALICE})
                    if r.metadata.get("kind") == "mark"}

        held = HeldCall(mem, "add")
        try:
            with pytest.raises(semantic.StoreUnavailable):
                await mem.add(ALICE, "a write that outlives its caller", scope=GUILD)
            first = mark_times()
            assert len(first) == 1

            async def put_again() -> bool:
                return bool(mark_times() - first)

            assert await until(put_again, seconds=10.0)
        finally:
            held.release()


async def test_an_add_that_timed_out_but_landed_is_found_by_later_searches_and_after_a_restart(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    async with opened(path, local_embedder, op_timeout_s=1.0) as mem:
        await mem.add(ALICE, "bees one", scope=GUILD)
        held = HeldCall(mem, "add")
        try:
            with pytest.raises(semantic.StoreUnavailable):
                await mem.add(ALICE, "bees that were late", scope=GUILD)
            assert "bees that were late" not in await texts_found(mem)  # loaded while it still writes
        finally:
            held.release()

        async def found() -> bool:
            return "bees that were late" in await texts_found(mem)

        assert await until(found)
        await mem.add(ALICE, "bees three", scope=GUILD)  # settles, and snapshots what is cached
    async with opened(path, local_embedder) as again:
        assert await texts_found(again) == {"bees one", "bees that were late", "bees three"}


async def test_a_forget_that_timed_out_but_landed_stays_forgotten_in_later_searches_and_after_a_restart(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    async with opened(path, local_embedder, op_timeout_s=1.0) as mem:
        await mem.add(ALICE, "bees secret", scope=GUILD)
        held = HeldCall(mem, "delete")
        try:
            with pytest.raises(semantic.StoreUnavailable):
                await mem.forget(ALICE)
            assert "bees secret" in await texts_found(mem)  # loaded before the delete landed
        finally:
            held.release()

        async def gone() -> bool:
            return "bees secret" not in await texts_found(mem)

        assert await until(gone)
        await mem.add(ALICE, "bees later", scope=GUILD)
    async with opened(path, local_embedder) as again:
        assert await texts_found(again) == {"bees later"}


# -- cold loads of the memory -----------------------------------------------------------------


async def test_a_cold_load_whose_token_is_current_reads_no_ids_and_ranks_as_chroma_does(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)

    async with opened(path, local_embedder) as mem:
        from_snapshot = [(h.text, round(h.score, 9)) for h in await mem.search(ALICE, "bees number 7", k=10)]
        assert mem.last_load is not None and mem.last_load.route == "token"
        assert mem.last_load.ids_ms == 0.0 and mem.last_load.items == len(TEXTS)
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
    async with opened(path, local_embedder) as again:  # the load rewrote the snapshot with the token
        assert await texts_found(again) == found
        assert again.last_load is not None and again.last_load.route == "token"


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


async def test_a_writer_that_crashed_between_its_write_and_its_token_is_found(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    # Chroma in worker processes that end on close: the folder is open in no process when the
    # crashing writer (another process) writes to it
    await stored_and_closed(path, local_embedder, chroma_process=True)
    vector = ",".join(str(v) for v in local_embedder.embed(["the write that crashed"])[0])
    done = subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(path), local_embedder.name, ALICE, vector],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 3, done.stderr

    async with opened(path, local_embedder, chroma_process=True) as mem:
        found = await texts_found(mem, "the write that crashed")
        assert mem.last_load is not None and mem.last_load.route == "ids"
    assert "the write that crashed" in found and len(found) == len(TEXTS) + 1


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
        assert again.last_load is not None and again.last_load.route == "token"


async def test_a_snapshot_whose_token_is_current_but_whose_file_is_corrupt_is_not_used(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    [file] = (tmp_path / "chroma-snapshots" / "user_memory").glob("*.npz")
    raw = bytearray(file.read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 64] = bytes(64)  # bytes flipped inside the file: its checksums fail
    file.write_bytes(bytes(raw))

    async with opened(path, local_embedder) as mem:
        assert await texts_found(mem) == set(TEXTS)
        assert mem.last_load is not None and mem.last_load.route == "chroma"


async def test_a_snapshot_of_many_adds_in_one_process_keeps_the_last_writes_token(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    async with opened(path, local_embedder) as mem:
        await mem.search(ALICE, "bees")
        for n in range(3):
            await mem.add(ALICE, f"one more hive, number {n}", scope=GUILD)
    tokens = tokens_of(path, embedder=local_embedder.name)
    kept = np.load(next((tmp_path / "chroma-snapshots" / "user_memory").glob("*.npz")))["token"]
    assert str(kept) == tokens.current(ALICE)


async def test_a_users_writes_are_settled_once_none_came_for_a_while(tmp_path: Path, local_embedder: LocalEmbedder,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "SETTLE_AFTER_S", 0.3)
    path = tmp_path / "chroma"
    async with opened(path, local_embedder) as mem:
        tokens = tokens_of(path, embedder=local_embedder.name)
        await mem.add(ALICE, "the first hive", scope=GUILD)
        await mem.add(ALICE, "the second hive", scope=GUILD)
        assert tokens.current(ALICE) is None  # written, not settled yet
        await asyncio.sleep(1.0)
        settled = tokens.current(ALICE)
        assert settled is not None

        await mem.add(ALICE, "the third hive", scope=GUILD)
        assert tokens.current(ALICE) is None
    assert tokens.current(ALICE) not in (None, settled)  # closing settles too


async def test_a_cold_load_overtaken_by_an_add_writes_no_snapshot_a_later_load_would_trust(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await stored_and_closed(path, local_embedder)
    async with opened(path, local_embedder) as writer:  # a write that leaves the snapshot behind
        await writer.add(ALICE, "a note about the bees from elsewhere", scope=GUILD)

    async with opened(path, local_embedder) as mem:
        store, reached, go_on = mem._store, threading.Event(), threading.Event()
        read_ids = store.ids

        def ids_then_wait(**where: object) -> list[str]:
            found = read_ids(**where)  # the ids as they were before the add below
            reached.set()
            go_on.wait(30)
            return found

        store.ids = ids_then_wait  # type: ignore[method-assign]  (holds the cold load mid-read)
        search = asyncio.create_task(mem.search(ALICE, "bees", k=50))
        assert await asyncio.to_thread(reached.wait, 30)
        await mem.add(ALICE, "the note that overtook the load", scope=GUILD)
        go_on.set()
        await search
        store.ids = read_ids  # type: ignore[method-assign]
    async with opened(path, local_embedder) as again:
        found = await texts_found(again, "the note that overtook the load")
    assert "the note that overtook the load" in found and "a note about the bees from elsewhere" in found
