"""Hostile input that once failed a turn with the "internal" sentence (found by
`bench/chaos.py hostile`): text of only invisible marks, an invisible fact to remember, and an
attachment on a host that refuses the connection. Real Runtime and bot, loopback fakes."""

from __future__ import annotations

import pytest

from bot.errors import sentence_for
from bot.process.runtime import Runtime
from tests.bot.conftest import ALICE, ask, last_user_text
from tests.bot.discord_fixtures import World, answer, shows
from tests.fakes.chroma_server import free_port
from tests.fakes.openai_server import FakeOpenAI

INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u200e\u200f\u202a\u202e\u2066\u2069 \u200b"


async def test_text_of_only_zero_width_and_bidi_marks_is_refused_as_empty(
        runtime: Runtime, fake: FakeOpenAI) -> None:
    result = await runtime.pipeline.handle(ask(INVISIBLE))
    assert result.outcome == "empty" and result.text == sentence_for("empty")
    assert fake.requests == [] and await runtime.buffer.recent("300000000000000001") == []


async def test_an_invisible_fact_is_not_kept_and_the_turn_is_still_answered(
        runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply('Thought: keep it.\nAction: remember\nAction Input: {"fact": "\\u200b\\u202e"}')
    fake.reply("Final Answer: noted")
    result = await runtime.pipeline.handle(ask("remember nothing visible"))
    assert result.ok and result.text == "noted"
    assert sorted(h.metadata["kind"] for h in await runtime.user_memory.list(ALICE)) == ["exchange", "reply"]


async def test_an_attachment_on_a_host_that_refuses_the_connection_is_named_and_answered(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: answered anyway")
    await run_bot()
    dead = f"http://127.0.0.1:{free_port()}/gone.txt"  # nothing listens there
    msg = world.dc.draft_message(world.general, world.alice, "read this", mention_bot=True)
    payload = {**world.dc.message_payload(msg), "attachments": [
        {"id": "1", "filename": "notes.txt", "size": 10, "url": dead, "proxy_url": dead}]}
    await world.dc.dispatch("MESSAGE_CREATE", payload, guild_id=world.guild)
    reply = await answer(world, msg)
    await shows(world, reply, "answered anyway")
    assert "[Attachment not read: notes.txt could not be downloaded]" in last_user_text(fake.requests[-1])


@pytest.mark.parametrize("text", ["\u202eevil\u202c what is 2+2?", "\U0010fffd\U000e0001 hello"])
async def test_visible_text_among_marks_and_rare_planes_is_answered(
        runtime: Runtime, fake: FakeOpenAI, text: str) -> None:
    fake.reply("Final Answer: 4")
    result = await runtime.pipeline.handle(ask(text))
    assert result.ok and last_user_text(fake.requests[-1]).endswith(text.strip()[-5:])
