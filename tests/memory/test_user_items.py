"""A user's items (memory.semantic.user_items) as columns and back: what comes back is what went in,
and arrays that do not fit together are refused, not served."""

from __future__ import annotations

import numpy as np
import pytest

from memory.semantic.chroma_backend import StoredItem
from memory.semantic.user_items import _COPY_ROWS, UserItems

ITEMS = [
    StoredItem("a", "plain text", {"scope": "dm", "created_at": 1.0, "kind": "exchange", "trace_id": "t1"}),
    StoredItem("b", "", {"scope": "guild:1", "created_at": 2.0, "kind": "reply", "trace_id": "t1"}),
    StoredItem("c", "ünïcödé 🐝 and \n newlines \x00 too", {"scope": "dm", "created_at": 3.0, "flag": True}),
]


def entry_of(items: list[StoredItem]) -> UserItems:
    entry = UserItems()
    entry.append(items, np.eye(len(items), 4, dtype=np.float32))
    return entry


def test_rows_restored_from_columns_read_back_as_they_were_stored() -> None:
    restored = UserItems.from_columns(entry_of(ITEMS).columns())

    assert [restored.items[n] for n in range(len(ITEMS))] == ITEMS
    assert restored.ids == ["a", "b", "c"] and restored.live == 3
    assert restored.replies.tolist() == [False, True, False]
    codes = restored.exchanges.tolist()
    assert codes[0] == codes[1] >= 0 and codes[2] == -1  # one exchange: the message and its reply


def test_rows_appended_after_a_restore_are_kept_and_restored_again_with_the_rest() -> None:
    restored = UserItems.from_columns(entry_of(ITEMS[:2]).columns())
    restored.append([ITEMS[2]], np.eye(1, 4, dtype=np.float32))
    restored.remove(["a"])

    again = UserItems.from_columns(restored.columns())
    assert [again.items[n] for n in range(2)] == ITEMS[1:]
    assert np.array_equal(again.matrix, restored.matrix[1:])


def test_no_items_make_empty_columns_and_back() -> None:
    restored = UserItems.from_columns(UserItems().columns())
    assert len(restored) == 0 and len(restored.items) == 0


@pytest.mark.parametrize("ends", [[3, 5, 99], [5, 3, 12], [3, 5]])
def test_text_ends_that_do_not_fit_the_texts_are_refused(ends: list[int]) -> None:
    columns = entry_of(ITEMS).columns()
    columns["text_ends"] = np.array(ends, np.int64)
    with pytest.raises(ValueError):
        UserItems.from_columns(columns)


def test_metadata_that_is_not_an_object_is_refused_when_restored() -> None:
    columns = entry_of(ITEMS[:1]).columns()
    columns["metas"], columns["meta_ends"] = np.frombuffer(b"[1]", np.uint8), np.array([3], np.int64)
    with pytest.raises(ValueError):
        UserItems.from_columns(columns)


@pytest.mark.parametrize("column", ["created", "scope", "reply", "exchange", "matrix"])
def test_columns_of_different_lengths_are_refused(column: str) -> None:
    columns = entry_of(ITEMS).columns()
    columns[column] = columns[column][:-1]
    with pytest.raises(ValueError):
        UserItems.from_columns(columns)


def test_a_scope_code_out_of_range_is_refused() -> None:
    columns = entry_of(ITEMS).columns()
    columns["scope"] = np.array([0, 1, 7], np.int32)
    with pytest.raises(ValueError):
        UserItems.from_columns(columns)


def numbered(n: int) -> StoredItem:
    """Item n; its words come from a small vocabulary (the keyword index keeps objects per term)."""
    return StoredItem(f"id{n}", f"text {n % 40} ü", {"scope": "dm", "created_at": float(n), "n": n})


def test_rows_appended_one_at_a_time_and_in_bulk_read_back_in_order_and_restore_again() -> None:
    entry = UserItems()
    expected = [numbered(n) for n in range(1200)]
    for item in expected[:300]:
        entry.append([item], np.ones((1, 4), np.float32))
    entry.append(expected[300:1000], np.ones((700, 4), np.float32))
    entry.append([], np.ones((0, 4), np.float32))
    entry.append(expected[1000:], np.ones((200, 4), np.float32))

    assert len(entry) == 1200 and entry.items == expected
    assert UserItems.from_columns(entry.columns()).items == expected


def test_columns_of_more_rows_than_one_copy_takes_keep_every_live_vector_and_id_in_order() -> None:
    count = 3 * _COPY_ROWS + 17  # several copies, the last one short
    vectors = np.random.default_rng(7).standard_normal((count, 4)).astype(np.float32)
    entry = UserItems()
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
    entry = UserItems()
    entry.append([numbered(n) for n in range(count)], np.ones((count, 4), np.float32))
    restored = UserItems.from_columns(entry.columns())
    assert restored.ids == [f"id{n}" for n in range(count)]
    assert all(restored.row(f"id{n}") == n for n in range(count))


def test_an_id_twice_across_two_copies_is_refused_when_restored() -> None:
    count = _COPY_ROWS + 10
    entry = UserItems()
    entry.append([numbered(n) for n in range(count)], np.ones((count, 4), np.float32))
    columns = entry.columns()
    columns["ids"] = columns["ids"].copy()
    columns["ids"][_COPY_ROWS + 5] = columns["ids"][3]  # one copy's id again in the next
    with pytest.raises(ValueError, match="twice"):
        UserItems.from_columns(columns)


def test_columns_of_a_user_with_every_row_alive_stay_as_they_were_while_the_user_grows() -> None:
    entry = entry_of(ITEMS[:2])
    columns = entry.columns()
    entry.append([ITEMS[2]], np.full((1, 4), 9, np.float32))  # the matrix is moved to a larger one
    entry.append([numbered(n) for n in range(20)], np.full((20, 4), 7, np.float32))

    assert not columns["matrix"].flags.writeable
    assert np.array_equal(columns["matrix"], np.eye(2, 4, dtype=np.float32))
    restored = UserItems.from_columns(columns)
    restored.append([ITEMS[2]], np.full((1, 4), 5, np.float32))
    assert np.array_equal(columns["matrix"], np.eye(2, 4, dtype=np.float32))  # not written through
    assert np.array_equal(entry.matrix[:2], np.eye(2, 4, dtype=np.float32))
