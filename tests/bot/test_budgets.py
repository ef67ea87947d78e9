"""Daily token budgets: counted from the model's reported tokens, refused with the reset time
once spent, back at the next UTC day (injected clock); `/usage` for a person and for an admin."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.knowledge.summary import FOLD_INSTRUCTIONS
from bot.settings.budgets import TokenBudget
from bot.settings.config import load_settings
from bot.process.runtime import Runtime
from memory.stores.database import Database
from memory.stores.usage import TokenUsageStore
from tests.bot.conftest import ALICE, BOB, GUILD, ask
from tests.bot.discord_fixtures import World, answer
from tests.fakes import discord_payloads as p
from tests.clock import Clock
from tests.fakes.openai_server import FakeOpenAI, Reply

TURN = {"prompt_tokens": 60, "completion_tokens": 40}  # 100 tokens a turn
FOLD = {"prompt_tokens": 900, "completion_tokens": 100}  # 1,000 tokens a running summary's fold


@pytest.fixture
def clock() -> Clock[datetime]:
    return Clock(datetime(2026, 12, 1, 21, 30, tzinfo=UTC))


@pytest.fixture
def budget_runtime(env: dict[str, str], clock: Clock) -> Callable[..., Runtime]:
    def make(**overrides: str) -> Runtime:
        return Runtime(load_settings({**env, **overrides}), now=clock)
    return make


async def test_a_person_over_their_daily_tokens_is_refused_until_the_next_utc_day(
        budget_runtime: Callable[..., Runtime], fake: FakeOpenAI, clock: Clock) -> None:
    for n in range(3):
        fake.reply(f"Final Answer: answer {n}", usage=TURN)
    async with budget_runtime(USER_DAILY_TOKENS="150") as rt:
        first = await rt.pipeline.handle(ask("one?"))
        second = await rt.pipeline.handle(ask("two?"))  # 100 used: still under 150
        refused = await rt.pipeline.handle(ask("three?"))
        assert (first.text, second.text) == ("answer 0", "answer 1")
        assert refused.outcome == "over_budget" and not refused.ok
        assert "150 tokens" in refused.text and "00:00 UTC (in 2 h 30 min)" in refused.text
        assert len(fake.requests) == 2  # the refused turn never reached the model
        clock.now += timedelta(hours=3)  # 00:30 the next day
        again = await rt.pipeline.handle(ask("three, tomorrow?"))
    assert again.ok and again.text == "answer 2"


async def test_a_server_over_its_daily_tokens_refuses_everyone_there_but_not_in_dms(
        budget_runtime: Callable[..., Runtime], fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: for alice", usage=TURN).reply("Final Answer: for bob in a DM", usage=TURN)
    async with budget_runtime(GUILD_DAILY_TOKENS="100") as rt:
        assert (await rt.pipeline.handle(ask("mine?"))).ok
        refused = await rt.pipeline.handle(ask("mine too?", user=BOB, name="Bob"))
        in_dm = await rt.pipeline.handle(ask("in private?", user=BOB, name="Bob", guild=None))
    assert refused.outcome == "over_budget" and refused.text.startswith("This server has used its 100 tokens")
    assert in_dm.ok and in_dm.text == "for bob in a DM"


async def test_a_turn_is_charged_when_its_answer_is_written_before_it_is_stored(
        budget_runtime: Callable[..., Runtime], fake: FakeOpenAI) -> None:
    # A live reply's preview shows the answer while the turn is still being stored (a loaded
    # machine, a slow embedding): /usage asked then must count it already.
    fake.reply("Final Answer: the code word is zebra42", usage=TURN)
    held = fake.hold_embeddings("zebra42")  # the reply item's embedding: the turn is storing
    async with budget_runtime(USER_DAILY_TOKENS="1000", GUILD_DAILY_TOKENS="5000") as rt:
        turn = asyncio.create_task(rt.pipeline.handle(ask("the code word?")))
        while not any("zebra42" in str(r.get("input")) for r in fake.embedding_requests):
            await asyncio.sleep(0.01)
        storing = await rt.budget.report(ALICE, GUILD, with_guild=True)
        held.set()
        result = await turn
        done = await rt.budget.report(ALICE, GUILD, with_guild=True)
    assert result.ok
    assert storing.user_tokens == 100 and storing.guild is not None and storing.guild.tokens == 100
    assert done.user_tokens == 100  # charged once


async def test_failed_turns_are_charged_what_the_model_reported_and_unlimited_budgets_never_refuse(
        budget_runtime: Callable[..., Runtime], fake: FakeOpenAI, clock: Clock) -> None:
    fake.reply("Thought: no format at all", usage=TURN).replies("still nothing", "nothing again")
    async with budget_runtime() as rt:
        assert rt.settings.features.user_daily_tokens == 0
        result = await rt.pipeline.handle(ask("confuse yourself"))
        report = await rt.budget.report(ALICE, GUILD, with_guild=True)
    assert result.outcome == "no_answer"
    assert report.user_tokens == result.total_tokens >= 100 and report.guild is not None
    assert report.guild.tokens == report.user_tokens


REMARK = "Here is a long remark about the weather and the match schedule, nothing more. " * 5


def _turn_or_fold(request: dict[str, Any]) -> Reply:
    """A turn's answer (100 tokens), or a running summary's fold (1,000)."""
    if request["messages"][0]["content"] == FOLD_INSTRUCTIONS:
        return Reply("They talked about the weather.", usage=FOLD)
    return Reply("Final Answer: noted", usage=TURN)


async def test_a_running_summary_fold_is_charged_to_the_person_whose_turn_started_it(
        budget_runtime: Callable[..., Runtime], fake: FakeOpenAI) -> None:
    # A fold asks the model too: its tokens count toward the person's and the server's day, as
    # /tldr's do, or a busy server's folds would spend past GUILD_DAILY_TOKENS unseen.
    fake.responder = _turn_or_fold
    async with budget_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4", GUILD_DAILY_TOKENS="100000") as rt:
        for _ in range(12):
            assert (await rt.pipeline.handle(ask(REMARK))).ok
            await rt.pipeline.summaries.wait_idle()
        report = await rt.budget.report(ALICE, GUILD, with_guild=True)
    folds = sum(1 for r in fake.requests if r["messages"][0]["content"] == FOLD_INSTRUCTIONS)
    assert folds >= 1
    assert report.user_tokens == 100 * (len(fake.requests) - folds) + 1000 * folds
    assert report.guild is not None and report.guild.tokens == report.user_tokens


async def test_a_fold_stopped_by_a_shutdown_after_the_model_answered_is_still_counted(
        budget_runtime: Callable[..., Runtime], fake: FakeOpenAI) -> None:
    fake.responder = _turn_or_fold
    async with budget_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        store = rt.budget._store
        real_add, charging, go_on = store.add, asyncio.Event(), asyncio.Event()

        async def held_add(day: Any, user_id: str, guild_id: str | None, tokens: int) -> None:
            if tokens == 1000:  # the fold's charge waits here while the shutdown comes
                charging.set()
                await go_on.wait()
            await real_add(day, user_id, guild_id, tokens)

        store.add = held_add  # type: ignore[method-assign]
        turns = 0
        while not charging.is_set():
            assert turns < 12, "no fold was charged"
            assert (await rt.pipeline.handle(ask(REMARK))).ok
            turns += 1
            idle, fold_charging = (asyncio.ensure_future(rt.pipeline.summaries.wait_idle()),
                                   asyncio.ensure_future(charging.wait()))
            await asyncio.wait([idle, fold_charging], return_when=asyncio.FIRST_COMPLETED)
            idle.cancel()
            fold_charging.cancel()
        closing = asyncio.ensure_future(rt.pipeline.summaries.aclose())
        await asyncio.sleep(0.05)
        go_on.set()
        await closing
        report = await rt.budget.report(ALICE, GUILD, with_guild=False)
    assert report.user_tokens == 100 * turns + 1000


async def test_the_store_counts_per_day_and_place_and_rejects_bad_counts(tmp_path) -> None:
    day = datetime(2026, 12, 1, tzinfo=UTC).date()
    async with Database.open(tmp_path / "bot.sqlite3") as db:
        store = TokenUsageStore(db)
        await store.add(day, ALICE, GUILD, 10)
        await store.add(day, ALICE, GUILD, 5)
        await store.add(day, ALICE, None, 7)  # a DM counts for the person, not for any server
        await store.add(day + timedelta(days=1), ALICE, GUILD, 1000)
        await store.add(day, BOB, GUILD, 30)
        assert await store.user_total(day, ALICE) == 22
        assert await store.guild_total(day, GUILD) == 45
        assert [(u.user_id, u.tokens) for u in await store.top_users(day, GUILD)] == [(BOB, 30), (ALICE, 15)]
        for bad in (-1, 1.5, True):
            with pytest.raises(ValueError):
                await store.add(day, ALICE, GUILD, bad)  # type: ignore[arg-type]
        budget = TokenBudget(store, user_daily=0, guild_daily=0,
                             now=lambda: datetime(2026, 12, 9, 12, tzinfo=UTC))
        await budget.charge(BOB, GUILD, 1)  # the first charge of a day prunes past KEEP_DAYS
        assert await store.user_total(day, ALICE) == 0 and await store.user_total(day, BOB) == 0


async def test_usage_shows_a_member_their_own_use_and_an_admin_the_servers(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    admins = world.dc.add_role(world.guild, "admins", p.MANAGE_GUILD)
    boss = world.dc.add_member(world.guild, name="boss", roles=[admins])
    fake.reply("Final Answer: one", usage=TURN).reply("Final Answer: two", usage=TURN)
    await run_bot(now=clock, USER_DAILY_TOKENS="1000", GUILD_DAILY_TOKENS="5000")
    await answer(world, await world.dc.user_says(world.general, world.alice, "q1", mention_bot=True))
    await answer(world, await world.dc.user_says(world.general, world.bob, "q2", mention_bot=True))

    own = await world.dc.invoke_command(world.general, world.alice, "usage")
    mine = (await world.dc.wait_for_response(own, "callback")).json["data"]
    assert mine["flags"] & p.EPHEMERAL
    assert "you have used 100 of 1,000 tokens" in mine["content"]
    assert "server" not in mine["content"] and world.bob not in mine["content"]

    admin = await world.dc.invoke_command(world.general, boss, "usage")
    theirs = (await world.dc.wait_for_response(admin, "callback")).json["data"]["content"]
    assert "you have used 0 of 1,000 tokens" in theirs
    assert "This server has used 200 of 5,000 tokens today." in theirs
    assert f"<@{world.alice}> 100" in theirs and f"<@{world.bob}> 100" in theirs
    assert "00:00 UTC (in 2 h 30 min)" in theirs
