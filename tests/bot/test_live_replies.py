"""Live answers end to end: the reply grows through throttled edits as the fake model streams,
a 429 slows it without losing text, a 5,000-character answer moves on to more messages with its
code block intact, and a turn that outlives the interaction token goes on as a channel message."""

from __future__ import annotations

import pytest

from bot.discord_app.live_reply import MOVED_NOTE, LiveOptions
from bot.discord_app.replies import split_message
from tests.bot.discord_fixtures import World, answer, sent_by_bot
from tests.fakes.discord_server import FakeMessage
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # a real runtime per test, waiting on streamed edits: handed out first (tests/conftest.py)

INTERVAL = 0.2
LIVE = LiveOptions(edit_interval_s=INTERVAL)
# Edits are timed where the fake receives them; the client spaces them by INTERVAL on its own
# clock, and loopback delivery may shift one by a few milliseconds either way.
SLACK = 0.05
# The bot moves off an interaction 0.6 s after the command, well before the fake's 1.5 s token.
SHORT_TOKEN = LiveOptions(edit_interval_s=0.05, token_lifetime_s=1.5, token_margin_s=0.9)


def prose(n: int) -> str:
    words = (f"word{i}" for i in range(n))
    return " ".join(words)


def gaps(msg: FakeMessage) -> list[float]:
    times = [e["at"] for e in msg.edits]
    return [b - a for a, b in zip(times, times[1:])]


async def settled(world: World, msg: FakeMessage, text: str) -> None:
    await world.dc.wait_for(lambda: msg.content == text, timeout=20)


async def test_a_streamed_answer_grows_through_edits_at_most_one_per_interval(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    text = prose(160)  # about 1,100 characters, streamed over about a second and a half
    fake.chunk_chars = 8
    fake.reply("Final Answer: " + text, chunk_delay_s=0.01)
    await run_bot(live=LIVE)
    asked = await world.dc.user_says(world.general, world.alice, "tell me a lot", mention_bot=True)
    reply = await answer(world, asked)
    await settled(world, reply, text)
    shown = [reply.first_content, *(e["content"] for e in reply.edits)]
    assert len(reply.edits) >= 3  # it grew while the model wrote
    assert all(text.startswith(s) for s in shown)  # every version a prefix of the answer, in order
    assert [len(s) for s in shown] == sorted(len(s) for s in shown)
    assert all(gap >= INTERVAL - SLACK for gap in gaps(reply))
    assert sent_by_bot(world, world.general) == [reply]  # one message: the answer shown once


async def test_a_429_on_an_edit_slows_the_reply_and_loses_no_text(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    text = prose(200)
    fake.chunk_chars = 8
    fake.reply("Final Answer: " + text, chunk_delay_s=0.01)
    await run_bot(live=LIVE)
    asked = await world.dc.user_says(world.general, world.alice, "tell me a lot", mention_bot=True)
    reply = await answer(world, asked)
    await world.dc.wait_for(lambda: reply.edits)  # mid-stream: the first edit went through
    world.dc.rate_limit_once("PATCH", f"/channels/{world.general}/messages/{reply.id}", retry_after=0.5)
    await settled(world, reply, text)
    patches = [r for r in world.dc.requests if r.method == "PATCH" and r.path.endswith(reply.id)]
    [limited] = [i for i, r in enumerate(patches) if r.status == 429]
    retry = patches[limited + 1]
    assert retry.status == 200 and retry.at - patches[limited].at >= 0.5 - SLACK  # waited, no burst
    assert retry.json["content"] == patches[limited].json["content"]  # the same text, sent again
    assert all(text.startswith(e["content"]) for e in reply.edits)
    assert reply.content == text


async def test_a_5000_character_answer_moves_on_to_more_messages_with_its_code_block_intact(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    code = "\n".join(f"    total += {i}  # step {i}" for i in range(90))
    text = f"{prose(200)}\n\n```python\ndef add():\n    total = 0\n{code}\n    return total\n```\n\n{prose(400)}"
    assert len(text) > 5000
    fake.chunk_chars = 60
    fake.reply("Final Answer: " + text, chunk_delay_s=0.005)
    await run_bot(live=LIVE)
    asked = await world.dc.user_says(world.general, world.alice, "a long one", mention_bot=True)
    first = await answer(world, asked)
    expected = split_message(text)
    await world.dc.wait_for(lambda: [m.content for m in sent_by_bot(world, world.general)
                                     if not m.deleted] == expected, timeout=20)
    parts = [m for m in sent_by_bot(world, world.general) if not m.deleted]
    assert parts[0] is first and len(parts) == len(expected) >= 3
    for part in parts:
        assert len(part.content) <= 2000
        assert part.content.count("```") % 2 == 0  # every part renders on its own
        assert all(gap >= INTERVAL - SLACK for gap in gaps(part))


async def test_an_ask_that_outlives_its_interaction_token_answers_in_the_channel(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    world.dc.interaction_token_lifetime_s = 1.5
    fake.delay(1.6).reply("Final Answer: worth the wait")  # the model says nothing until the token is gone
    await run_bot(live=SHORT_TOKEN)
    inter = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "slow one?"})
    posted = await world.dc.wait_for_message(
        world.general, lambda m: m.content == "worth the wait", timeout=20)
    assert posted.interaction_id is None  # a normal channel message, not a followup
    assert world.dc.messages[inter.original_message_id].content == MOVED_NOTE
    assert all(e.status < 400 for e in inter.events)  # nothing was sent with an expired token


async def test_a_private_ask_that_outlives_its_token_is_answered_in_a_direct_message(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    world.dc.interaction_token_lifetime_s = 1.5
    fake.delay(1.6).reply("Final Answer: just for you")
    await run_bot(live=SHORT_TOKEN)
    await world.dc.invoke_command(world.general, world.alice, "ask",
                                  {"question": "slow secret?", "private": True})
    posted = await world.dc.wait_for_message(None, lambda m: m.content == "just for you", timeout=20)
    assert posted.channel_id == world.alice_dm
    assert not [m for m in sent_by_bot(world, world.general) if "just for you" in m.content]
