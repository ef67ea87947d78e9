"""bot.turn.memory_tools: recall_memory and remember act only for the asker, in the asker's place."""

from __future__ import annotations

import asyncio

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.tools.registry import ToolContext
from datetime import UTC, datetime

from bot.turn.privacy import MemoryPolicy
from bot.turn.memory_tools import (
    MAX_FACT_CHARS,
    MAX_FACTS_PER_TURN,
    RECALL_QUERY_CHARS,
    MemoryTools,
    format_memory_line,
    memory_lines,
)
from memory.semantic.embeddings import OpenAIEmbedder
from memory.semantic import MemoryHit, UserMemory, open_user_memory, scope_for
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
    registry = MemoryTools(memory, policy=MemoryPolicy(operator_global=True)).for_turn([])
    result = await registry.call("recall_memory", {"query": "cat"}, ALICE_HERE)
    assert "Miso" in result.observation and "other guild" in result.observation
    assert "Rex" not in result.observation


async def test_a_huge_query_searches_by_its_start(memory: UserMemory, fake: FakeOpenAI) -> None:
    registry = MemoryTools(memory).for_turn([])
    result = await registry.call("recall_memory", {"query": "cat " + "x" * 1_000_000}, ALICE_HERE)
    assert result.ok and "Miso" in result.observation
    embedded = fake.embedding_requests[-1]["input"]
    assert [len(text) for text in embedded] == [RECALL_QUERY_CHARS]


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


async def test_concurrent_turns_of_one_memory_tools_keep_their_facts_apart(memory: UserMemory) -> None:
    tools = MemoryTools(memory)
    first, second = [], []
    a, b = tools.for_turn(first), tools.for_turn(second)
    await asyncio.gather(a.call("remember", {"fact": "They like tea"}, ALICE_HERE),
                         b.call("remember", {"fact": "They like coffee"}, ALICE_HERE))
    await a.call("remember", {"fact": "They live in Lyon"}, ALICE_HERE)
    assert first == ["They like tea", "They live in Lyon"] and second == ["They like coffee"]
    assert a.get("remember").parameters == b.get("remember").parameters  # one schema, derived once


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


def day(month: int, dom: int) -> float:
    return datetime(2026, month, dom, 12, tzinfo=UTC).timestamp()


def hit(text: str, created_at: float, score: float = 1.0, **meta: object) -> MemoryHit:
    return MemoryHit(id=text, text=text, score=score, metadata={"created_at": created_at, **meta})


def test_a_changed_fact_comes_back_newest_first_and_the_older_one_marked_earlier() -> None:
    lines = memory_lines([hit("I live in Lyon", day(9, 1), score=0.9),
                          hit("I moved from Lyon to Berlin", day(11, 2), score=0.4)])
    assert lines == ["(2026-11-02) I moved from Lyon to Berlin", "(2026-09-01, earlier) I live in Lyon"]


def test_an_older_memory_on_another_subject_is_not_marked_earlier() -> None:
    lines = memory_lines([hit("my cat is called Miso", day(9, 1)), hit("I moved to Berlin", day(11, 2))])
    assert lines == ["(2026-11-02) I moved to Berlin", "(2026-09-01) my cat is called Miso"]


def test_memories_of_the_same_moment_keep_their_ranking_order() -> None:
    lines = memory_lines([hit("first", day(9, 1)), hit("second", day(9, 1)), hit("third", day(9, 1))])
    assert [line.split(") ")[1] for line in lines] == ["first", "second", "third"]


def test_no_memories_give_no_lines_and_undated_ones_sort_last() -> None:
    assert memory_lines([]) == []
    undated = MemoryHit(id="x", text="undated note", score=1.0, metadata={})
    assert memory_lines([undated, hit("dated", day(9, 1))]) == ["(2026-09-01) dated", "undated note"]


def test_the_bots_own_reply_reads_as_its_reply_to_the_question() -> None:
    line = format_memory_line("Try a leek quiche.", {"created_at": day(10, 3), "kind": "reply",
                                                     "context": "any idea for dinner?"})
    assert line == "(2026-10-03) you replied to “any idea for dinner?”: Try a leek quiche."


def test_a_short_message_shows_what_it_answered_and_a_huge_context_is_cut() -> None:
    line = format_memory_line("Yes! It was amazing", {"created_at": day(10, 3), "kind": "exchange",
                                                      "context": "How was Priya's recital?"})
    assert line == "(2026-10-03) Yes! It was amazing (answering: “How was Priya's recital?”)"
    long = format_memory_line("ok", {"kind": "exchange", "context": "word " * 1000})
    assert len(long) < 200 and "[...]" in long


async def test_recall_lists_a_changed_fact_newest_first(memory: UserMemory) -> None:
    await memory.add(ALICE, "I live in Lyon", {"created_at": day(9, 1)}, scope_for(GUILD))
    await memory.add(ALICE, "I moved from Lyon to Berlin", {"created_at": day(11, 2)}, scope_for(GUILD))
    result = await MemoryTools(memory).for_turn([]).call("recall_memory", {"query": "Lyon"}, ALICE_HERE)
    lines = [line for line in result.observation.splitlines() if "Lyon" in line]
    assert lines == ["- (2026-11-02) I moved from Lyon to Berlin", "- (2026-09-01, earlier) I live in Lyon"]
