"""Specification of memory.semantic.search.rank: one search over a user's cached columns ranks the
scope's dense and BM25 candidates exactly as `memory.semantic.ranking.fuse` ranks them as dicts; and of
its two halves, `prepare` (no query vector) and `finish`, which give what `rank` gives over the
items as they are when it finishes, whatever was added or removed in between."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest

from memory.semantic import ranking
from memory.semantic.chroma_backend import StoredItem
from memory.semantic.search import finish, prepare, rank, similarities
from memory.semantic.user_items import UserItems

NOW = datetime(2026, 10, 14, 12, 0, tzinfo=UTC).timestamp()
DAY = 86_400.0
WORDS = "gym pasta berlin piano dog train coffee rain novel garden exam bike".split()


def user_items(count: int, seed: int = 3) -> UserItems:
    """`count` items with ids in no particular order, two scopes, one a day apart going back
    from NOW, texts of a few shared words (so BM25 scores tie often); stored as exchanges of
    two (a message or a fact, then the bot's reply: the same trace id), one in seven with no trace."""
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed).standard_normal((count, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = UserItems()
    items.append([StoredItem(f"{rng.getrandbits(64):016x}", " ".join(rng.choices(WORDS, k=rng.randint(1, 6))),
                             {"created_at": NOW - (count - n) * DAY, "scope": "dm" if n % 3 else "guild",
                              "kind": "reply" if n % 2 else "fact" if n % 5 == 0 else "exchange",
                              **({} if n % 7 == 0 else {"trace_id": f"trace-{n // 2}"})})
                  for n in range(count)], vectors)
    return items


def reference(items: UserItems, plan: ranking.QueryPlan, vector: np.ndarray, scope: str | None,
              k: int, mode: str, config: ranking.RankingConfig) -> list[tuple[int, float]]:
    """What `rank` must give: `fuse` over dicts of the scope's candidates."""
    rows = np.flatnonzero(items.mask(scope))
    similarity = items.matrix[rows] @ vector
    best = rows[np.argsort(-similarity, kind="stable")[: max(config.dense_candidates, 10 * k)]]
    dense = {items.ids[r]: float(items.matrix[r] @ vector) for r in best}
    found, scores = items.keywords.scores(plan.search_text, items.mask(scope))
    keyword = {items.ids[r]: s for r, s in zip(found.tolist(), scores.tolist(), strict=True)}
    created_at = {items.ids[r]: float(items.created[r]) for r in rows.tolist()}
    kinds = {items.ids[r]: items.items[r].metadata["kind"] for r in rows.tolist()}
    exchanges = {items.ids[r]: e for r in rows.tolist() if (e := ranking.exchange_of(items.items[r].metadata))}
    ranked = ranking.fuse(plan, dense=dense, keyword=keyword, created_at=created_at, now=NOW, k=k,
                          mode=mode, config=config, kinds=kinds, exchanges=exchanges)
    return [(items.row(i), score) for i, score in ranked]


@pytest.mark.parametrize("mode", ["hybrid", "dense", "keyword"])
@pytest.mark.parametrize("query", ["gym pasta", "what did I say about the dog last week?",
                                   "where do I bike now?", "yesterday", "zzz nothing matches",
                                   "which novel did you recommend?"])
@pytest.mark.parametrize("scope", [None, "dm", "guild"])
@pytest.mark.parametrize("config", [
    ranking.DEFAULT_CONFIG,
    ranking.RankingConfig(fusion="rrf", name_keyword_weight=None, current_keyword_weight=None,
                          asked_keyword_weight=None, asked_reply_weight=1.0, one_per_exchange=False),
    ranking.RankingConfig(reply_weight=0.5, asked_reply_weight=3.0, one_per_exchange=True),
    ranking.RankingConfig(dense_candidates=200, keyword_scale="max"),
], ids=["defaults", "previous", "replies-weighted", "200-dense-candidates"])
def test_rank_orders_candidates_as_fuse_does(mode: str, query: str, scope: str | None,
                                             config: ranking.RankingConfig) -> None:
    items = user_items(400)
    plan = ranking.plan_query(query, NOW, config)
    vector = items.matrix[7] * 0.5 + items.matrix[11] * 0.5
    ranked = rank(items, plan, plan.search_text, vector, scope=scope, k=5, mode=mode, now=NOW, config=config)
    expected = reference(items, plan, vector, scope, 5, mode, config)
    assert [row for row, _ in ranked] == [row for row, _ in expected]
    assert [score for _, score in ranked] == pytest.approx([score for _, score in expected], rel=1e-6)


def test_rank_returns_only_live_rows_of_the_scope() -> None:
    items = user_items(90)
    items.remove([items.ids[n] for n in range(0, 90, 2)])
    plan = ranking.plan_query("gym pasta berlin", NOW)
    ranked = rank(items, plan, plan.search_text, items.matrix[4], scope="dm", k=30, mode="hybrid", now=NOW,
                  config=ranking.DEFAULT_CONFIG)
    assert ranked
    assert all(row % 2 == 1 and row % 3 != 0 for row, _ in ranked)


def test_an_item_inside_the_time_window_is_found_by_neither_search_and_still_comes_first() -> None:
    items = user_items(60)
    plan = ranking.plan_query("zzz yesterday", NOW)
    ranked = rank(items, plan, plan.search_text, None, scope=None, k=3, mode="keyword", now=NOW,
                  config=ranking.DEFAULT_CONFIG)
    assert [row for row, _ in ranked] == [59]


def test_an_empty_scope_or_user_gives_no_rows() -> None:
    plan = ranking.plan_query("gym", NOW)
    assert rank(user_items(20), plan, "gym", None, scope="nowhere", k=5, mode="hybrid", now=NOW,
                config=ranking.DEFAULT_CONFIG) == []
    assert rank(UserItems(), plan, "gym", None, scope=None, k=5, mode="hybrid", now=NOW,
                config=ranking.DEFAULT_CONFIG) == []


def _fresh_rows(items: UserItems, count: int, text: str) -> None:
    """Append `count` items of `text` whose vectors point where `items.matrix[7]` does."""
    vectors = np.repeat(items.matrix[7:8], count, axis=0)
    items.append([StoredItem(f"new-{n}", text, {"created_at": NOW - 60.0 * n, "scope": "dm", "kind": "exchange"})
                  for n in range(count)], vectors)


@pytest.mark.parametrize("mode", ["hybrid", "dense", "keyword"])
def test_a_search_prepared_before_an_add_sees_the_added_rows_when_it_finishes(mode: str) -> None:
    items = user_items(300)
    plan = ranking.plan_query("gym pasta", NOW)
    prepared = prepare(items, plan, plan.search_text, scope="dm", mode=mode)
    _fresh_rows(items, 3, "gym pasta gym pasta")
    finished = finish(items, prepared, plan, plan.search_text, items.matrix[7], k=5, mode=mode, now=NOW,
                      config=ranking.DEFAULT_CONFIG)
    assert finished == rank(items, plan, plan.search_text, items.matrix[7], scope="dm", k=5, mode=mode, now=NOW,
                            config=ranking.DEFAULT_CONFIG)
    assert {300, 301, 302} & {row for row, _ in finished}


def test_a_search_prepared_before_a_delete_never_returns_the_deleted_rows() -> None:
    items = user_items(300)
    plan = ranking.plan_query("gym pasta", NOW)
    vector = items.matrix[7]
    before = rank(items, plan, plan.search_text, vector, scope=None, k=10, mode="hybrid", now=NOW,
                  config=ranking.DEFAULT_CONFIG)
    prepared = prepare(items, plan, plan.search_text, scope=None, mode="hybrid")
    gone = [row for row, _ in before[:4]]
    items.remove([items.ids[row] for row in gone])
    finished = finish(items, prepared, plan, plan.search_text, vector, k=10, mode="hybrid", now=NOW,
                      config=ranking.DEFAULT_CONFIG)
    assert not set(gone) & {row for row, _ in finished}
    assert finished == rank(items, plan, plan.search_text, vector, scope=None, k=10, mode="hybrid", now=NOW,
                            config=ranking.DEFAULT_CONFIG)


def test_a_search_whose_scope_was_forgotten_after_prepare_finds_nothing() -> None:
    items = user_items(50)
    plan = ranking.plan_query("gym", NOW)
    prepared = prepare(items, plan, plan.search_text, scope="guild", mode="hybrid")
    items.remove_scope("guild")
    assert finish(items, prepared, plan, plan.search_text, items.matrix[0], k=5, mode="hybrid", now=NOW,
                  config=ranking.DEFAULT_CONFIG) == []


def test_dense_similarities_over_many_or_few_rows_is_the_dot_product() -> None:
    items = user_items(400)
    vector = items.matrix[5]
    for rows in (np.arange(400), np.arange(0, 400, 9)):  # all rows, and fewer than a quarter
        assert np.allclose(similarities(items.matrix, rows, vector), items.matrix[rows] @ vector, atol=1e-6)


def _spoken(n: int) -> StoredItem:
    speaker = {0: "Caroline", 1: "Melanie"}.get(n % 3)  # every third row names no one
    meta = {"created_at": float(n), "scope": "dm", **({"speaker": speaker} if speaker else {}),
            **({"dates": "7 May 2023"} if n % 4 == 0 else {})}
    return StoredItem(f"item-{n:03d}", f"turn {n}", meta)


def _who(items: UserItems, rows: np.ndarray) -> tuple[list[str | None], list[bool]]:
    codes, dated, speakers = items.who_and_dated(rows)
    names = {code: name for name, code in speakers.items()}
    return [names.get(int(c)) for c in codes], dated.tolist()


def test_who_said_a_row_and_whether_it_names_a_date_are_read_as_columns() -> None:
    items = UserItems()
    items.append([_spoken(n) for n in range(6)], np.eye(6, 4, dtype=np.float32))
    assert _who(items, np.array([4, 0, 5])) == (["Melanie", "Caroline", None], [True, True, False])
    assert _who(items, np.array([], np.int64)) == ([], [])


def test_who_and_dated_hold_for_rows_appended_later_and_for_restored_items() -> None:
    items = UserItems()
    items.append([_spoken(n) for n in range(3)], np.eye(3, 4, dtype=np.float32))
    assert _who(items, np.arange(3))[0] == ["Caroline", "Melanie", None]  # read, then the columns grow
    items.append([_spoken(n) for n in range(3, 40)], np.ones((37, 4), np.float32) / 2)
    expected = ([_spoken(n).metadata.get("speaker") for n in range(40)],
                [bool(_spoken(n).metadata.get("dates")) for n in range(40)])
    assert _who(items, np.arange(40)) == expected
    restored = UserItems.from_columns(items.columns())
    assert _who(restored, np.arange(40)) == expected
