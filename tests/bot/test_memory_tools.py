"""bot.memory_tools: recall_memory and remember act only for the asker, in the asker's place."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.tools.registry import ToolContext
from bot.memory_tools import MAX_FACT_CHARS, MAX_FACTS_PER_TURN, MemoryTools, format_memory_line
from memory.embeddings import OpenAIEmbedder
from memory.semantic import UserMemory, open_user_memory, scope_for
from tests.bot.conftest import ALICE, BOB, GUILD, OTHER_GUILD
from tests.fakes.openai_server import FakeOpenAI

ALICE_HERE = ToolContext(user_id=ALICE, channel_id="1", guild_id=GUILD, display_name="Alice")


@pytest.fixture
async def memory(fake: FakeOpenAI, tmp_path: Path) -> AsyncIterator[UserMemory]:
    embedder = OpenAIEmbedder(base_url=fake.base_url, api_key="k", model="fake-embed")
    mem = open_user_memory(tmp_path / "chroma", embedder=embedder)
    await mem.add(ALICE, "Alice's cat is called Miso", {"kind": "fact"}, scope_for(GUILD))
    await mem.add(ALICE, "Alice's cat secret in the other guild", {"kind": "fact"}, scope_for(OTHER_GUILD))
    await mem.add(BOB, "Bob's cat is called Rex", {"kind": "fact"}, scope_for(GUILD))
    yield mem
    await mem.close()
    embedder.close()


async def test_recall_finds_only_the_askers_items_in_this_place(memory: UserMemory) -> None:
    registry = MemoryTools(memory).for_turn([])
    result = await registry.call("recall_memory", {"query": "cat"}, ALICE_HERE)
    assert result.ok and "Miso" in result.observation
    assert "Rex" not in result.observation and "other guild" not in result.observation


async def test_recall_with_global_scope_sees_every_place_of_the_asker(memory: UserMemory) -> None:
    registry = MemoryTools(memory, global_scope=True).for_turn([])
    result = await registry.call("recall_memory", {"query": "cat"}, ALICE_HERE)
    assert "Miso" in result.observation and "other guild" in result.observation
    assert "Rex" not in result.observation


async def test_the_model_cannot_name_another_user(memory: UserMemory) -> None:
    registry = MemoryTools(memory).for_turn([])
    result = await registry.call("recall_memory", {"query": "cat", "user_id": BOB}, ALICE_HERE)
    assert not result.ok and result.observation.startswith("Error:") and "Rex" not in result.observation
    assert "user_id" not in registry.get("recall_memory").parameters["properties"]


async def test_recall_of_nothing_says_so(memory: UserMemory) -> None:
    registry = MemoryTools(memory).for_turn([])
    dm = ToolContext(user_id=ALICE, channel_id="9", guild_id=None)
    result = await registry.call("recall_memory", {"query": "cat"}, dm)
    assert result.ok and result.observation == "Nothing remembered about that."
    empty = await registry.call("recall_memory", {"query": "   "}, dm)
    assert not empty.ok and "query is empty" in empty.observation


async def test_remember_collects_facts_for_the_pipeline_without_writing(memory: UserMemory) -> None:
    pending: list[str] = []
    registry = MemoryTools(memory).for_turn(pending)
    result = await registry.call("remember", {"fact": "  They are\nvegetarian "}, ALICE_HERE)
    assert result.ok and result.observation == "Will remember: They are vegetarian"
    assert pending == ["They are vegetarian"]
    assert len(await memory.list(ALICE)) == 2  # nothing written yet


async def test_remember_refuses_empty_too_many_and_cuts_long_facts(memory: UserMemory) -> None:
    pending: list[str] = []
    registry = MemoryTools(memory).for_turn(pending)
    assert not (await registry.call("remember", {"fact": " "}, ALICE_HERE)).ok
    await registry.call("remember", {"fact": "x" * 5000}, ALICE_HERE)
    assert len(pending[0]) <= MAX_FACT_CHARS + 6 and pending[0].endswith("[...]")
    for i in range(MAX_FACTS_PER_TURN - 1):
        assert (await registry.call("remember", {"fact": f"fact {i}"}, ALICE_HERE)).ok
    extra = await registry.call("remember", {"fact": "one too many"}, ALICE_HERE)
    assert not extra.ok and len(pending) == MAX_FACTS_PER_TURN


def test_memory_lines_carry_their_date() -> None:
    assert format_memory_line("likes  tea\n", {"created_at": 0}) == "(1970-01-01) likes tea"
    assert format_memory_line("x" * 50, None, max_chars=10) == "x" * 10 + " [...]"
