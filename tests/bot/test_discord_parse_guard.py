"""A gateway event that discord.py cannot parse is dropped with a log line; the bot goes on
serving (before bot.discord_app.parse_guard it ended the client, and with it the process)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest


from bot.discord_app.parse_guard import guard_parsers, tolerant_json_loads
from tests.bot.conftest import last_user_text
from tests.bot.discord_fixtures import BotUnderTest, World, answer, answered, shows
from tests.fakes.openai_server import FakeOpenAI

MALFORMED = {
    "embed colour as a string": lambda d: {**d, "embeds": [{"type": "rich", "color": "red"}]},
    "no author": lambda d: {k: v for k, v in d.items() if k != "author"},
    "embeds not a list": lambda d: {**d, "embeds": "nope"},
}


@pytest.mark.parametrize("mutate", MALFORMED.values(), ids=MALFORMED.keys())
async def test_an_unparseable_message_is_dropped_and_the_next_one_answered(
        world: World, run_bot: Callable[..., Awaitable[BotUnderTest]], fake: FakeOpenAI,
        mutate: Callable[[dict[str, Any]], dict[str, Any]], caplog: pytest.LogCaptureFixture) -> None:
    fake.default_content = "Final Answer: still here"
    running = await run_bot()
    odd = world.dc.draft_message(world.general, world.alice, "odd", mention_bot=True)
    with caplog.at_level(logging.ERROR, logger="bot.discord_app.parse_guard"):
        await world.dc.dispatch("MESSAGE_CREATE", mutate(world.dc.message_payload(odd)), guild_id=world.guild)
        reply = await answer(world, await world.dc.user_says(world.general, world.alice, "hi", mention_bot=True))
    await shows(world, reply, "still here")
    assert not running.task.done()
    assert [r.getMessage().split(" (")[0] for r in caplog.records if r.name.endswith("parse_guard")] == [
        "dropped a MESSAGE_CREATE event that discord.py could not parse"]
    assert [m for m in world.dc.bot_messages() if m.reference_id == odd.id] == []


def test_ready_stays_fatal_and_every_other_parser_is_guarded() -> None:
    calls: list[str] = []

    def boom(data: Any) -> None:
        calls.append(data)
        raise KeyError("author")

    parsers = {"READY": boom, "MESSAGE_CREATE": boom}
    guard_parsers(parsers)
    parsers["MESSAGE_CREATE"]("m")  # logged and dropped
    with pytest.raises(KeyError):
        parsers["READY"]("r")
    assert calls == ["m", "r"]


def test_a_lone_surrogate_is_decoded_as_a_replacement_character_and_pairs_stay_whole() -> None:
    loads = tolerant_json_loads(orjson.loads)
    frame = '{"d": {"content": "a\\ud800b", "emoji": "\\ud83d\\ude00", "list": ["\\udfff"]}}'
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(frame)  # what ended the client before
    assert loads(frame) == {"d": {"content": "a\ufffdb", "emoji": "\U0001f600", "list": ["\ufffd"]}}
    assert loads(b'{"op": 11}') == {"op": 11}
    with pytest.raises(ValueError):
        loads('{"cut": ')  # what no decoder accepts still raises


async def test_a_gateway_frame_with_a_lone_surrogate_is_answered_and_the_bot_stays_up(
        world: World, run_bot: Callable[..., Awaitable[BotUnderTest]], fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: still here"
    running = await run_bot()
    # FakeDiscord writes frames with json.dumps, which escapes the lone surrogate as \ud800
    odd = await world.dc.user_says(world.general, world.alice, "broken \ud800 text", mention_bot=True)
    await answered(world, odd, "still here")
    assert "broken \ufffd text" in last_user_text(fake.requests[-1])
    reply = await answer(world, await world.dc.user_says(world.general, world.alice, "hi", mention_bot=True))
    assert reply.content == "still here" and not running.task.done()
