"""Per-user semantic memory on an embedded Chroma folder: the contract, scopes, isolation."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.semantic import ranking
from memory.semantic.embeddings import LocalEmbedder
from memory.errors import MemoryStoreError
from memory.semantic import MemoryHit, UserMemory, open_user_memory, scope_for
from tests.memory.fixtures_semantic import DAY, Clock, RecordingEmbedder

pytestmark = pytest.mark.slow  # loads the embedding model: handed out first (tests/conftest.py)

ALICE = "111111111111111111"
BOB = "222222222222222222"
GUILD = scope_for("900000000000000000")
OTHER_GUILD = scope_for("900000000000000001")


def test_scope_for_names_guilds_and_dms() -> None:
    assert scope_for("123") == "guild:123"
    assert scope_for(None) == "dm"


def test_scope_for_refuses_empty_guild_id() -> None:
    with pytest.raises(ValueError, match="guild_id"):
        scope_for("")


async def test_added_item_is_found_with_text_score_and_metadata(memory: UserMemory, clock: Clock) -> None:
    item_id = await memory.add(ALICE, "My sister Lena lives in Lisbon", {"channel_id": "42", "kind": "fact"}, GUILD)

    hits = await memory.search(ALICE, "where does my sister live?", scope=GUILD)

    assert isinstance(hits[0], MemoryHit)
    assert hits[0].id == item_id
    assert hits[0].text == "My sister Lena lives in Lisbon"
    assert hits[0].score > 0
    assert hits[0].metadata == {"channel_id": "42", "kind": "fact", "user_id": ALICE, "scope": GUILD,
                                "created_at": clock.now}


async def test_search_puts_the_most_relevant_item_first(memory: UserMemory) -> None:
    for text in ("I play the cello in an amateur orchestra",
                 "My dog Pixel is afraid of thunderstorms",
                 "I am allergic to peanuts and cashews",
                 "We are planning a trip to Kyoto in April"):
        await memory.add(ALICE, text, scope=GUILD)

    assert (await memory.search(ALICE, "which nuts can't I eat?", scope=GUILD))[0].text.startswith("I am allergic")
    assert (await memory.search(ALICE, "what instrument do I play", scope=GUILD))[0].text.startswith("I play the cello")
    assert (await memory.search(ALICE, "my pet", scope=GUILD))[0].text.startswith("My dog Pixel")


async def test_search_returns_at_most_k_hits_best_first(memory: UserMemory) -> None:
    await memory.add_many([(ALICE, f"note number {n} about gardening", None, GUILD) for n in range(12)])

    hits = await memory.search(ALICE, "gardening", k=3, scope=GUILD)

    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_one_users_items_never_appear_in_anothers_search(memory: UserMemory) -> None:
    await memory.add(ALICE, "My bank PIN hint is the name of my first cat, Tofu", scope=GUILD)
    await memory.add(BOB, "My first cat was called Tofu too", scope=GUILD)
    await memory.add(BOB, "I like bouldering on weekends", scope=GUILD)

    for scope in (GUILD, None):
        alice_hits = await memory.search(ALICE, "first cat Tofu", k=10, scope=scope)
        assert [h.metadata["user_id"] for h in alice_hits] == [ALICE]
    assert {h.metadata["user_id"] for h in await memory.search(BOB, "bank PIN hint", k=10)} == {BOB}
    assert all(h.metadata["user_id"] == BOB for h in await memory.list(BOB))


async def test_a_user_with_no_items_gets_no_hits(memory: UserMemory) -> None:
    await memory.add(ALICE, "I collect vinyl records", scope=GUILD)

    assert await memory.search(BOB, "vinyl records", scope=GUILD) == []
    assert await memory.search(BOB, "vinyl records") == []


async def test_guild_items_stay_in_their_guild_and_dm_items_in_dms(memory: UserMemory) -> None:
    await memory.add(ALICE, "My salary is 52k and I feel underpaid", scope="dm")
    await memory.add(ALICE, "I am organising the guild's salary survey", scope=GUILD)

    assert [h.text for h in await memory.search(ALICE, "salary", k=10, scope=GUILD)] == [
        "I am organising the guild's salary survey"]
    assert [h.text for h in await memory.search(ALICE, "salary", k=10, scope="dm")] == [
        "My salary is 52k and I feel underpaid"]
    assert await memory.search(ALICE, "salary", k=10, scope=OTHER_GUILD) == []
    assert len(await memory.search(ALICE, "salary", k=10, scope=None)) == 2


async def test_unscoped_items_are_found_only_without_a_scope(memory: UserMemory) -> None:
    await memory.add(ALICE, "My favourite colour is teal")

    assert (await memory.list(ALICE))[0].metadata["scope"] == ""
    assert await memory.search(ALICE, "favourite colour", scope=GUILD) == []
    assert await memory.search(ALICE, "favourite colour", scope="dm") == []
    assert [h.text for h in await memory.search(ALICE, "favourite colour")] == ["My favourite colour is teal"]


async def test_forget_with_a_scope_erases_only_that_scope(memory: UserMemory) -> None:
    await memory.add(ALICE, "guild note one", scope=GUILD)
    await memory.add(ALICE, "guild note two", scope=GUILD)
    await memory.add(ALICE, "dm note", scope="dm")

    assert await memory.forget(ALICE, scope=GUILD) == 2
    assert [h.text for h in await memory.list(ALICE)] == ["dm note"]


async def test_forget_erases_all_of_one_user_and_nothing_of_others(memory: UserMemory) -> None:
    await memory.add(ALICE, "alice in the guild", scope=GUILD)
    await memory.add(ALICE, "alice in private", scope="dm")
    await memory.add(BOB, "bob in the guild", scope=GUILD)

    assert await memory.forget(ALICE) == 2
    assert await memory.list(ALICE) == []
    assert await memory.search(ALICE, "alice") == []
    assert [h.text for h in await memory.list(BOB)] == ["bob in the guild"]


async def test_delete_removes_one_item_of_its_owner_only(memory: UserMemory) -> None:
    keep = await memory.add(ALICE, "keep this one", scope=GUILD)
    drop = await memory.add(ALICE, "drop this one", scope=GUILD)

    assert await memory.delete(BOB, drop) is False
    assert await memory.delete(ALICE, drop) is True
    assert await memory.delete(ALICE, drop) is False
    assert [h.id for h in await memory.list(ALICE)] == [keep]


async def test_list_gives_items_oldest_first(memory: UserMemory, clock: Clock) -> None:
    await memory.add(ALICE, "first", scope=GUILD)
    clock.advance(days=1)
    await memory.add(ALICE, "second", scope="dm")
    clock.advance(days=1)
    await memory.add(ALICE, "third", scope=GUILD)

    assert [h.text for h in await memory.list(ALICE)] == ["first", "second", "third"]
    assert [h.text for h in await memory.list(ALICE, scope=GUILD)] == ["first", "third"]


async def test_get_gives_the_persons_items_by_id_in_the_order_asked_and_leaves_out_the_rest(
        memory: UserMemory) -> None:
    first = await memory.add(ALICE, "first", scope=GUILD)
    second = await memory.add(ALICE, "second", scope="dm")
    gone = await memory.add(ALICE, "forgotten", scope=GUILD)
    bobs = await memory.add(BOB, "bob's own", scope=GUILD)
    await memory.delete(ALICE, gone)

    found = await memory.get(ALICE, [second, bobs, gone, first, second, "no-such-id"])

    assert [h.text for h in found] == ["second", "first"]
    assert await memory.get(ALICE, []) == []


async def test_a_caller_may_date_an_item_itself(memory: UserMemory, clock: Clock) -> None:
    await memory.add_many([(ALICE, "older", {"created_at": clock.now - 3 * DAY}, GUILD),
                           (ALICE, "newer", None, GUILD)])

    assert [(h.text, h.metadata["created_at"]) for h in await memory.list(ALICE)] == [
        ("older", clock.now - 3 * DAY), ("newer", clock.now)]


async def test_export_is_json_safe_with_time_place_and_caller_metadata(memory: UserMemory, clock: Clock) -> None:
    item_id = await memory.add(ALICE, "I run a bakery", {"channel_id": "7", "trace_id": "t-1"}, GUILD)

    exported = await memory.export(ALICE)

    assert json.loads(json.dumps(exported)) == exported
    assert exported == [{
        "id": item_id,
        "text": "I run a bakery",
        "scope": GUILD,
        "created_at": datetime.fromtimestamp(clock.now, tz=UTC).isoformat(),
        "metadata": {"channel_id": "7", "trace_id": "t-1"},
    }]


async def test_export_can_be_limited_to_one_scope(memory: UserMemory) -> None:
    await memory.add(ALICE, "said in the guild", scope=GUILD)
    await memory.add(ALICE, "said in private", scope="dm")

    assert [item["text"] for item in await memory.export(ALICE, scope="dm")] == ["said in private"]
    assert len(await memory.export(ALICE)) == 2


async def test_add_many_returns_ids_in_order_and_everything_is_searchable(memory: UserMemory) -> None:
    items = [(ALICE if n % 2 else BOB, f"batch item {n} mentions the colour {c}", {"n": n}, GUILD)
             for n, c in enumerate(["red", "green", "blue", "amber", "violet"] * 60)]

    ids = await memory.add_many(items)

    assert len(ids) == len(set(ids)) == 300
    assert len(await memory.list(ALICE)) == 150
    listed = {h.id: h.metadata["n"] for h in await memory.list(BOB)}
    assert listed == {ids[n]: n for n in range(0, 300, 2)}


async def test_add_many_embeds_in_batches_off_the_event_loop(local_embedder: LocalEmbedder, tmp_path: Path) -> None:
    recorder = RecordingEmbedder(local_embedder)
    async with open_user_memory(str(tmp_path / "c"), embedder=recorder) as mem:
        await mem.add_many([(ALICE, f"short note {n}", None, GUILD) for n in range(300)])
        await mem.search(ALICE, "note", scope=GUILD)

    assert [len(texts) for texts, _ in recorder.calls] == [256, 44, 1]
    assert all(thread.startswith("user-memory") for _, thread in recorder.calls)
    assert threading.main_thread().name not in {thread for _, thread in recorder.calls}


async def test_storing_the_message_just_searched_for_reuses_its_vector(local_embedder: LocalEmbedder,
                                                                       tmp_path: Path) -> None:
    recorder = RecordingEmbedder(local_embedder)
    async with open_user_memory(str(tmp_path / "c"), embedder=recorder) as mem:
        await mem.add(ALICE, "my sister lives in Porto", scope=GUILD)
        await mem.search(ALICE, "where should I travel this summer?", scope=GUILD)
        await mem.add(ALICE, "where should I travel this summer?", scope=GUILD)
        hits = await mem.search(ALICE, "summer travel", scope=GUILD)

    assert recorder.texts == ["my sister lives in Porto", "where should I travel this summer", "summer travel"]
    assert hits[0].text == "where should I travel this summer?"


async def test_add_many_with_one_bad_item_stores_nothing(memory: UserMemory) -> None:
    with pytest.raises(ValueError, match="item 1"):
        await memory.add_many([(ALICE, "fine", None, GUILD), (ALICE, "   ", None, GUILD)])

    assert await memory.list(ALICE) == []


async def test_a_new_item_is_found_right_after_an_earlier_search(local_embedder: LocalEmbedder,
                                                                 tmp_path: Path) -> None:
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, search_mode="keyword") as mem:
        await mem.add(ALICE, "I drive a blue hatchback", scope=GUILD)
        assert [h.text for h in await mem.search(ALICE, "kayak", scope=GUILD)] == []

        await mem.add(ALICE, "I bought a kayak yesterday", scope=GUILD)

        assert [h.text for h in await mem.search(ALICE, "kayak", scope=GUILD)] == ["I bought a kayak yesterday"]


async def test_an_add_elsewhere_does_not_enter_a_cached_scope(local_embedder: LocalEmbedder, tmp_path: Path) -> None:
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, search_mode="keyword") as mem:
        await mem.add(ALICE, "guild talk about chess openings", scope=GUILD)
        assert len(await mem.search(ALICE, "chess", scope=GUILD)) == 1
        assert len(await mem.search(ALICE, "chess")) == 1

        await mem.add(ALICE, "private worry about my chess rating", scope="dm")

        assert [h.text for h in await mem.search(ALICE, "chess", scope=GUILD)] == ["guild talk about chess openings"]
        assert len(await mem.search(ALICE, "chess")) == 2


async def test_searches_stay_right_when_the_cache_has_room_for_one_user_only(local_embedder: LocalEmbedder,
                                                                           tmp_path: Path) -> None:
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, cache_bytes=1) as mem:
        await mem.add(ALICE, "alice rides a red bicycle", scope=GUILD)
        await mem.add(BOB, "bob rides a red scooter", scope=GUILD)

        for _ in range(3):
            assert [h.text for h in await mem.search(ALICE, "red", scope=GUILD)] == ["alice rides a red bicycle"]
            assert [h.text for h in await mem.search(BOB, "red", scope=GUILD)] == ["bob rides a red scooter"]


async def test_concurrent_adds_lose_nothing(memory: UserMemory) -> None:
    texts = [f"concurrent memory number {n}" for n in range(30)]

    await asyncio.gather(*(memory.add(ALICE, t, scope=GUILD) for t in texts))

    assert sorted(h.text for h in await memory.list(ALICE)) == sorted(texts)


async def test_items_survive_closing_and_reopening_the_folder(local_embedder: LocalEmbedder, tmp_path: Path) -> None:
    path = str(tmp_path / "chroma")
    first = open_user_memory(path, embedder=local_embedder)
    await first.add(ALICE, "I was born in Tallinn", scope="dm")
    await first.close()

    second = await open_user_memory(path, embedder=local_embedder)
    try:
        assert [h.text for h in await second.search(ALICE, "birthplace", scope="dm")] == ["I was born in Tallinn"]
    finally:
        await second.close()


async def test_a_question_about_last_week_prefers_what_was_said_last_week(memory: UserMemory, clock: Clock) -> None:
    await memory.add(ALICE, "I started reading a novel about lighthouse keepers", scope=GUILD)
    clock.advance(days=20)
    await memory.add(ALICE, "The novel I am reading now is a thriller set in Oslo", scope=GUILD)
    clock.advance(days=9)
    await memory.add(ALICE, "I had pasta for lunch", scope=GUILD)
    clock.advance(days=1)

    hits = await memory.search(ALICE, "what did I say last week about the novel I'm reading?", scope=GUILD)

    assert hits[0].text == "The novel I am reading now is a thriller set in Oslo"


async def test_dense_mode_finds_a_paraphrase_that_shares_no_word(local_embedder: LocalEmbedder, tmp_path: Path) -> None:
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, search_mode="dense") as mem:
        await mem.add(ALICE, "My kitten keeps scratching the sofa", scope=GUILD)
        await mem.add(ALICE, "Quarterly tax forms are due in June", scope=GUILD)

        assert (await mem.search(ALICE, "feline damaging furniture", scope=GUILD))[0].text.startswith("My kitten")


async def test_keyword_mode_returns_only_items_sharing_a_word(local_embedder: LocalEmbedder, tmp_path: Path) -> None:
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, search_mode="keyword") as mem:
        await mem.add(ALICE, "My kitten keeps scratching the sofa", scope=GUILD)
        await mem.add(ALICE, "Quarterly tax forms are due in June", scope=GUILD)

        assert [h.text for h in await mem.search(ALICE, "tax deadline", scope=GUILD)] == [
            "Quarterly tax forms are due in June"]


def test_an_unknown_search_mode_is_refused(local_embedder: LocalEmbedder, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="search_mode"):
        open_user_memory(str(tmp_path / "c"), embedder=local_embedder, search_mode="fuzzy")


async def test_open_user_memory_is_also_awaitable_and_a_context_manager(local_embedder: LocalEmbedder,
                                                                       tmp_path: Path) -> None:
    mem = await open_user_memory(str(tmp_path / "c"), embedder=local_embedder)
    async with mem:
        await mem.add(ALICE, "awaitable", scope="dm")
        assert len(await mem.list(ALICE)) == 1


async def test_a_closed_memory_refuses_work_with_a_clear_error(memory: UserMemory) -> None:
    await memory.close()
    await memory.close()

    with pytest.raises(MemoryStoreError, match="closed"):
        await memory.add(ALICE, "too late", scope="dm")


# -- context, ranking configuration, the size-bounded cache, incremental indexes ------------


async def test_an_items_context_is_searched_but_not_shown(memory: UserMemory) -> None:
    await memory.add(ALICE, "Yes! It was amazing", {"context": "Did you see the northern lights in Tromsø?"}, "dm")
    await memory.add(ALICE, "I repaired the kitchen sink", None, "dm")

    hits = await memory.search(ALICE, "Tromsø northern lights", scope="dm")

    assert hits[0].text == "Yes! It was amazing"
    assert hits[0].metadata["context"] == "Did you see the northern lights in Tromsø?"


async def test_an_items_context_is_keyword_indexed_before_its_text(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, search_mode="keyword") as mem:
        await mem.add(ALICE, "Yes! It was amazing", {"context": "How was the salsa class?"}, "dm")

        assert [h.text for h in await mem.search(ALICE, "salsa", scope="dm")] == ["Yes! It was amazing"]
        assert [h.text for h in await mem.search(ALICE, "amazing", scope="dm")] == ["Yes! It was amazing"]


async def test_an_items_context_is_embedded_as_context_newline_text(tmp_path: Path,
                                                                    local_embedder: LocalEmbedder) -> None:
    recorder = RecordingEmbedder(local_embedder)
    async with open_user_memory(str(tmp_path / "c"), embedder=recorder) as mem:
        await mem.add(ALICE, "Yes!  It was\u200b amazing", {"context": "How was   the salsa class?"}, "dm")

    assert recorder.texts == ["How was the salsa class?\nYes! It was amazing"]


async def _store_exchange(memory: UserMemory, trace: str, said: str, replied: str) -> None:
    """One answered turn as the bot stores it: the message, then the reply with it as context."""
    await memory.add(ALICE, said, {"trace_id": trace, "kind": "exchange"}, "dm")
    await memory.add(ALICE, replied, {"trace_id": trace, "kind": "reply", "context": said}, "dm")


async def test_a_search_gives_one_item_of_each_exchange(memory: UserMemory) -> None:
    await _store_exchange(memory, "t1", "my tomato plants have yellow leaves", "Feed them a balanced fertiliser.")
    await _store_exchange(memory, "t2", "the tomato seedlings look leggy", "Give them more light.")
    await memory.add(ALICE, "I repaired the kitchen sink", None, "dm")

    hits = await memory.search(ALICE, "tomato plants", k=3, scope="dm")

    assert len(hits) == 3
    traces = [h.metadata.get("trace_id") for h in hits]
    assert sorted(t for t in traces if t) == ["t1", "t2"]


async def test_a_question_about_what_the_bot_said_finds_its_reply(memory: UserMemory) -> None:
    await _store_exchange(memory, "t1", "any idea for dinner? I have leeks and eggs",
                          "A leek and gruyère quiche: soften the leeks in butter, bake 35 minutes.")
    await memory.add(ALICE, "I had leeks and eggs for dinner again", {"trace_id": "t2", "kind": "exchange"}, "dm")

    asked = await memory.search(ALICE, "What recipe did you suggest for dinner?", k=1, scope="dm")
    told = await memory.search(ALICE, "what did I have for dinner?", k=1, scope="dm")

    assert asked[0].metadata["kind"] == "reply" and "quiche" in asked[0].text
    assert told[0].metadata["kind"] == "exchange"

async def test_a_context_that_is_not_text_is_refused(memory: UserMemory) -> None:
    with pytest.raises(ValueError, match="context"):
        await memory.add(ALICE, "Yes!", {"context": 42}, "dm")


async def test_searches_rank_with_the_ranking_config_given_at_open(tmp_path: Path,
                                                                   local_embedder: LocalEmbedder) -> None:
    keyword_only = ranking.RankingConfig(fusion="rrf", dense_weight=0.0, keyword_weight=1.0)
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, ranking_config=keyword_only) as mem:
        await mem.add(ALICE, "zxqv is the code word", None, "dm")
        await mem.add(ALICE, "the password for the wifi", None, "dm")

        hits = await mem.search(ALICE, "zxqv", k=2, scope="dm")

    assert mem.ranking_config is keyword_only
    assert ranking.DEFAULT_CONFIG == ranking.RankingConfig()
    assert [h.text for h in hits] == ["zxqv is the code word", "the password for the wifi"]
    assert hits[0].score == pytest.approx(1 / (keyword_only.rrf_k + 1))


async def test_the_cache_is_bounded_by_bytes_not_by_a_count_of_users(tmp_path: Path,
                                                                      local_embedder: LocalEmbedder) -> None:
    budget = 250_000  # less than Bob's 150 items and vectors, more than several light users
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, cache_bytes=budget) as mem:
        await mem.add_many([(BOB, f"bob note {n} about sailing", None, "dm") for n in range(150)])
        assert len(await mem.search(BOB, "sailing", k=200, scope="dm")) == 150
        cache = mem._copies._cache
        assert BOB in cache and cache.nbytes > budget  # the user in use stays, however big

        for user in (ALICE, "3", "4", "5"):
            await mem.add(user, "a light user's one note", None, "dm")
            await mem.search(user, "note", scope="dm")

        assert cache.nbytes <= budget
        assert BOB not in cache
        assert all(user in cache for user in (ALICE, "3", "4", "5"))
        assert len(await mem.search(BOB, "sailing", k=200, scope="dm")) == 150


def test_the_cache_refuses_a_budget_that_is_not_positive(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    with pytest.raises(ValueError, match="cache_bytes"):
        open_user_memory(str(tmp_path / "c"), embedder=local_embedder, cache_bytes=0)


async def test_a_cached_users_searches_after_adds_and_deletes_equal_a_fresh_load(
        tmp_path: Path, local_embedder: LocalEmbedder, clock: Clock) -> None:
    path = str(tmp_path / "c")
    texts = [f"{w} {n}" for n, w in enumerate(["sailing trip", "gym shoes", "sailing boat", "cat food"] * 5)]
    async with open_user_memory(path, embedder=local_embedder, clock=clock) as mem:
        await mem.search(ALICE, "anything")  # cache the (empty) user, then grow it one add at a time
        ids = [await mem.add(ALICE, t, None, GUILD if n % 2 else "dm") for n, t in enumerate(texts)]
        await mem.delete(ALICE, ids[2])
        await mem.forget(ALICE, "dm")
        grown = await mem.search(ALICE, "sailing boat", k=10)
    async with open_user_memory(path, embedder=local_embedder, clock=clock) as fresh:
        loaded = await fresh.search(ALICE, "sailing boat", k=10)

    assert [h.id for h in grown] == [h.id for h in loaded]
    # score fusion reads the similarities themselves: the vectors read back from Chroma agree
    # with the ones computed in this process to float32 precision, not to the last bit
    assert [h.score for h in grown] == pytest.approx([h.score for h in loaded], rel=1e-5)
    assert len(grown) == 10
