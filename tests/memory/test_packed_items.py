"""Packed items (memory.semantic.packed_items) and the columns of UserItems they restore into: what comes
back is what went in, and arrays that do not fit together are refused, not served."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from memory.semantic.chroma_backend import StoredItem
from memory.semantic.packed_items import PackedItems
from memory.semantic.user_items import _COPY_ROWS, UserItems

ITEMS = [
    StoredItem("a", "plain text", {"scope": "dm", "created_at": 1.0, "kind": "exchange", "trace_id": "t1"}),
    StoredItem("b", "", {"scope": "guild:1", "created_at": 2.0, "kind": "reply", "trace_id": "t1"}),
    StoredItem("c", "ünïcödé 🐝 and \n newlines \x00 too", {"scope": "dm", "created_at": 3.0, "flag": True}),
]


def entry_of(items: list[StoredItem]) -> UserItems:
    entry = UserItems(0)
    entry.append(items, np.eye(len(items), 4, dtype=np.float32))
    return entry


def test_rows_restored_from_columns_read_back_as_they_were_stored() -> None:
    restored = UserItems.from_columns(1, entry_of(ITEMS).columns())

    assert [restored.items[n] for n in range(len(ITEMS))] == ITEMS
    assert restored.ids == ["a", "b", "c"] and restored.live == 3
    assert restored.replies.tolist() == [False, True, False]
    codes = restored.exchanges.tolist()
    assert codes[0] == codes[1] >= 0 and codes[2] == -1  # one exchange: the message and its reply


def test_rows_appended_after_a_restore_are_kept_and_packed_again_with_the_rest() -> None:
    restored = UserItems.from_columns(1, entry_of(ITEMS[:2]).columns())
    restored.append([ITEMS[2]], np.eye(1, 4, dtype=np.float32))
    restored.remove(["a"])

    again = UserItems.from_columns(2, restored.columns())
    assert [again.items[n] for n in range(2)] == ITEMS[1:]
    assert np.array_equal(again.matrix, restored.matrix[1:])


def test_nothing_packs_to_empty_columns_and_back() -> None:
    restored = UserItems.from_columns(0, UserItems(0).columns())
    assert len(restored) == 0 and len(restored.items) == 0


def test_offsets_that_do_not_fit_the_blobs_are_refused() -> None:
    packed = PackedItems().packed([])
    with pytest.raises(ValueError):
        PackedItems(["a"], packed["texts"], np.array([5]), packed["metas"], np.array([0]))
    with pytest.raises(ValueError):
        PackedItems(["a", "b"], np.frombuffer(b"xy", np.uint8), np.array([2, 1]), np.frombuffer(b"{}{}", np.uint8),
                    np.array([2, 4]))


def test_metadata_that_is_not_an_object_is_refused_when_read() -> None:
    items = PackedItems(["a"], np.frombuffer(b"hi", np.uint8), np.array([2]), np.frombuffer(b"[1]", np.uint8),
                        np.array([3]))
    with pytest.raises(ValueError):
        items[0]


@pytest.mark.parametrize("column", ["created", "scope", "reply", "exchange", "matrix"])
def test_columns_of_different_lengths_are_refused(column: str) -> None:
    columns = entry_of(ITEMS).columns()
    columns[column] = columns[column][:-1]
    with pytest.raises(ValueError):
        UserItems.from_columns(0, columns)


def test_a_scope_code_out_of_range_is_refused() -> None:
    columns = entry_of(ITEMS).columns()
    columns["scope"] = np.array([0, 1, 7], np.int32)
    with pytest.raises(ValueError):
        UserItems.from_columns(0, columns)


def numbered(n: int) -> StoredItem:
    """Item n; its words come from a small vocabulary (the keyword index keeps objects per term)."""
    return StoredItem(f"id{n}", f"text {n % 40} ü", {"scope": "dm", "created_at": float(n), "n": n})


def test_rows_appended_one_at_a_time_and_in_bulk_read_back_in_order_and_pack_again() -> None:
    items = PackedItems()
    expected = [numbered(n) for n in range(1200)]
    for item in expected[:300]:  # single adds: past the size at which a segment stops growing
        items.extend([item])
    items.extend(expected[300:1000])
    items.extend([])
    items.extend(expected[1000:])

    assert len(items) == 1200
    assert [items[n] for n in range(1200)] == expected
    assert items[-1] == expected[-1]
    again = UserItems.from_columns(0, entry_of(expected).columns()).items
    assert [again[n] for n in range(1200)] == expected
    with pytest.raises(IndexError):
        items[1200]


def test_appended_rows_add_no_objects_for_the_garbage_collector_to_walk() -> None:
    entry = UserItems(0)
    before = len(gc.get_objects())
    for start in range(0, 5000, 250):
        chunk = [numbered(n) for n in range(start, start + 250)]
        entry.append(chunk, np.ones((250, 4), np.float32))
        del chunk
    gc.collect()

    assert entry.items[4999] == numbered(4999)
    assert len(gc.get_objects()) - before < 500  # not one (or more) per row: 5,000 rows


def test_columns_of_more_rows_than_one_copy_takes_keep_every_live_vector_and_id_in_order() -> None:
    count = 3 * _COPY_ROWS + 17  # several copies, the last one short
    vectors = np.random.default_rng(7).standard_normal((count, 4)).astype(np.float32)
    entry = UserItems(0)
    for start in range(0, count, 1000):  # the matrix doubles (and is copied) several times
        chunk = [numbered(n) for n in range(start, min(count, start + 1000))]
        entry.append(chunk, vectors[start:start + len(chunk)])
    entry.remove([f"id{n}" for n in range(0, count, 3)])

    columns = entry.columns()
    kept = [n for n in range(count) if n % 3]
    assert columns["ids"].tolist() == [f"id{n}" for n in kept]
    assert np.array_equal(columns["matrix"], vectors[kept])
    assert np.array_equal(entry.matrix, vectors)


def test_more_rows_than_one_copy_takes_restore_with_each_id_at_its_own_row() -> None:
    count = 3 * _COPY_ROWS + 17  # the ids are listed and mapped a copy at a time
    entry = UserItems(0)
    entry.append([numbered(n) for n in range(count)], np.ones((count, 4), np.float32))
    restored = UserItems.from_columns(1, entry.columns())
    assert restored.ids == [f"id{n}" for n in range(count)]
    assert all(restored.row(f"id{n}") == n for n in range(count))


def test_an_id_twice_across_two_copies_is_refused_when_restored() -> None:
    count = _COPY_ROWS + 10
    entry = UserItems(0)
    entry.append([numbered(n) for n in range(count)], np.ones((count, 4), np.float32))
    columns = entry.columns()
    columns["ids"] = columns["ids"].copy()
    columns["ids"][_COPY_ROWS + 5] = columns["ids"][3]  # one copy's id again in the next
    with pytest.raises(ValueError, match="twice"):
        UserItems.from_columns(1, columns)


def segmented(count: int) -> tuple[PackedItems, list[StoredItem]]:
    """Items packed in segments of every kind: single adds merged into small ones, then bulk."""
    expected = [numbered(n) for n in range(count)]
    items = PackedItems()
    for item in expected[:300]:
        items.extend([item])
    for start in range(300, count, 400):
        items.extend(expected[start:start + 400])
    return items, expected


def test_any_ascending_rows_pack_to_the_bytes_of_those_rows_in_order() -> None:
    items, expected = segmented(1500)
    rng = np.random.default_rng(11)
    for share in (0.0, 0.01, 0.5, 0.99, 1.0):
        rows = np.flatnonzero(rng.random(len(expected)) < share)
        restored = PackedItems([expected[r].id for r in rows], **items.packed(rows))
        assert [restored[n] for n in range(len(rows))] == [expected[r] for r in rows]


def test_rows_out_of_order_twice_or_out_of_range_are_refused_by_packed() -> None:
    items, _ = segmented(400)
    for rows in ([3, 2], [5, 5]):
        with pytest.raises(ValueError):
            items.packed(rows)
    for rows in ([400], [-1, 3]):
        with pytest.raises(IndexError):
            items.packed(rows)


def test_columns_of_a_user_with_every_row_alive_stay_as_they_were_while_the_user_grows() -> None:
    entry = entry_of(ITEMS[:2])
    columns = entry.columns()
    entry.append([ITEMS[2]], np.full((1, 4), 9, np.float32))  # the matrix is moved to a larger one
    entry.append([numbered(n) for n in range(20)], np.full((20, 4), 7, np.float32))

    assert not columns["matrix"].flags.writeable
    assert np.array_equal(columns["matrix"], np.eye(2, 4, dtype=np.float32))
    restored = UserItems.from_columns(1, columns)
    restored.append([ITEMS[2]], np.full((1, 4), 5, np.float32))
    assert np.array_equal(columns["matrix"], np.eye(2, 4, dtype=np.float32))  # not written through
    assert np.array_equal(entry.matrix[:2], np.eye(2, 4, dtype=np.float32))
