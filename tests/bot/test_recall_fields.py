"""What the bot writes with a stored message for the memory's ranking: speaker, the lines before it, its dates."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.process.runtime import Runtime
from bot.turn_store.persistence import CONTEXT_MAX_AGE_S
from bot.turn_store.recall_fields import BEFORE_CHARS, SPEAKER_CHARS, before_lines, recall_fields
from memory.semantic.time_mentions import dates_of
from memory.stores.buffer import BufferedMessage
from tests.bot.conftest import ALICE, BOB, GUILD, ask, buffered
from tests.fakes.openai_server import FakeOpenAI

CHANNEL = "300000000000000001"
SAID_AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


async def _two_turns(rt: Runtime, fake: FakeOpenAI, first: tuple[str, str], second: tuple[str, str]):
    """Alice says first[0] (answered first[1]), then second[0] (answered second[1]); her second message's item."""
    for text, reply in (first, second):
        fake.reply(f"Final Answer: {reply}")
        await rt.pipeline.handle(ask(text))
    return await _said(rt, second[0])


async def _said(rt: Runtime, text: str, user: str = ALICE):
    return next(i for i in await rt.user_memory.list(user) if i.metadata["kind"] == "exchange" and i.text == text)


async def test_the_persons_message_carries_their_display_name_as_speaker(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Lovely.")
    await runtime.pipeline.handle(ask("I painted a sunrise over the lake last weekend."))
    said = await _said(runtime, "I painted a sunrise over the lake last weekend.")
    assert said.metadata["speaker"] == "Alice"
    reply = next(i for i in await runtime.user_memory.list(ALICE) if i.metadata["kind"] == "reply")
    assert "speaker" not in reply.metadata  # the bot's answer is not the person's words


async def test_relative_dates_are_resolved_against_the_time_the_message_was_stored(
        runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Good for you.")
    await runtime.pipeline.handle(ask("I went to the LGBTQ support group yesterday and it helped."))
    said = await _said(runtime, "I went to the LGBTQ support group yesterday and it helped.")
    stored_at = datetime.fromisoformat(said.metadata["created_at"]).timestamp() \
        if isinstance(said.metadata["created_at"], str) else float(said.metadata["created_at"])
    # within the second the turn took, "yesterday" names the same day (unless it crossed midnight)
    assert said.metadata["dates"] in {dates_of("yesterday", stored_at), dates_of("yesterday", stored_at - 60)}


async def test_a_message_without_a_relative_date_has_no_dates(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Nice.")
    await runtime.pipeline.handle(ask("My favourite painter is Monet, for the water lilies."))
    said = await _said(runtime, "My favourite painter is Monet, for the water lilies.")
    assert "dates" not in said.metadata


async def test_the_persons_previous_exchange_rides_along_as_before(runtime: Runtime, fake: FakeOpenAI) -> None:
    said = await _two_turns(runtime, fake,
                            ("I have been training for months, my knees hurt a bit.", "Which race are you running next?"),
                            ("The charity 10k in Lyon, for the children's hospital.", "Good luck!"))
    assert said.metadata["before"] == ("Alice: I have been training for months, my knees hurt a bit.\n"
                                       "bot: Which race are you running next?")
    first = await _said(runtime, "I have been training for months, my knees hurt a bit.")
    assert "before" not in first.metadata  # nothing came before it in the channel


async def test_another_persons_words_never_ride_along_as_before(runtime: Runtime, fake: FakeOpenAI) -> None:
    assert await runtime.services.channels.record_chatter(user_id=BOB, display_name="Bob", guild_id=GUILD,
                                                          channel_id=CHANNEL, text="my password is hunter2")
    fake.reply("Final Answer: Noted.")
    await runtime.pipeline.handle(ask("I am thinking of adopting a second cat from the shelter."))
    said = await _said(runtime, "I am thinking of adopting a second cat from the shelter.")
    assert "before" not in said.metadata
    assert "hunter2" not in json.dumps(said.metadata)


async def test_a_short_message_with_context_needs_no_before(runtime: Runtime, fake: FakeOpenAI) -> None:
    short = await _two_turns(runtime, fake, ("Tonight is Priya's piano recital, she has practised for months.",
                                             "Are you going to Priya's piano recital?"),
                             ("Yes! It was amazing", "Wonderful!"))
    assert short.metadata["context"] == "Are you going to Priya's piano recital?"
    assert "before" not in short.metadata and short.metadata["speaker"] == "Alice"


async def test_storing_a_short_message_reads_the_channels_last_two_messages_once(
        runtime: Runtime, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    lasts: list[int] = []
    real = runtime.buffer.recent

    async def counted(channel_id: str, **options: Any) -> list[BufferedMessage]:
        if options.get("limit") == 2:  # the store's look at what the message answered (the turn reads a window)
            lasts.append(options["limit"])
        return await real(channel_id, **options)

    monkeypatch.setattr(runtime.buffer, "recent", counted)
    fake.reply("Final Answer: Hello!")
    await runtime.pipeline.handle(ask("Hi there"))  # short, and nothing before it: no context found
    assert "before" not in (await _said(runtime, "Hi there")).metadata
    assert lasts == [2]


async def test_a_remembered_fact_carries_the_speaker_and_its_dates(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply('Action: remember\nAction Input: {"fact": "Alice started a pottery class last week"}')
    fake.reply("Final Answer: I'll remember that.")
    await runtime.pipeline.handle(ask("Please remember I started a pottery class last week."))
    fact = next(i for i in await runtime.user_memory.list(ALICE) if i.metadata["kind"] == "fact")
    assert fact.metadata["speaker"] == "Alice"
    assert fact.metadata["dates"].startswith("the week of ")
    assert "before" not in fact.metadata


async def test_concurrent_turns_each_carry_their_own_speaker(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: ok")
    fake.reply("Final Answer: ok")
    await asyncio.gather(
        runtime.pipeline.handle(ask("I bought a red kayak on Saturday for the river.", channel="300000000000000005")),
        runtime.pipeline.handle(ask("I sold my old guitar to a neighbour on Sunday.", user=BOB, name="Bob",
                                    channel="300000000000000006")))
    assert (await _said(runtime, "I bought a red kayak on Saturday for the river.")).metadata["speaker"] == "Alice"
    bob = await _said(runtime, "I sold my old guitar to a neighbour on Sunday.", user=BOB)
    assert bob.metadata["speaker"] == "Bob"


def test_recall_fields_resolve_relative_dates_against_the_given_time() -> None:
    fields = recall_fields("Caroline", "I went to the support group yesterday", SAID_AT)
    assert fields == {"speaker": "Caroline", "dates": "7 May 2023"}


def test_recall_fields_leave_out_what_has_nothing_to_say() -> None:
    assert recall_fields("\u200b \u200e", "just saying hi", SAID_AT) == {}


def test_recall_fields_clip_a_huge_name_and_huge_lines_before() -> None:
    fields = recall_fields("N" * 10_000, "x", SAID_AT, ["a" * 5_000, "b" * 5_000])
    assert len(fields["speaker"]) == SPEAKER_CHARS
    assert len(fields["before"]) == BEFORE_CHARS and fields["before"].endswith("b")  # the nearest line kept


def test_before_lines_stop_at_another_persons_message_and_at_an_old_one() -> None:
    now = SAID_AT
    recent = [buffered(ALICE, "user", "old news", now - timedelta(seconds=CONTEXT_MAX_AGE_S + 1)),
              buffered(BOB, "user", "bob's words", now - timedelta(minutes=3), name="Bob"),
              buffered(ALICE, "user", "my question", now - timedelta(minutes=2)),
              buffered("assistant", "assistant", "the answer", now - timedelta(minutes=2), name="assistant")]
    assert before_lines(recent, ALICE, now, CONTEXT_MAX_AGE_S) == ["Alice: my question", "bot: the answer"]
    assert before_lines(recent, BOB, now, CONTEXT_MAX_AGE_S) == []  # the newest is another's answer
    assert before_lines(recent[:1], ALICE, now, CONTEXT_MAX_AGE_S) == []  # said too long ago
    assert before_lines([], ALICE, now, CONTEXT_MAX_AGE_S) == []
