"""Reminders end to end against the fake Discord, with an injected clock: set by the model in a
mention, delivered once where they were set mentioning only their person, repeating, a scheduled
question answered as that person's turn, a restart in between, a reminder due during downtime
marked late, a deleted channel (by DM, else dropped), a send retried after a crash, a person no
longer let in, and /remind list | cancel | timezone."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.discord_app.access import AccessPolicy
from bot.discord_app.reminder_sender import DiscordReminderSender
from bot.reminders.delivery import ReminderDelivery, nonce_of
from memory.stores.reminders import Reminder
from memory.stores.usage import TokenUsageStore
from tests.bot.discord_fixtures import BotUnderTest, World, answered, sent_by_bot
from tests.clock import Clock
from tests.fakes.discord_server import FakeMessage
from tests.fakes.openai_server import FakeOpenAI

T0 = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)  # a Thursday


@pytest.fixture
def clock() -> Clock[datetime]:
    return Clock(T0)


def remind(**args: Any) -> str:
    return f"Thought: set it.\nAction: remind\nAction Input: {json.dumps(args)}"


async def set_by_mention(world: World, fake: FakeOpenAI, channel: str, **args: Any) -> None:
    fake.replies(remind(**args), "Final Answer: Will do.")
    asked = await world.dc.user_says(channel, world.alice, "remind me, please", mention_bot=True)
    await answered(world, asked, "Will do.")


async def deliver_at(running: BotUnderTest, clock: Clock, when: datetime) -> None:
    clock.now = when
    delivery = running.bot.reminder_delivery  # type: ignore[attr-defined]
    await delivery.deliver_due()


def reminders_in(world: World, channel: str) -> list[FakeMessage]:
    return [m for m in sent_by_bot(world, channel) if "⏰" in m.content]


async def test_a_reminder_is_posted_once_where_it_was_set_mentioning_only_its_person(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00",
                         message=f"call the bank @everyone <@{world.bob}> <@&{world.roles['announcements']}>")
    await deliver_at(running, clock, T0 + timedelta(hours=2))
    assert reminders_in(world, world.general) == []  # not yet due
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 5, tzinfo=UTC))
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 1, tzinfo=UTC))
    [posted] = reminders_in(world, world.general)
    assert posted.content.startswith(f"<@{world.alice}> ⏰ Reminder: call the bank")
    assert posted.pings.users == {world.alice} and not posted.pings.everyone and not posted.pings.roles
    assert posted.nonce is not None and await running.runtime.reminders.pending(world.alice) == []


async def test_a_repeating_reminder_is_posted_each_day_and_stays_pending(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T08:00", message="stretch",
                         repeat="FREQ=DAILY;BYHOUR=8;BYMINUTE=0")
    for day in (4, 5):
        await deliver_at(running, clock, datetime(2026, 12, day, 8, 0, 1, tzinfo=UTC))
    assert [m.content for m in reminders_in(world, world.general)] == [f"<@{world.alice}> ⏰ Reminder: stretch"] * 2
    [pending] = await running.runtime.reminders.pending(world.alice)
    assert pending.due_at == datetime(2026, 12, 6, 8, 0, tzinfo=UTC)


async def test_a_scheduled_question_is_answered_as_the_persons_turn_and_traced(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock, USER_COOLDOWN_S="3600")
    await set_by_mention(world, fake, world.general, when="2026-12-04T08:00Z", message="What's the weather in Lyon?",
                         ask=True)
    fake.reply("Final Answer: Sunny in Lyon, 12 °C.")
    usage = TokenUsageStore(running.runtime.db)
    before = await usage.user_total(datetime(2026, 12, 4).date(), world.alice)
    await deliver_at(running, clock, datetime(2026, 12, 4, 8, 0, 2, tzinfo=UTC))
    assert await usage.user_total(datetime(2026, 12, 4).date(), world.alice) > before  # counted in their budget
    [posted] = reminders_in(world, world.general)
    assert "What's the weather in Lyon?" in posted.content and posted.content.endswith("Sunny in Lyon, 12 °C.")
    asked = fake.requests[-1]["messages"][-1]["content"]
    assert asked == "What's the weather in Lyon?"
    assert '"remind"' not in json.dumps(fake.requests[-1])  # a scheduled question sets no more reminders
    trace = await running.services.traces.last_trace(world.alice, world.general)
    assert trace is not None and trace.answer == "Sunny in Lyon, 12 °C."


async def test_a_reminder_survives_a_restart_and_is_posted_once(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    first = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="after the restart")
    await first.stop()
    second = await run_bot(now=clock)
    await deliver_at(second, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    await deliver_at(second, clock, datetime(2026, 12, 4, 9, 5, tzinfo=UTC))
    assert len(reminders_in(world, world.general)) == 1


async def test_a_reminder_due_while_the_bot_was_down_is_posted_when_it_is_back_marked_late(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    first = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="missed it?")
    await first.stop()
    clock.now = datetime(2026, 12, 4, 11, 0, 30, tzinfo=UTC)
    await run_bot(now=clock)  # the delivery loop finds it due as soon as the bot is ready
    posted = await world.dc.wait_for_message(world.general, lambda m: "⏰" in m.content)
    assert posted.content == f"<@{world.alice}> ⏰ Reminder (late by 2 h): missed it?"


async def test_a_reminder_set_in_a_dm_is_posted_there_without_a_mention(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    fake.replies(remind(when="2026-12-04T09:00Z", message="water the plants"), "Final Answer: Will do.")
    asked = await world.dc.user_says(world.alice_dm, world.alice, "remind me to water the plants")
    await answered(world, asked, "Will do.")
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    [posted] = reminders_in(world, world.alice_dm)
    assert posted.content == "⏰ Reminder: water the plants"


async def test_a_reminder_whose_channel_is_gone_goes_by_dm(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.random, when="2026-12-04T09:00Z", message="the channel went away")
    world.dc.delete_channel(world.random)
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    [posted] = reminders_in(world, world.alice_dm)
    assert posted.content.endswith("⏰ Reminder: the channel went away")
    assert await running.runtime.reminders.pending(world.alice) == []


async def test_a_reminder_neither_its_channel_nor_a_dm_takes_is_dropped_with_a_log_line(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.random, when="2026-12-04T09:00Z", message="nowhere to go")
    world.dc.delete_channel(world.random)
    world.dc.inject_error("POST", f"/channels/{world.alice_dm}/messages", 403,
                          body={"code": 50007, "message": "Cannot send messages to this user"})
    with caplog.at_level(logging.WARNING, logger="bot.discord_app.reminder_sender"):
        await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    assert reminders_in(world, world.alice_dm) == []
    assert await running.runtime.reminders.pending(world.alice) == []
    assert any("dropped" in r.getMessage() for r in caplog.records)


async def test_a_passing_discord_failure_is_retried_later_and_posted_once(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="try again")
    # a 503 is raised at once (discord.py itself retries only 500/502/504/524, sleeping 1 + 2n s
    # five times), so the retry seen here is the bot's own, a minute later
    world.dc.inject_error("POST", f"/channels/{world.general}/messages", 503)
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    assert reminders_in(world, world.general) == []
    [pending] = await running.runtime.reminders.pending(world.alice)
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 1, tzinfo=UTC))
    assert len(reminders_in(world, world.general)) == 1
    assert pending.prepared == "⏰ Reminder: try again"  # the words kept for the retry
    assert await running.runtime.reminders.pending(world.alice) == []


async def test_a_send_accepted_before_a_crash_is_not_posted_again(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="exactly once")
    clock.now = datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC)
    [due] = await running.runtime.reminders.store.due(clock.now)
    text = "⏰ Reminder: exactly once"
    await running.runtime.reminders.store.prepare(due, text)
    # the crashed process: Discord accepted its send, and it died before closing the occurrence
    sender = DiscordReminderSender(running.bot, running.bot.policy)  # type: ignore[attr-defined]
    assert await sender.send(due, text, nonce_of(due)) == "sent"
    await deliver_at(running, clock, clock.now)
    assert len(reminders_in(world, world.general)) == 1
    assert await running.runtime.reminders.pending(world.alice) == []


async def test_a_person_blocked_since_gets_nothing_more(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    first = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="blocked now")
    await first.stop()
    second = await run_bot(now=clock, BLOCKED_USER_IDS=world.alice)
    await deliver_at(second, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    assert reminders_in(world, world.general) == [] and reminders_in(world, world.alice_dm) == []
    assert await second.runtime.reminders.pending(world.alice) == []


async def test_forgetting_erases_the_persons_reminders(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="forget me")
    forgotten = await running.services.memory.memory_forget(world.alice, world.guild)
    assert forgotten.reminders == 1 and "1 pending reminder(s)" in forgotten.summary()
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    assert reminders_in(world, world.general) == []


async def _shown(world: World, inter) -> str:
    event = await world.dc.wait_for_response(inter)
    if event.kind == "callback" and (event.json.get("data") or {}).get("content"):
        return event.json["data"]["content"]
    followup = await world.dc.wait_for_response(inter, "followup")
    return followup.json["content"]


async def test_remind_list_shows_ones_own_reminders_in_ones_zone(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await running.runtime.reminders.set_zone(world.alice, "Asia/Tokyo")
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00", message="tokyo morning",
                         repeat="FREQ=WEEKLY;BYDAY=FR")
    listed = await _shown(world, await world.dc.invoke_command(world.general, world.alice, "remind",
                                                               subcommand="list"))
    assert "Friday 4 December 2026, 09:00 JST (Asia/Tokyo)" in listed and "tokyo morning" in listed
    assert "repeats FREQ=WEEKLY;BYDAY=FR" in listed
    empty = await _shown(world, await world.dc.invoke_command(world.general, world.bob, "remind", subcommand="list"))
    assert empty.startswith("You have no pending reminders")


async def test_remind_cancel_offers_and_cancels_only_ones_own(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="cancel me")
    [mine] = await running.runtime.reminders.pending(world.alice)
    offered = await world.dc.autocomplete(world.general, world.alice, "remind", "reminder", "", subcommand="cancel")
    assert [c["value"] for c in offered] == [mine.id] and "cancel me" in offered[0]["name"]
    assert await world.dc.autocomplete(world.general, world.bob, "remind", "reminder", "", subcommand="cancel") == []
    refused = await _shown(world, await world.dc.invoke_command(
        world.general, world.bob, "remind", {"reminder": mine.id}, subcommand="cancel"))
    assert refused.startswith(f"You have no pending reminder #{mine.id}")
    done = await _shown(world, await world.dc.invoke_command(
        world.general, world.alice, "remind", {"reminder": mine.id}, subcommand="cancel"))
    assert done == f"Cancelled reminder #{mine.id}."
    assert await running.runtime.reminders.pending(world.alice) == []


async def test_remind_timezone_takes_a_valid_iana_name_only(
        world: World, run_bot, clock: Clock) -> None:
    running = await run_bot(now=clock, DEFAULT_TIMEZONE="Europe/Paris")
    shown = await _shown(world, await world.dc.invoke_command(world.general, world.alice, "remind",
                                                              subcommand="timezone"))
    assert shown.startswith("Your time zone is Europe/Paris; it is Thursday 3 December 2026, 11:00 CET")
    offered = await world.dc.autocomplete(world.general, world.alice, "remind", "zone", "new_y", subcommand="timezone")
    assert "America/New_York" in [c["value"] for c in offered]
    refused = await _shown(world, await world.dc.invoke_command(
        world.general, world.alice, "remind", {"zone": "Mars/Olympus"}, subcommand="timezone"))
    assert refused.startswith("That did not work: unknown time zone 'Mars/Olympus'")
    accepted = await _shown(world, await world.dc.invoke_command(
        world.general, world.alice, "remind", {"zone": "america/new york"}, subcommand="timezone"))
    assert accepted.startswith("Your time zone is now America/New_York; it is Thursday 3 December 2026, 05:00 EST")
    assert (await running.runtime.reminders.zone_of(world.alice)).key == "America/New_York"


async def test_two_deliveries_racing_for_one_reminder_post_it_once(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="raced")
    clock.now = datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC)
    policy = running.bot.policy  # type: ignore[attr-defined]
    rivals = [ReminderDelivery(running.runtime.reminders, DiscordReminderSender(running.bot, policy))
              for _ in range(2)]  # two processes sharing one file
    await asyncio.gather(*(rival.deliver_due() for rival in rivals))
    assert len(reminders_in(world, world.general)) == 1
    assert await running.runtime.reminders.pending(world.alice) == []


def test_a_process_delivers_its_shards_reminders_and_dm_ones_from_shard_zero() -> None:
    def reminder(guild: int | None) -> Reminder:
        return Reminder(user_id="1", display_name="a", guild_id=None if guild is None else str(guild),
                        channel_id="2", by_dm=guild is None, message="m", ask=False, rule=None, zone="UTC",
                        start_local="2026-12-04T09:00:00", due_at=T0, id=1)

    in_shard = {shard: reminder((shard << 22) + 7) for shard in range(4)}
    ours = DiscordReminderSender(None, AccessPolicy(), shard_count=4, shard_ids=(0, 2))  # type: ignore[arg-type]
    theirs = DiscordReminderSender(None, AccessPolicy(), shard_count=4, shard_ids=(1, 3))  # type: ignore[arg-type]
    assert [ours.owns(in_shard[s]) for s in range(4)] == [True, False, True, False]
    assert [theirs.owns(in_shard[s]) for s in range(4)] == [False, True, False, True]
    assert ours.owns(reminder(None)) and not theirs.owns(reminder(None))
    assert DiscordReminderSender(None, AccessPolicy()).owns(in_shard[3])  # type: ignore[arg-type]  # one process


async def test_a_daily_reminder_stays_at_eight_local_across_the_autumn_change(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    clock.now = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)
    running = await run_bot(now=clock, DEFAULT_TIMEZONE="Europe/Paris")
    await set_by_mention(world, fake, world.general, when="2026-10-24T08:00", message="coffee",
                         repeat="FREQ=DAILY;BYHOUR=8;BYMINUTE=0")
    [first] = await running.runtime.reminders.pending(world.alice)
    assert first.due_at == datetime(2026, 10, 24, 6, 0, tzinfo=UTC)   # 08:00 CEST
    await deliver_at(running, clock, first.due_at)
    await deliver_at(running, clock, datetime(2026, 10, 25, 6, 0, tzinfo=UTC))  # 07:00 CET: not yet
    [second] = await running.runtime.reminders.pending(world.alice)
    assert second.due_at == datetime(2026, 10, 25, 7, 0, tzinfo=UTC)  # 08:00 CET, the clocks went back
    assert len(reminders_in(world, world.general)) == 1
    await deliver_at(running, clock, second.due_at)
    assert len(reminders_in(world, world.general)) == 2


async def test_a_reminder_in_an_archived_thread_goes_by_dm(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="thread closed")
    world.dc.inject_error("POST", f"/channels/{world.general}/messages", 400,
                          body={"code": 50083, "message": "Thread is archived"})
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    [posted] = reminders_in(world, world.alice_dm)
    assert posted.content == "⏰ Reminder: thread closed" and reminders_in(world, world.general) == []


async def test_a_send_discord_refuses_as_such_is_dropped_not_retried_forever(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    running = await run_bot(now=clock)
    await set_by_mention(world, fake, world.general, when="2026-12-04T09:00Z", message="refused")
    world.dc.inject_error("POST", f"/channels/{world.general}/messages", 400,
                          body={"code": 50035, "message": "Invalid Form Body"})
    with caplog.at_level(logging.WARNING, logger="bot.discord_app.reminder_sender"):
        await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    assert await running.runtime.reminders.pending(world.alice) == []
    assert reminders_in(world, world.general) == [] and reminders_in(world, world.alice_dm) == []
    assert any("dropped: Discord refused it (400 50035)" in r.getMessage() for r in caplog.records)


async def test_a_reminder_in_a_channel_let_in_by_its_category_is_posted(
        world: World, run_bot, fake: FakeOpenAI, clock: Clock) -> None:
    category = world.dc.add_category(world.guild, "bots")
    channel = world.dc.add_channel(world.guild, "bot-talk", parent_id=category)
    running = await run_bot(now=clock, ALLOWED_CHANNEL_IDS=category)
    await set_by_mention(world, fake, channel, when="2026-12-04T09:00Z", message="water the plants")
    await deliver_at(running, clock, datetime(2026, 12, 4, 9, 0, 1, tzinfo=UTC))
    assert [m.content for m in reminders_in(world, channel)] == [f"<@{world.alice}> ⏰ Reminder: water the plants"]
