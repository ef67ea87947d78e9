"""The `remind` tool through a real turn (Runtime, agent, SQLite) against the loopback model, in
both protocols: the reminder is stored for the asker where they asked, the observation says when
it fires in their zone, the system prompt gives their zone, and a malformed time, a too frequent
rule or one reminder too many is an observation the model can correct."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.process.runtime import Runtime
from bot.settings.config import load_settings
from tests.bot.conftest import ALICE, BOB, GUILD, ask, last_user_text, system_text
from tests.fakes.openai_server import FakeOpenAI

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)  # a Thursday


def action(**args: Any) -> str:
    return f"Thought: set it.\nAction: remind\nAction Input: {json.dumps(args)}"


@pytest.fixture
def open_runtime(env: dict[str, str]) -> Callable[..., Runtime]:
    def make(**overrides: str) -> Runtime:
        return Runtime(load_settings({**env, **overrides}), now=lambda: NOW)
    return make


@pytest.fixture
async def rt(open_runtime: Callable[..., Runtime]) -> AsyncIterator[Runtime]:
    async with open_runtime() as runtime:
        await runtime.reminders.set_zone(ALICE, "Europe/Paris")
        yield runtime


async def test_a_reminder_set_by_the_model_is_stored_for_the_asker_where_they_asked(
        rt: Runtime, fake: FakeOpenAI) -> None:
    fake.replies(action(when="2026-12-04T09:00", message="call the bank"), "Final Answer: Done.")
    result = await rt.pipeline.handle(ask("remind me Friday at 9 to call the bank", channel="301"))
    assert result.ok
    [stored] = await rt.reminders.pending(ALICE)
    assert (stored.message, stored.guild_id, stored.channel_id, stored.by_dm, stored.ask, stored.rule) == (
        "call the bank", GUILD, "301", False, False, None)
    assert stored.due_at == datetime(2026, 12, 4, 8, 0, tzinfo=UTC)  # 09:00 in Paris (CET)
    observation = last_user_text(fake.requests[1])
    assert "Friday 4 December 2026, 09:00 CET (Europe/Paris)" in observation
    assert "mentioning only them" in observation
    assert await rt.reminders.pending(BOB) == []


async def test_the_native_protocol_offers_and_runs_the_same_tool(
        open_runtime: Callable[..., Runtime], fake: FakeOpenAI) -> None:
    fake.reply(tool_calls=[{"name": "remind", "arguments": {
        "when": "2026-12-04T08:00Z", "message": "weather in Lyon?", "repeat": "FREQ=DAILY;BYHOUR=8", "ask": True}}])
    fake.reply("Every morning, then.")
    async with open_runtime(LLM_PROTOCOL="native") as runtime:
        result = await runtime.pipeline.handle(ask("every morning at 8, tell me the weather in Lyon"))
        [stored] = await runtime.reminders.pending(ALICE)
    assert result.ok
    offered = {tool["function"]["name"]: tool["function"] for tool in fake.requests[0]["tools"]}
    assert set(offered["remind"]["parameters"]["required"]) == {"when", "message"}
    assert set(offered["remind"]["parameters"]["properties"]) == {"when", "message", "repeat", "ask"}
    assert stored.ask and stored.rule == "FREQ=DAILY;BYHOUR=8" and stored.zone == "UTC"
    assert stored.due_at == datetime(2026, 12, 4, 8, 0, tzinfo=UTC)


async def test_the_system_prompt_gives_the_persons_time_zone(rt: Runtime, fake: FakeOpenAI) -> None:
    fake.replies("Final Answer: hi", "Final Answer: hi")
    await rt.pipeline.handle(ask("hello"))
    await rt.pipeline.handle(ask("hello", user=BOB))
    there = r" \(there: \w+day \d{4}-\d\d-\d\d \d\d:\d\d\)\."
    assert re.search("The person's time zone: Europe/Paris" + there, system_text(fake.requests[0]))
    assert re.search("The person's time zone: UTC" + there, system_text(fake.requests[1]))


async def test_a_malformed_time_is_an_observation_the_model_corrects(rt: Runtime, fake: FakeOpenAI) -> None:
    fake.replies(action(when="Friday at 9", message="call the bank"),
                 action(when="2026-12-04T09:00", message="call the bank"), "Final Answer: Done.")
    result = await rt.pipeline.handle(ask("remind me Friday at 9 to call the bank"))
    assert result.ok
    first = last_user_text(fake.requests[1])
    assert first.startswith("Observation: Error") and "2026-12-04T09:00" in first
    assert len(await rt.reminders.pending(ALICE)) == 1


@pytest.mark.parametrize("args, problem", [
    ({"when": "2026-12-01T09:00", "message": "too late"}, "has already passed"),
    ({"when": "2026-12-04T09:00", "message": "often", "repeat": "FREQ=MINUTELY"}, "at most hourly"),
    ({"when": "2026-12-04T09:00", "message": "   "}, "message is empty"),
    ({"when": "2026-12-04T09:00", "message": "x" * 5000}, "keep it under"),
    ({"when": "2026-12-04T09:00", "message": "who", "user_id": BOB}, "Error"),
])
async def test_a_reminder_that_cannot_be_set_is_explained_and_not_stored(
        rt: Runtime, fake: FakeOpenAI, args: dict[str, Any], problem: str) -> None:
    fake.replies(action(**args), "Final Answer: Sorry.")
    await rt.pipeline.handle(ask("remind me"))
    observation = last_user_text(fake.requests[1])
    assert "Error" in observation and problem in observation
    assert await rt.reminders.pending(ALICE) == [] and await rt.reminders.pending(BOB) == []


async def test_one_reminder_over_the_limit_is_refused(open_runtime: Callable[..., Runtime], fake: FakeOpenAI) -> None:
    fake.replies(action(when="2026-12-04T09:00", message="one"), action(when="2026-12-04T10:00", message="two"),
                 "Final Answer: Done.")
    async with open_runtime(REMINDERS_MAX_PENDING="1") as runtime:
        await runtime.pipeline.handle(ask("two reminders"))
        assert [r.message for r in await runtime.reminders.pending(ALICE)] == ["one"]
    assert "already have 1 pending reminders" in last_user_text(fake.requests[2])


async def test_a_reminder_set_in_a_private_answer_or_a_dm_goes_by_dm(rt: Runtime, fake: FakeOpenAI) -> None:
    fake.replies(action(when="2026-12-04T09:00", message="private"), "Final Answer: ok",
                 action(when="2026-12-04T09:00", message="in a dm"), "Final Answer: ok")
    await rt.pipeline.handle(ask("remind me", private=True))
    await rt.pipeline.handle(ask("remind me", guild=None, channel="399"))
    assert [(r.message, r.by_dm) for r in await rt.reminders.pending(ALICE)] == [("private", True), ("in a dm", True)]
    assert "by direct message" in last_user_text(fake.requests[1])
