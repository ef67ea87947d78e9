"""`/settings`, free-response channels, auto-thread and the bot's managed role, end to end:
the product's bot on a real Runtime against the loopback FakeDiscord and FakeOpenAI."""

from __future__ import annotations

from typing import Any

import discord

from bot.discord_app import create_bot
from bot.discord_app.cogs.mentions import NO_CONTENT_INTENT
from bot.discord_app.cogs.settings import NOT_PERMITTED
from bot.discord_app.interactions import NOT_THIS_SERVERS_CHANNEL
from bot.process.runtime import Runtime
from tests.bot.conftest import last_user_text, system_text
from tests.bot.discord_fixtures import World, answer, answered, final_answers, sent_by_bot, shows
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeInteraction
from tests.fakes.openai_server import FakeOpenAI

MODELS = '[{"name": "big-model"}]'


def _echo(request: dict[str, Any]) -> str:
    return f"Final Answer: re: {last_user_text(request)}"


def _admin(world: World) -> str:
    admins = world.dc.add_role(world.guild, "admins", p.MANAGE_GUILD)
    return world.dc.add_member(world.guild, name="admin", roles=[admins])


async def _settings(world: World, user: str, subcommand: str, where: str | None = None,
                    **options: Any) -> FakeInteraction:
    """``user`` runs /settings <subcommand> in ``where`` (default #general) with ``options``."""
    return await world.dc.invoke_command(where or world.general, user, "settings", options,
                                         subcommand=subcommand)


async def _told(world: World, inter: FakeInteraction) -> str:
    """The one ephemeral sentence the bot answered a settings command with."""
    await world.dc.wait_for(lambda: final_answers(inter))
    assert inter.callback is not None and inter.callback.ephemeral
    return final_answers(inter)[-1]


async def _ask(world: World, channel: str, text: str) -> str:
    return (await answer(world, await world.dc.user_says(channel, world.alice, text, mention_bot=True))).content


# ------------------------------------------------------------------ /settings


