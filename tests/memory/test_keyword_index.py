"""Specification of memory.semantic.keyword_index: Okapi BM25 per person and scope, postings in SQLite."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.semantic.keyword_index import IndexedItem, KeywordIndex

ANN, BOB = "ann", "bob"


@pytest.fixture
def index() -> Iterator[KeywordIndex]:
    kept = KeywordIndex(None)
    yield kept
    kept.close()


def item(n: int, text: str, user: str = ANN, scope: str = "dm", created_at: float = 0.0,
         kind: str | None = None, exchange: str | None = None) -> IndexedItem:
    return IndexedItem(f"{user}-{n}", user, scope, created_at, 0.0, text, kind, exchange)


def index_of(*texts: str, user: str = ANN) -> KeywordIndex:
    made = KeywordIndex(None)
    made.add(item(n, t, user) for n, t in enumerate(texts))
    return made


def test_a_document_with_the_query_term_outranks_one_without() -> None:
    found = index_of("I joined a bouldering gym", "my cat hid under the bed").scores(ANN, "gym", None)
    assert found["ann-0"] > 0
    assert "ann-1" not in found


def test_a_rare_term_weighs_more_than_a_common_one() -> None:
    index = index_of("gym gym session", "gym session about kafka", "gym again", "gym once more")
    found = index.scores(ANN, "gym kafka", None)
    assert max(found, key=found.__getitem__) == "ann-1"
    assert index.scores(ANN, "kafka", None)["ann-1"] > index.scores(ANN, "gym", None)["ann-1"]


def test_the_score_is_lucenes_bm25_with_k1_1_2_and_b_0_75() -> None:
    index = index_of("kafka kafka streams", "gym")  # lengths 3 and 1, average 2
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    tf, norm = 2.0, 1.2 * (1 - 0.75 + 0.75 * 3 / 2)
    assert index.scores(ANN, "kafka", None)["ann-0"] == pytest.approx(idf * tf * 2.2 / (tf + norm))


def test_matching_ignores_case_punctuation_and_plural() -> None:
    assert set(index_of("Gyms are expensive in Berlin.", "nothing here").scores(ANN, "the GYM?", None)) == {"ann-0"}


def test_empty_index_and_empty_query_give_no_scores(index: KeywordIndex) -> None:
    assert index.scores(ANN, "gym", None) == {}
    assert index_of("gym").scores(ANN, "", None) == {}
    assert index_of("gym").scores(ANN, "   ?!  ", None) == {}


def test_hostile_unicode_neither_raises_nor_matches_everything() -> None:
    found = index_of("\u202e\u200b\u0000 tëst \U0001f600", "plain words").scores(
        ANN, "\u202e\ufeff te\u0301st \U0001f600 \ud7ff", None)
    assert "ann-1" not in found
    assert all(math.isfinite(v) for v in found.values())


def test_a_scopes_scores_equal_those_of_an_index_of_only_that_scope(index: KeywordIndex) -> None:
    texts = ["my gym in Berlin", "gym shoes", "the cat sleeps", "Berlin cat cafe", "gym cat gym", "rain"]
    scopes = ["dm", "guild:1", "dm", "dm", "guild:1", "dm"]
    index.add(item(n, t, scope=s) for n, (t, s) in enumerate(zip(texts, scopes, strict=True)))
    alone = index_of(*(t for t, s in zip(texts, scopes, strict=True) if s == "dm"))
    renamed = {f"ann-{n}": f"ann-{m}" for m, n in enumerate(n for n, s in enumerate(scopes) if s == "dm")}

    scoped = index.scores(ANN, "gym cat Berlin", "dm")

    assert {renamed[i]: v for i, v in scoped.items()} == pytest.approx(alone.scores(ANN, "gym cat Berlin", None))


def test_another_persons_items_neither_match_nor_change_the_scores(index: KeywordIndex) -> None:
    index.add([item(0, "kafka streams", ANN), item(1, "gym", ANN)])
    before = index.scores(ANN, "kafka gym", None)
    index.add(item(n, "kafka kafka kafka", BOB) for n in range(50))

    assert index.scores(ANN, "kafka gym", None) == before
    assert set(index.scores(BOB, "kafka", None)) == {f"bob-{n}" for n in range(50)}


def test_items_added_after_a_search_score_as_if_indexed_all_at_once(index: KeywordIndex) -> None:
    index.add([item(0, "kafka streams"), item(1, "gym")])
    index.scores(ANN, "kafka", None)
    index.add([item(2, "kafka on a laptop"), item(3, "more gym")])

    assert index.scores(ANN, "kafka gym", None) == pytest.approx(
        index_of("kafka streams", "gym", "kafka on a laptop", "more gym").scores(ANN, "kafka gym", None))


def test_an_item_indexed_twice_counts_once(index: KeywordIndex) -> None:
    index.add([item(0, "kafka streams"), item(1, "gym")])
    index.add([item(0, "kafka streams"), item(2, "kafka again")])

    assert index.count(ANN) == 3
    assert index.scores(ANN, "kafka", None) == pytest.approx(
        index_of("kafka streams", "gym", "kafka again").scores(ANN, "kafka", None))


def test_removed_items_never_score_and_leave_the_rest_as_if_never_indexed(index: KeywordIndex) -> None:
    index.add([item(0, "deleted kafka note"), item(1, "kept kafka note"), item(2, "gym")])

    assert index.remove(ANN, ["ann-0", "ann-9"]) == 1

    assert index.scores(ANN, "kafka note", None) == pytest.approx(
        {"ann-1": index_of("kept kafka note", "gym").scores(ANN, "kafka note", None)["ann-0"]})


def test_removing_another_persons_ids_removes_nothing(index: KeywordIndex) -> None:
    index.add([item(0, "kafka", ANN)])
    assert index.remove(BOB, ["ann-0"]) == 0
    assert index.count(ANN) == 1


def test_removing_a_scope_keeps_the_persons_other_scopes(index: KeywordIndex) -> None:
    index.add([item(0, "kafka", scope="dm"), item(1, "kafka", scope="guild:1"), item(2, "kafka", BOB, "dm")])

    assert index.remove_scope(ANN, "dm") == 1

    assert set(index.scores(ANN, "kafka", None)) == {"ann-1"}
    assert index.count(BOB, "dm") == 1


def test_the_window_gives_the_scopes_items_made_in_it(index: KeywordIndex) -> None:
    index.add([item(0, "a", created_at=10.0), item(1, "b", created_at=20.0), item(2, "c", created_at=30.0),
               item(3, "d", scope="guild:1", created_at=20.0)])

    assert index.between(ANN, "dm", 15.0, 30.0) == {"ann-1": 20.0, "ann-2": 30.0}
    assert index.between(ANN, None, 15.0, 25.0) == {"ann-1": 20.0, "ann-3": 20.0}


def test_facts_give_time_kind_and_exchange_of_known_ids_only(index: KeywordIndex) -> None:
    index.add([item(0, "hello", created_at=5.0, kind="reply", exchange="t1")])

    assert index.facts(["ann-0", "unknown"]) == {"ann-0": (5.0, "reply", "t1")}


def test_the_best_scores_come_with_the_lowest_so_a_normalisation_stays_as_over_all() -> None:
    index = index_of(*(("kafka " * n).strip() + " filler" * 30 for n in range(1, 11)))
    every = index.scores(ANN, "kafka", None)

    best = index.scores(ANN, "kafka", None, best=3)

    ranked = sorted(every, key=every.__getitem__, reverse=True)
    assert best == {i: every[i] for i in [*ranked[:3], ranked[-1]]}


def test_a_huge_document_is_indexed_and_scored_finitely() -> None:
    index = index_of(" ".join(f"word{n}" for n in range(20_000)) + " kafka", "kafka")
    found = index.scores(ANN, "kafka word7", None)
    assert set(found) == {"ann-0", "ann-1"}
    assert all(math.isfinite(v) and v > 0 for v in found.values())


def test_two_connections_to_one_file_see_each_others_writes(tmp_path: Path) -> None:
    first, second = KeywordIndex(tmp_path / "k" / "index.sqlite3"), KeywordIndex(tmp_path / "k" / "index.sqlite3")
    try:
        first.add([item(0, "kafka")])
        assert set(second.scores(ANN, "kafka", None)) == {"ann-0"}
        second.remove(ANN, ["ann-0"])
        assert first.count(ANN) == 0
    finally:
        first.close()
        second.close()


def test_a_file_of_another_layout_is_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    with sqlite3.connect(path) as old:
        old.execute("CREATE TABLE items (id TEXT PRIMARY KEY, whatever TEXT)")
        old.execute("INSERT INTO items VALUES ('x', 'y')")
    index = KeywordIndex(path)
    try:
        assert index.count(ANN) == 0
        index.add([item(0, "kafka")])
        assert set(index.scores(ANN, "kafka", None)) == {"ann-0"}
    finally:
        index.close()


def test_concurrent_adds_from_threads_lose_nothing(index: KeywordIndex) -> None:
    threads = [threading.Thread(target=index.add, args=([item(n, f"kafka note {n}")],)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert index.count(ANN) == 20
    assert len(index.scores(ANN, "kafka", None)) == 20
