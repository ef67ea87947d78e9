"""How answers reach Discord: pings, long answers in parts, ordering and concurrency, failures,
cooldown, restarts."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from bot.errors import sentence_for
from tests.bot.conftest import last_user_text, system_text
from tests.bot.discord_fixtures import World, answer, answered, final_answers, sent_by_bot, shows
from tests.fakes.discord_server import FakeMessage
from tests.fakes.openai_server import FakeOpenAI

# ------------------------------------------------------------------ pings


def _hostile(world: World) -> str:
    return (f"Final Answer: @everyone @here <@&{world.roles['announcements']}> <@{world.bob}> "
            f"<@{world.alice}> look at this")


async def test_model_output_with_everyone_roles_and_users_pings_only_the_asker(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply(_hostile(world))
    await run_bot()
    asked = await world.dc.user_says(world.general, world.alice, "say something", mention_bot=True)
    reply = await answered(world, asked, _hostile(world).removeprefix("Final Answer: "))
    assert "@everyone" in reply.content and f"<@{world.bob}>" in reply.content
    assert reply.pings.users == {world.alice}
    assert reply.pings.replied_user == world.alice
    assert not reply.pings.everyone and reply.pings.roles == set()


async def test_an_ask_answer_with_mentions_pings_nobody(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply(_hostile(world))
    await run_bot()
    inter = await world.dc.invoke_command(world.general, world.mod, "ask", {"question": "say something"})
    await world.dc.wait_for(lambda: final_answers(inter))
    original = world.dc.messages[inter.original_message_id]
    assert "@everyone" in original.content
    assert original.pings.nobody


# ------------------------------------------------------------------ long answers


def _long_answer() -> str:
    prose = [f"Paragraph line {i}: " + " ".join(["words"] * 10) for i in range(30)]
    code = ["```python"] + [f"value_{i} = compute({i})  # step {i}" for i in range(80)] + ["```"]
    return "\n".join(prose[:15] + code + prose[15:])


def _unfenced(parts: list[str]) -> list[str]:
    """The lines of the parts with the fences the splitter added taken out again."""
    lines: list[str] = []
    for i, part in enumerate(parts):
        body = part.split("\n")
        if i > 0 and body[0].startswith("```") and lines and lines[-1] == "```":
            lines.pop()  # the fence closed at the end of the previous part ...
            body = body[1:]  # ... and reopened here
        lines.extend(body)
    return lines


async def test_a_5000_character_answer_arrives_as_ordered_parts_with_intact_code_blocks(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    text = _long_answer()
    assert 5000 <= len(text) <= 5500
    fake.reply("Final Answer: " + text)
    await run_bot()
    asked = await world.dc.user_says(world.general, world.alice, "write a lot", mention_bot=True)
    first = await answer(world, asked)
    # the whole answer, not a preview as long as it (a preview's closed code blocks add fences)
    await world.dc.wait_for(lambda: _unfenced([m.content for m in sent_by_bot(world, world.general)])
                            == text.split("\n"))
    parts = [m.content for m in sent_by_bot(world, world.general)]
    assert len(parts) >= 3 and parts[0] == first.content
    assert all(len(part) <= 2000 for part in parts)
    assert all(part.count("```") % 2 == 0 for part in parts)
    assert any(part.startswith("```python\nvalue_") for part in parts[1:])  # a block spanned a break
    assert _unfenced(parts) == text.split("\n")
    assert [m.id for m in sent_by_bot(world, world.general)] == sorted(
        (m.id for m in sent_by_bot(world, world.general)), key=int)


# ------------------------------------------------------------------ order and concurrency


def _echo(gate: asyncio.Event | None = None) -> Any:
    """A model that answers "re: <question>"; questions with "slow" wait for ``gate`` first."""
    async def respond(request: dict[str, Any]) -> str:
        question = last_user_text(request)
        if gate is not None and "slow" in question:
            await gate.wait()
        return f"Final Answer: re: {question}"
    return respond


async def test_two_channels_are_answered_concurrently(world: World, run_bot, fake: FakeOpenAI) -> None:
    gate = asyncio.Event()
    fake.responder = _echo(gate)
    await run_bot()
    slow = await world.dc.user_says(world.general, world.alice, "a slow question", mention_bot=True)
    await world.dc.wait_for(lambda: fake.requests)  # channel A's turn is with the model
    quick = await world.dc.user_says(world.random, world.bob, "a quick question", mention_bot=True)
    quick_reply = await answer(world, quick)  # while channel A's turn is still running
    assert not [m for m in sent_by_bot(world, world.general) if m.reference_id == slow.id]
    gate.set()
    slow_reply = await answer(world, slow)
    await shows(world, quick_reply, "re: a quick question")
    await shows(world, slow_reply, "re: a slow question")
    assert int(quick_reply.id) < int(slow_reply.id)


async def test_one_channels_messages_are_answered_in_order(world: World, run_bot, fake: FakeOpenAI) -> None:
    gate = asyncio.Event()
    fake.responder = _echo(gate)
    running = await run_bot()
    asked: list[FakeMessage] = []
    for text in ("first, slow", "second", "third"):
        asked.append(await world.dc.user_says(world.general, world.alice, text, mention_bot=True))
    await world.dc.wait_for(lambda: fake.requests and running.runtime.pipeline.tracker.in_flight == 3)  # all taken in
    assert [last_user_text(r) for r in fake.requests] == ["first, slow"]  # the others wait their turn
    gate.set()
    expected = ["re: first, slow", "re: second", "re: third"]
    replies = [await answered(world, message, text) for message, text in zip(asked, expected, strict=True)]
    assert [int(r.id) for r in replies] == sorted(int(r.id) for r in replies)
    assert [last_user_text(r) for r in fake.requests] == ["first, slow", "second", "third"]


async def test_turns_waiting_in_one_channel_share_one_typing_indicator(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    gate = asyncio.Event()
    fake.responder = _echo(gate)
    running = await run_bot()
    asked = [await world.dc.user_says(world.general, person, f"question {n}", mention_bot=True)
             for n, person in enumerate((world.alice, world.bob, world.alice))]
    other = await world.dc.user_says(world.random, world.bob, "elsewhere", mention_bot=True)
    await world.dc.wait_for(lambda: running.runtime.pipeline.tracker.in_flight == 4)
    gate.set()
    replies = [await answer(world, message) for message in [*asked, other]]
    first_answer = min(r.created_at for r in replies[:3])
    posts = [t for t in world.dc.typing_events if t.channel_id == world.general and t.at < first_answer]
    assert len(posts) == 1  # per message it was one each: three before the first answer
    assert [t.channel_id for t in world.dc.typing_events].count(world.random) >= 1  # each channel its own


# ------------------------------------------------------------------ failures and cooldown


async def test_a_failing_model_gives_one_clear_sentence_and_the_bot_keeps_serving(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.error(500).reply("Final Answer: back again")
    running = await run_bot()
    failed = await answer(world, await world.dc.user_says(world.general, world.alice, "hello?", mention_bot=True))
    assert failed.content == sentence_for("server_error")
    served = await answer(world, await world.dc.user_says(world.general, world.alice, "hello again?",
                                                          mention_bot=True))
    await shows(world, served, "back again")
    assert await running.pipeline.tracker.wait_idle(10)  # the reply is shown before its turn is stored
    buffered = [m.content for m in await running.runtime.buffer.recent(world.general)]
    assert buffered == ["hello again?", "back again"]  # the failed turn left nothing behind


async def test_an_unreachable_model_is_said_in_one_sentence_every_time(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    await run_bot(OPENAI_BASE_URL=f"http://127.0.0.1:{closed_port}/v1")
    for text in ("are you there?", "still there?"):
        reply = await answer(world, await world.dc.user_says(world.general, world.alice, text, mention_bot=True))
        assert reply.content == sentence_for("unreachable")


async def test_a_flood_gets_one_polite_cooldown_reply_instead_of_queueing(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    gate = asyncio.Event()
    fake.responder = _echo(gate)
    await run_bot(USER_COOLDOWN_S="60")
    first = await world.dc.user_says(world.general, world.alice, "slow question one", mention_bot=True)
    flood = [await world.dc.user_says(world.general, world.alice, f"again {i}", mention_bot=True)
             for i in range(3)]
    cooled = await answer(world, flood[0])  # while the first question is still with the model
    assert cooled.content == sentence_for("cooldown")
    gate.set()
    await answered(world, first, "re: slow question one")
    other = await world.dc.user_says(world.general, world.bob, "my own question", mention_bot=True)
    await answered(world, other, "re: my own question")
    assert [last_user_text(r) for r in fake.requests] == ["slow question one", "my own question"]
    replied_to = {m.reference_id for m in sent_by_bot(world, world.general)}
    assert replied_to == {first.id, flood[0].id, other.id}  # the rest of the flood: no reply


# ------------------------------------------------------------------ restart


async def test_a_restart_keeps_the_buffer_and_the_memory_of_this_guild_only(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.responder = _echo()
    first_run = await run_bot()
    await answer(world, await world.dc.user_says(world.general, world.alice,
                                                 "my cat is called Whiskers", mention_bot=True))
    await first_run.stop()

    await run_bot()
    await answer(world, await world.dc.user_says(world.general, world.alice, "hello again", mention_bot=True))
    history = [m["content"] for m in fake.requests[-1]["messages"][1:-1]]
    assert history == ["my cat is called Whiskers", "re: my cat is called Whiskers"]

    await answer(world, await world.dc.user_says(world.random, world.alice, "what is my cat called?",
                                                 mention_bot=True))
    assert "Whiskers" in system_text(fake.requests[-1])
    assert len(fake.requests[-1]["messages"]) == 2  # another channel: no buffer of general

    await answer(world, await world.dc.user_says(world.elsewhere, world.alice, "what is my cat called?",
                                                 mention_bot=True))
    assert "Whiskers" not in system_text(fake.requests[-1])