async def test_an_admins_settings_apply_on_the_next_turn_and_after_a_restart(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.responder = _echo
    admin = _admin(world)
    first = await run_bot(LLM_MODELS=MODELS)
    opened = await _settings(world, admin, "persona")
    await world.dc.wait_for_response(opened, "callback")
    modal = opened.callback.json["data"]  # type: ignore[union-attr]
    [text_input] = modal["components"][0]["components"]
    assert text_input["max_length"] == 4000
    submitted = await world.dc.submit_modal(opened, {text_input["custom_id"]: "You are Captain Hook, a pirate."})
    assert (await _told(world, submitted)).startswith("Persona for this server saved (31 characters)")
    assert "now big-model for <#" in await _told(
        world, await _settings(world, admin, "set", key="model", value="big-model", channel=world.general))
    assert await _told(world, await _settings(world, admin, "tool", name="weather", enabled=False)) == (
        "Tool weather is now off for this server.")

    await _ask(world, world.general, "who are you?")
    request = fake.requests[-1]
    assert "Captain Hook" in system_text(request) and request["model"] == "big-model"
    assert "calculator" in system_text(request) and "weather" not in system_text(request)
    await _ask(world, world.random, "and here?")
    assert fake.requests[-1]["model"] == "fake-model"  # the model was set for #general only
    assert "Captain Hook" in system_text(fake.requests[-1])

    await first.stop()
    await run_bot(LLM_MODELS=MODELS)
    await _ask(world, world.general, "still a pirate?")
    assert "Captain Hook" in system_text(fake.requests[-1]) and fake.requests[-1]["model"] == "big-model"
    view = await _told(world, await _settings(world, admin, "view"))
    assert "- model (channel): big-model" in view and "- tools off: weather" in view
    assert "http" not in view and "KEY" not in view  # never where models are served, nor keys

    assert "(2 value(s) removed)" in await _told(world, await _settings(world, admin, "reset"))  # persona, weather
    await _ask(world, world.random, "back to normal?")
    assert "Captain Hook" not in system_text(fake.requests[-1])


async def test_a_member_without_manage_server_is_refused_and_an_operator_admin_is_not(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.responder = _echo
    running = await run_bot(ADMIN_USER_IDS=world.bob)
    refused = await _settings(world, world.alice, "set", key="cooldown", value="60")
    assert await _told(world, refused) == NOT_PERMITTED
    assert running.runtime.places.rows(world.guild) == []
    allowed = await _settings(world, world.bob, "set", key="auto_thread", value="on")
    assert await _told(world, allowed) == "auto-thread is now on for this server."
    [row] = running.runtime.places.rows(world.guild)
    assert (row.key, row.value, row.updated_by) == ("auto_thread", True, world.bob)


async def test_another_servers_settings_are_out_of_reach(world: World, run_bot, fake: FakeOpenAI) -> None:
    owner = world.dc.guilds[world.other_guild].owner_id
    running = await run_bot()
    await _told(world, await _settings(world, owner, "set", world.elsewhere, key="cooldown", value="9"))
    admin = _admin(world)
    across = await _settings(world, admin, "set", key="cooldown", value="1", channel=world.elsewhere)
    assert await _told(world, across) == NOT_THIS_SERVERS_CHANNEL
    peek = await _settings(world, admin, "view", channel=world.elsewhere)
    assert await _told(world, peek) == NOT_THIS_SERVERS_CHANNEL
    assert running.runtime.places.rows(world.guild) == []
    [theirs] = running.runtime.places.rows(world.other_guild)
    assert (theirs.key, theirs.value) == ("cooldown", 9.0)


async def test_invalid_values_get_a_clear_ephemeral_sentence(world: World, run_bot) -> None:
    admin = _admin(world)
    running = await run_bot()
    told = [await _told(world, await _settings(world, admin, "set", key=key, value=value))
            for key, value in (("cooldown", "soon"), ("model", "gpt-9"), ("memory", "global"))]
    assert told == ["Cooldown must be a number of seconds (0 to 3600).",
                    "Unknown model 'gpt-9'. Choose one of: fake-model.",
                    "The operator keeps memories per server, so `global` is not available; use `server` or `off`."]
    unknown = await _told(world, await _settings(world, admin, "tool", name="rm_rf", enabled=True))
    assert unknown.startswith("Unknown tool 'rm_rf'. Tools: calculator")
    assert running.runtime.places.rows(world.guild) == []


# ------------------------------------------------------------------ free response, threads, role


async def test_a_free_response_channel_answers_every_message_without_a_mention(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.responder = _echo
    running = await run_bot(MESSAGE_CONTENT_INTENT="true")
    await running.runtime.places.set_value(world.guild, world.general, "free_response", "on", world.alice)
    asked = await world.dc.user_says(world.general, world.bob, "what is the capital of Peru?")
    await answered(world, asked, "re: what is the capital of Peru?")
    await world.dc.user_says(world.random, world.bob, "no mention in another channel")
    await answer(world, await world.dc.user_says(world.random, world.bob, "but this one", mention_bot=True))
    assert [m.content for m in sent_by_bot(world, world.random)] == ["re: but this one"]


async def test_without_the_content_intent_a_free_response_channel_says_so_once(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.responder = _echo
    running = await run_bot()
    await running.runtime.places.set_value(world.guild, world.general, "free_response", "on", world.alice)
    for text in ("one", "two", "three"):
        await world.dc.user_says(world.general, world.bob, text)
    await answer(world, await world.dc.user_says(world.general, world.bob, "mentioned", mention_bot=True))
    assert [m.content for m in sent_by_bot(world, world.general)] == [NO_CONTENT_INTENT, "re: mentioned"]
    assert len(fake.requests) == 1


async def test_auto_thread_answers_a_mention_in_a_thread_of_its_own_and_follow_ups_need_no_mention(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.responder = _echo
    running = await run_bot()
    await running.runtime.places.set_value(world.guild, None, "auto_thread", "on", world.alice)
    asked = await world.dc.user_says(world.general, world.alice, "how do I bake bread?", mention_bot=True)
    thread_id = asked.id  # a thread started from a message shares its id
    first = await world.dc.wait_for_message(thread_id, lambda m: m.author_id == world.dc.bot_id)
    [thread] = world.dc.threads
    assert thread["name"] == "how do I bake bread?" and thread["type"] == p.PUBLIC_THREAD
    await shows(world, first, "re: how do I bake bread?")
    assert sent_by_bot(world, world.general) == []

    follow = await world.dc.user_says(thread_id, world.alice, f"<@{world.dc.bot_id}> and rye?")
    await world.dc.wait_for(lambda: len(sent_by_bot(world, thread_id)) == 2)
    history = [m["content"] for m in fake.requests[-1]["messages"][1:]]
    assert history == ["how do I bake bread?", "re: how do I bake bread?", "and rye?"]
    assert follow.id and await running.runtime.buffer.recent(world.general) == []  # the thread's own buffer


async def test_auto_thread_answers_ask_in_a_public_thread(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.responder = _echo
    running = await run_bot()
    await running.runtime.places.set_value(world.guild, world.general, "auto_thread", "on", world.alice)
    inter = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "why is the sky blue?"})
    await world.dc.wait_for(lambda: any(t.startswith("Answered in") for t in final_answers(inter)))
    [thread] = world.dc.threads
    assert thread["name"] == "why is the sky blue?" and thread["type"] == p.PUBLIC_THREAD
    assert final_answers(inter)[-1] == f"Answered in <#{thread['id']}>."
    assert [m.content for m in sent_by_bot(world, thread["id"])] == ["re: why is the sky blue?"]


async def test_a_mention_of_the_bots_managed_role_is_a_mention_of_the_bot(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.responder = _echo
    await run_bot(MESSAGE_CONTENT_INTENT="true")
    role = world.dc.bot_role_of(world.guild)
    asked = await world.dc.user_says(world.general, world.alice, f"<@&{role}> what time is it?")
    await answered(world, asked, "re: what time is it?")


# ------------------------------------------------------------------ DISCORD_API_BASE_URL


async def test_discord_api_base_url_unset_leaves_the_librarys_route_base_alone(
        runtime: Runtime) -> None:
    before = discord.http.Route.BASE
    bot = create_bot(runtime.services, runtime.settings)
    try:
        assert runtime.settings.discord_api_base_url is None
        assert discord.http.Route.BASE == before == "https://discord.com/api/v10"
    finally:
        await bot.close()
