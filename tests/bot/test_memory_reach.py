"""bot.turn.memory_reach over a real memory: a reach of several scopes is searched, listed and
forgotten as one; "everything public" leaves private items out however many crowd the top."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.turn.memory_reach import PUBLIC_FETCH_MAX, created_of, export_reach, forget_reach, list_reach, search_reach
from bot.turn.privacy import MemoryPolicy, Reach
from memory.semantic.embeddings import OpenAIEmbedder
from memory.semantic import UserMemory, open_user_memory
from tests.bot.conftest import ALICE, GUILD, OTHER_GUILD
from tests.fakes.openai_server import FakeOpenAI

POLICY = MemoryPolicy()
PUBLIC = POLICY.store_scope(GUILD, private=False)
PRIVATE = POLICY.store_scope(GUILD, private=True)
ELSEWHERE = POLICY.store_scope(OTHER_GUILD, private=False)


@pytest.fixture
async def memory(fake: FakeOpenAI, tmp_path: Path) -> AsyncIterator[UserMemory]:
    embedder = OpenAIEmbedder(base_url=fake.base_url, api_key="k", model="fake-embed")
    mem = open_user_memory(tmp_path / "chroma", embedder=embedder)
    await mem.add_many([(ALICE, "my tea is oolong, said in public", {"created_at": 1.0}, PUBLIC),
                        (ALICE, "my tea secret is jasmine, said privately", {"created_at": 2.0}, PRIVATE),
                        (ALICE, "my tea in the other server is sencha", {"created_at": 3.0}, ELSEWHERE),
                        (ALICE, "my tea in a DM is rooibos", {"created_at": 4.0}, "dm")])
    yield mem
    await mem.close()
    embedder.close()


async def test_a_reach_of_two_scopes_searches_both_and_merges_best_first(memory: UserMemory) -> None:
    hits = await search_reach(memory, ALICE, "tea", 5, POLICY.recall(GUILD, True, None))
    assert {h.metadata["scope"] for h in hits} == {PUBLIC, PRIVATE}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(await search_reach(memory, ALICE, "tea", 1, POLICY.recall(GUILD, True, None))) == 1


async def test_everything_public_leaves_out_the_private_and_dm_items(memory: UserMemory) -> None:
    hits = await search_reach(memory, ALICE, "tea", 5, Reach(None, public_only=True))
    assert {h.metadata["scope"] for h in hits} == {PUBLIC, ELSEWHERE}
    listed = await list_reach(memory, ALICE, Reach(None, public_only=True))
    assert [h.text for h in listed] == ["my tea is oolong, said in public", "my tea in the other server is sencha"]


async def test_private_items_crowding_the_top_do_not_hide_the_public_one(memory: UserMemory) -> None:
    await memory.add_many([(ALICE, f"tea tea tea private note {i}", None, "dm") for i in range(60)])
    crowded = await memory.search(ALICE, "tea tea tea", k=12)  # the first ask, 4 x k
    assert all(h.metadata["scope"] == "dm" for h in crowded)
    hits = await search_reach(memory, ALICE, "tea tea tea", 3, Reach(None, public_only=True))
    assert hits and all(h.metadata["scope"] in (PUBLIC, ELSEWHERE) for h in hits)
    assert PUBLIC_FETCH_MAX >= 64  # asked again for more, within the bound


async def test_list_export_and_forget_cover_the_reach_only(memory: UserMemory) -> None:
    here = POLICY.manage(GUILD, None)
    assert [h.text for h in await list_reach(memory, ALICE, here)] == [
        "my tea is oolong, said in public", "my tea secret is jasmine, said privately"]
    assert {e["scope"] for e in await export_reach(memory, ALICE, here)} == {PUBLIC, PRIVATE}
    assert await forget_reach(memory, ALICE, here) == 2
    assert {h.metadata["scope"] for h in await memory.list(ALICE)} == {ELSEWHERE, "dm"}


async def test_a_forget_of_only_the_public_part_of_everything_is_refused(memory: UserMemory) -> None:
    with pytest.raises(ValueError):
        await forget_reach(memory, ALICE, Reach(None, public_only=True))
    assert len(await memory.list(ALICE)) == 4


async def test_an_empty_query_finds_nothing_in_any_reach(memory: UserMemory) -> None:
    assert await search_reach(memory, ALICE, "   ", 5, POLICY.recall(GUILD, True, None)) == []
    assert await search_reach(memory, ALICE, "   ", 5, Reach(None, public_only=True)) == []


def test_an_items_time_is_read_from_a_number_only_and_none_otherwise() -> None:
    assert created_of({"created_at": 1_780_000_000}) == 1_780_000_000.0
    assert created_of({"created_at": 1.5}) == 1.5
    assert [created_of(meta) for meta in ({}, {"created_at": "2026-12-03"}, {"created_at": True},
                                          {"created_at": None})] == [None, None, None, None]
