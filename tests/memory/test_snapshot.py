"""Snapshots of users' items (memory.semantic.snapshot): a cold load reads them, and never serves stale,
forgotten or damaged ones."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from memory.semantic.chroma_backend import StoredItem
from memory.semantic.embeddings import LocalEmbedder
from memory.semantic import UserMemory, open_user_memory, scope_for
from memory.semantic.snapshot import WRITE_BYTES, Snapshots, write_npz
from memory.semantic.user_items import UserItems
from tests.memory.fixtures_semantic import opened, snapshot_files

ALICE = "111111111111111111"
BOB = "222222222222222222"
GUILD = scope_for("900000000000000000")
TEXTS = ["I sail to Oslo every summer", "my cat Miso hates the vacuum", "I am learning the cello",
         "we painted the kitchen yellow", "my brother lives in Porto"]


async def searched(mem: UserMemory, query: str) -> list[tuple[str, float]]:
    return [(h.text, round(h.score, 9)) for h in await mem.search(ALICE, query, k=10)]


async def written(path: Path, embedder: LocalEmbedder, texts: list[str]) -> list[str]:
    """Store `texts` for ALICE and load her once, which leaves her snapshot on disk."""
    async with opened(path, embedder) as mem:
        ids = await mem.add_many([(ALICE, t, None, GUILD) for t in texts])
        await mem.search(ALICE, "anything")
    assert len(snapshot_files(path)) == 1
    return ids


async def test_a_cold_search_from_a_snapshot_ranks_as_a_load_from_chroma(tmp_path: Path,
                                                                          local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await written(path, local_embedder, TEXTS)

    async with opened(path, local_embedder) as restored:
        from_snapshot = await searched(restored, "where does my brother live?")
    async with opened(path, local_embedder, snapshots=False) as plain:
        from_chroma = await searched(plain, "where does my brother live?")

    assert from_snapshot == from_chroma
    assert from_snapshot[0][0] == "my brother lives in Porto"


async def test_a_stale_snapshot_gains_items_added_and_loses_items_deleted_since(tmp_path: Path,
                                                                                local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    ids = await written(path, local_embedder, TEXTS)
    async with opened(path, local_embedder, snapshots=False) as elsewhere:  # writes the snapshot never saw
        await elsewhere.add(ALICE, "my new bike is a red gravel bike", scope=GUILD)
        await elsewhere.delete(ALICE, ids[4])

    async with opened(path, local_embedder) as mem:
        texts = [text for text, _ in await searched(mem, "bike brother Porto")]

    assert texts[0] == "my new bike is a red gravel bike"
    assert "my brother lives in Porto" not in texts
    assert len(texts) == len(TEXTS)


async def test_a_forget_removes_the_snapshot_and_nothing_forgotten_comes_back(tmp_path: Path,
                                                                             local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await written(path, local_embedder, TEXTS)

    async with opened(path, local_embedder) as mem:
        await mem.search(ALICE, "cello")
        assert await mem.forget(ALICE) == len(TEXTS)
        assert snapshot_files(path) == []
    async with opened(path, local_embedder) as reopened:
        assert await reopened.search(ALICE, "cello") == []


async def test_a_forget_by_another_memory_is_honoured_and_purged_from_the_file(tmp_path: Path,
                                                                               local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await written(path, local_embedder, [*TEXTS, "a secret about the cello teacher"])
    async with opened(path, local_embedder, snapshots=False) as elsewhere:
        await elsewhere.forget(ALICE)
        await elsewhere.add(ALICE, "I moved to Berlin", scope=GUILD)

    async with opened(path, local_embedder) as mem:
        assert [h.text for h in await mem.search(ALICE, "cello secret teacher")] == ["I moved to Berlin"]
    files = snapshot_files(path)

    assert len(files) == 1
    assert b"cello" not in files[0].read_bytes()


GARDEN = [f"note {n}: the tomatoes in bed {n % 7} need water" for n in range(60)]


async def saves_done(mem: UserMemory) -> None:
    """Wait until no snapshot of this memory is being written (they run on its worker threads)."""
    for _ in range(1000):
        if not mem._copies._saving:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("a snapshot was still being written after 10 s")


def saved_ids(path: Path) -> int:
    [file] = snapshot_files(path)
    with np.load(file) as data:
        return len(data["c_ids"])


async def test_while_a_users_writes_go_on_her_snapshot_waits_for_a_quarter_of_her_items_to_be_new(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    async with open_user_memory(str(path), embedder=local_embedder, snapshot_after=10) as mem:
        await mem.add_many([(ALICE, t, None, GUILD) for t in GARDEN[:40]])
        await mem.search(ALICE, "tomatoes")  # her first load writes a snapshot of all 40
        await saves_done(mem)
        assert saved_ids(path) == 40

        await mem.add_many([(ALICE, t, None, GUILD) for t in GARDEN[40:50]])  # 10 of 50 new: under a quarter
        await saves_done(mem)
        assert saved_ids(path) == 40

        await mem.add_many([(ALICE, t, None, GUILD) for t in GARDEN[50:60]])  # 20 of 60 new: over a quarter
        await saves_done(mem)
        assert saved_ids(path) == 60


async def test_a_snapshot_left_behind_by_writes_is_rewritten_on_close_and_then_used_as_it_is(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    async with open_user_memory(str(path), embedder=local_embedder, snapshot_after=10) as mem:
        await mem.add_many([(ALICE, t, None, GUILD) for t in GARDEN[:40]])
        await mem.search(ALICE, "tomatoes")
        await saves_done(mem)
        await mem.add_many([(ALICE, t, None, GUILD) for t in GARDEN[40:50]])
        await saves_done(mem)
        assert saved_ids(path) == 40  # left behind while she writes
    assert saved_ids(path) == 50  # closing wrote what the writes left out

    async with open_user_memory(str(path), embedder=local_embedder, snapshot_after=10) as again:
        found = await again.search(ALICE, "tomatoes in bed 3", k=60)
        assert again.last_load is not None and again.last_load.route == "version"  # the file as it is
        assert sorted(h.text for h in found) == sorted(GARDEN[:50])


async def test_a_damaged_snapshot_is_ignored_removed_and_rewritten(tmp_path: Path,
                                                                  local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    await written(path, local_embedder, TEXTS)
    [file] = snapshot_files(path)
    whole = file.read_bytes()
    file.write_bytes(whole[: len(whole) // 2])  # a write torn in half
    (file.parent / "leftover.tmp").write_bytes(whole[:100])  # a crash before the rename

    async with opened(path, local_embedder) as mem:
        assert not (file.parent / "leftover.tmp").exists()
        assert len(await mem.search(ALICE, "cat vacuum", k=10)) == len(TEXTS)
    assert file.read_bytes() != whole[: len(whole) // 2]
    async with opened(path, local_embedder) as again:
        assert (await again.search(ALICE, "cat vacuum"))[0].text == "my cat Miso hates the vacuum"


def columns(texts: list[str]) -> dict[str, np.ndarray]:
    entry = UserItems()
    items = [StoredItem(f"id{n}", t, {"scope": "dm", "user_id": ALICE}) for n, t in enumerate(texts)]
    entry.append(items, np.eye(len(texts), 4, dtype=np.float32))
    return entry.columns()


def test_a_save_prepared_before_a_drop_writes_nothing(tmp_path: Path) -> None:
    snapshots = Snapshots(tmp_path, embedder="model")
    generation = snapshots.generation(ALICE)
    snapshots.drop(ALICE)  # the user forgot while the save was being prepared

    assert not snapshots.save(ALICE, columns(TEXTS[:2]), None, generation)
    assert list(tmp_path.iterdir()) == []


def test_a_snapshot_is_not_restored_for_another_user_or_another_model(tmp_path: Path) -> None:
    snapshots = Snapshots(tmp_path, embedder="model")
    assert snapshots.save(ALICE, columns(TEXTS[:2]), None, snapshots.generation(ALICE))
    snapshots.path(ALICE).rename(snapshots.path(BOB))  # a file swapped under another user's name

    assert snapshots.load(BOB) is None
    assert snapshots.save(ALICE, columns(TEXTS[:2]), None, snapshots.generation(ALICE))
    restored = snapshots.load(ALICE)
    assert restored is not None and [restored[0].items[n].text for n in range(2)] == TEXTS[:2]
    assert Snapshots(tmp_path, embedder="another model").load(ALICE) is None


def test_a_snapshot_file_reads_back_as_numpys_own_savez_of_the_same_arrays(tmp_path: Path) -> None:
    arrays = {"scalar": np.array("a token ☃"), "empty": np.zeros((0, 384), np.float32),
              "vectors": np.random.default_rng(1).random((3000, 384), dtype=np.float32),
              "strided": np.arange(30.0).reshape(10, 3)[:, 1], "flags": np.array([True, False]),
              "ids": np.array(["1", "22", "é☃"]), "ends": np.arange(3 * WRITE_BYTES // 8, dtype=np.int64)}
    ours, numpys = tmp_path / "ours.npz", tmp_path / "numpys.npz"
    with ours.open("wb") as out:
        write_npz(out, arrays)
    np.savez(numpys, **arrays)
    with np.load(ours, allow_pickle=False) as got, np.load(numpys, allow_pickle=False) as want:
        assert got.files == want.files
        for name in want.files:
            assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape
            assert np.array_equal(got[name], want[name]), name


def test_an_array_of_python_objects_is_refused_by_the_snapshot_writer(tmp_path: Path) -> None:
    with (tmp_path / "x.npz").open("wb") as out, pytest.raises(ValueError, match="Python objects"):
        write_npz(out, {"bad": np.array([{"a": 1}], dtype=object)})
