"""The client as a whole: one command sync, the operator's access rules, the error funnel."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from bot.settings.config import Settings, load_settings
from bot.discord_app import create_bot
from bot.discord_app.interactions import NOT_ALLOWED
from bot.errors import sentence_for
from bot.process.runtime import Runtime
from memory.semantic import scope_for
from tests.bot.conftest import last_user_text
from tests.bot.discord_fixtures import World, answer, final_answers, sent_by_bot, shows
from tests.fakes.discord_server import FakeInteraction, FakeMessage
from tests.fakes.openai_server import FakeOpenAI

COMMANDS = ["ask", "docs", "memory", "remind", "reset", "settings", "tldr", "trace", "usage"]


# ------------------------------------------------------------------ command sync


async def test_commands_are_synced_once_on_the_dev_guild_route(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    await run_bot(DEV_GUILD_ID=world.guild)
    [sync] = world.dc.command_syncs
    assert sync.guild_id == world.guild and sorted(sync.names) == COMMANDS
    puts = [i for i, r in enumerate(world.dc.requests) if r.method == "PUT"]
    assert puts and world.dc.requests[puts[0]].path.endswith(f"/guilds/{world.guild}/commands")


async def test_without_a_dev_guild_commands_are_synced_once_globally(world: World, run_bot, fake: FakeOpenAI) -> None:
    await run_bot()
    [sync] = world.dc.command_syncs
    assert sync.guild_id is None and sorted(sync.names) == COMMANDS


async def _reconnected(world: World, resumes_before: int) -> None:
    def resumed() -> bool:
        resumes = sum(1 for frame in world.dc.gateway_log if frame.get("op") == 6)
        return resumes > resumes_before and any(s.conn is not None for s in world.dc._sessions.values())
    await world.dc.wait_for(resumed, timeout=20)


async def test_a_reconnect_does_not_sync_again(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: still here"
    await run_bot(DEV_GUILD_ID=world.guild)
    await world.dc.drop_gateway()
    await _reconnected(world, 0)
    world.dc.request_reconnect()
    await _reconnected(world, 1)
    reply = await answer(world, await world.dc.user_says(world.general, world.alice, "there?", mention_bot=True))
    await shows(world, reply, "still here")
    assert len(world.dc.command_syncs) == 1


async def test_a_new_session_after_an_invalidated_one_does_not_sync_again(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    # A fresh IDENTIFY means READY (and on_ready) again: commands must not be synced there.
    fake.default_content = "Final Answer: still here"
    await run_bot()
    world.dc.invalidate_sessions()
    await world.dc.wait_for(lambda: len(world.dc.identifies) == 2, timeout=20)
    await world.dc.wait_until_connected()
    reply = await answer(world, await world.dc.user_says(world.general, world.alice, "there?", mention_bot=True))
    await shows(world, reply, "still here")
    assert len(world.dc.command_syncs) == 1


# ------------------------------------------------------------------ access rules


async def _silenced(world: World, fake: FakeOpenAI, ignored: FakeMessage, channel: str, user: str) -> None:
    """``ignored`` got no answer: a later allowed message is answered, ``ignored`` never was."""
    served = await answer(world, await world.dc.user_says(channel, user, "allowed question", mention_bot=True))
    await shows(world, served, "fine")
    assert not [m for m in world.dc.bot_messages() if m.reference_id == ignored.id]
    assert ignored.content.split("> ", 1)[-1] not in [last_user_text(r) for r in fake.requests]


async def _refused(world: World, inter: FakeInteraction) -> None:
    await world.dc.wait_for(lambda: final_answers(inter))
    assert final_answers(inter) == [NOT_ALLOWED]
    assert inter.callback is not None and inter.callback.ephemeral


async def test_a_blocked_user_gets_silence_on_mentions_and_a_refusal_on_commands(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: fine"
    await run_bot(BLOCKED_USER_IDS=world.bob)
    ignored = await world.dc.user_says(world.general, world.bob, "blocked question", mention_bot=True)
    await _silenced(world, fake, ignored, world.general, world.alice)
    for name, sub, options in (("ask", None, {"question": "blocked"}), ("trace", None, None), ("reset", None, None)):
        await _refused(world, await world.dc.invoke_command(world.general, world.bob, name, options,
                                                            subcommand=sub))
    assert [last_user_text(r) for r in fake.requests] == ["allowed question"]


async def test_a_blocked_user_can_still_see_and_erase_what_the_bot_keeps_of_them(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot(BLOCKED_USER_IDS=world.bob)
    await running.runtime.user_memory.add(world.bob, "Bob: my bike is blue", {"kind": "exchange"},
                                          scope=scope_for(world.guild))  # said before the block
    shown = await world.dc.invoke_command(world.general, world.bob, "memory", subcommand="show")
    await world.dc.wait_for(lambda: final_answers(shown))
    assert "my bike is blue" in final_answers(shown)[-1]
    asked = await world.dc.invoke_command(world.general, world.bob, "memory", subcommand="forget")
    await world.dc.wait_for_response(asked, "callback")
    prompt = world.dc.messages[asked.original_message_id]
    confirm, _cancel = prompt.custom_ids()
    await world.dc.wait_for_response(await world.dc.click_button(prompt.id, confirm, world.bob), "original_edit")
    assert prompt.content.startswith("Done: I forgot 1 memory item(s)")
    assert await running.runtime.user_memory.list(world.bob) == []
    assert fake.requests == []  # and nothing was asked of the model


async def test_channels_outside_the_allowed_list_get_silence_and_refusals(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: fine"
    await run_bot(ALLOWED_CHANNEL_IDS=world.general)
    ignored = await world.dc.user_says(world.random, world.alice, "wrong channel", mention_bot=True)
    await _silenced(world, fake, ignored, world.general, world.alice)
    await _refused(world, await world.dc.invoke_command(world.random, world.alice, "ask", {"question": "x"}))


async def test_an_allowed_category_admits_its_channels(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: fine"
    category = world.dc.add_category(world.guild, "bots")
    inside = world.dc.add_channel(world.guild, "bot-chat", parent_id=category)
    await run_bot(ALLOWED_CHANNEL_IDS=category)
    ignored = await world.dc.user_says(world.general, world.alice, "outside the category", mention_bot=True)
    await _silenced(world, fake, ignored, inside, world.alice)


async def test_a_thread_under_an_allowed_channel_is_served(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.replies("Final Answer: 42", "Final Answer: in the thread")
    await run_bot(ALLOWED_CHANNEL_IDS=world.general)
    inter = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "q", "trace": True})
    thread = await world.dc.wait_for(lambda: next((t["id"] for t in world.dc.threads), None))
    await world.dc.wait_for(lambda: any(m.content.startswith("**Summary**") for m in world.dc.messages_in(thread)))
    asked = await world.dc.user_says(thread, world.alice, "a question in the thread", mention_bot=True)
    reply = await answer(world, asked)
    assert reply.channel_id == thread == inter.original_message_id
    await shows(world, reply, "in the thread")


async def test_only_members_with_an_allowed_role_are_served(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: fine"
    await run_bot(ALLOWED_ROLE_IDS=world.roles["moderators"])
    ignored = await world.dc.user_says(world.general, world.alice, "no role", mention_bot=True)
    await _silenced(world, fake, ignored, world.general, world.mod)
    await _refused(world, await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "x"}))


async def test_other_guilds_and_dms_can_be_shut_out(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: fine"
    await run_bot(ALLOWED_GUILD_IDS=world.guild, ALLOW_DMS="false")
    in_dm = await world.dc.user_says(world.alice_dm, world.alice, "in a DM")
    elsewhere = await world.dc.user_says(world.elsewhere, world.alice, "in another guild", mention_bot=True)
    await _silenced(world, fake, in_dm, world.general, world.alice)
    assert not [m for m in world.dc.bot_messages() if m.reference_id == elsewhere.id]
    await _refused(world, await world.dc.invoke_command(world.elsewhere, world.alice, "ask", {"question": "x"}))
    await _refused(world, await world.dc.invoke_command(world.alice_dm, world.alice, "ask", {"question": "x"}))


# ------------------------------------------------------------------ the error funnel


async def test_a_discord_error_while_answering_still_leaves_the_person_a_message(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: 42")
    await run_bot()
    # every edit of the response fails, the preview's too: a preview may or may not go out
    # before the answer is final (a slow end of the turn shows it first; CI drew that)
    world.dc.inject_error("PATCH", "/webhooks/*/messages/@original", 403, times=1000,
                          body={"code": 50001, "message": "Missing Access"})
    inter = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "q"})
    followup = await world.dc.wait_for_response(inter, "followup")
    assert inter.acknowledged and followup.json["content"] == sentence_for("internal")
    assert world.dc.messages[inter.original_message_id].content == sentence_for("internal")


async def test_a_failed_acknowledgement_is_retried_with_the_error_sentence(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    await run_bot()
    world.dc.inject_error("POST", "/interactions/*/callback", 403, body={"code": 50001, "message": "Missing Access"})
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="show")
    callback = await world.dc.wait_for_response(inter, "callback")
    assert callback.json["data"]["content"] == sentence_for("internal")


async def test_an_ask_acknowledged_after_discords_deadline_is_one_warning_line_and_no_turn(
        world: World, run_bot, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    await run_bot()
    world.dc.interaction_deadline_s = 0.0  # every acknowledgement arrives too late (a busy bot)
    with caplog.at_level(logging.WARNING):
        inter = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "q"})
        await world.dc.wait_for(lambda: any("no longer knows the interaction" in r.getMessage()
                                            for r in caplog.records))
    [refused] = world.dc.interaction_responses(inter.id)
    assert refused.status == 404 and not inter.acknowledged  # nothing more was tried on it
    [line] = [r for r in caplog.records if r.name == "bot.discord_app.client"]
    assert line.levelno == logging.WARNING and line.exc_info is None and world.alice in line.getMessage()
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert fake.requests == []  # no turn was run for a question nobody can be answered on


async def test_a_store_failure_inside_a_command_is_answered(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await running.runtime.user_memory.close()
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="show")
    await world.dc.wait_for(lambda: final_answers(inter))
    assert inter.acknowledged
    assert final_answers(inter) == [sentence_for("memory_unavailable")]
    assert world.dc.messages[inter.original_message_id].content == sentence_for("memory_unavailable")


async def test_a_store_failure_on_a_mention_is_one_sentence(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await running.runtime.user_memory.close()
    reply = await answer(world, await world.dc.user_says(world.general, world.alice, "hi", mention_bot=True))
    assert reply.content == sentence_for("memory_unavailable")
    assert sent_by_bot(world, world.general) == [reply]


# ------------------------------------------------------------------ shards


async def test_shard_settings_run_the_named_shard_and_serve_its_guilds(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: from my shard"
    shard = (int(world.guild) >> 22) % 2
    running = await run_bot(SHARD_COUNT="2", SHARD_IDS=str(shard))
    assert [identify["shard"] for identify in world.dc.identifies] == [[shard, 2]]
    assert running.bot.shard_ids == [shard]
    reply = await answer(world, await world.dc.user_says(world.general, world.alice, "hi", mention_bot=True))
    await shows(world, reply, "from my shard")


# ------------------------------------------------------------------ closing


async def test_closing_before_ready_leaves_no_task_to_fail_after_the_close(
        world: World, env: dict[str, str]) -> None:
    failures: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: failures.append(context))
    settings = load_settings({**env, "DISCORD_TOKEN": world.dc.token, "DISCORD_API_BASE_URL": world.dc.api_base})
    try:
        await _serve_and_close_before_ready(world, settings)
    finally:
        loop.set_exception_handler(before)

    assert [str(f.get("exception") or f.get("message")) for f in failures] == []


async def _serve_and_close_before_ready(world: World, settings: Settings) -> None:
    async with Runtime(settings) as runtime:
        bot = create_bot(runtime.services, settings, guild_ready_timeout=0.5)
        connected = asyncio.Event()

        async def on_connect() -> None:  # dispatched when READY is read
            connected.set()

        bot.add_listener(on_connect)
        serving = asyncio.create_task(bot.start(world.dc.token))
        await asyncio.wait_for(connected.wait(), timeout=10)
        assert not bot.is_ready()  # `ready` is still 0.5 s away

        await bot.close()
        await asyncio.gather(serving, return_exceptions=True)  # its reconnect may meet the closed session
        await asyncio.sleep(1.0)  # past the moment `ready` would have been dispatched
        gc.collect()
