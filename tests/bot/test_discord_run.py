"""`run_discord(settings)`, what `python -m bot run` calls: serve, stop cleanly, and say what is
wrong in one line when Discord refuses the token or the intents."""

from __future__ import annotations

import asyncio

import pytest
import yarl
from discord.gateway import DiscordWebSocket

from bot.settings.config import load_settings
from bot.discord_app import run_discord
from bot.errors import ConfigError
from tests.bot.discord_fixtures import World, answer, shows
from tests.fakes.openai_server import FakeOpenAI


def _settings(world: World, env: dict[str, str], **overrides: str):
    return load_settings({**env, "DISCORD_TOKEN": world.dc.token,
                          "DISCORD_API_BASE_URL": world.dc.api_base, **overrides})


def _connected(world: World) -> bool:
    return any(s.conn is not None for s in world.dc._sessions.values())


async def test_run_discord_serves_until_cancelled_then_logs_out(world: World, env: dict[str, str],
                                                                 fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: served")
    task = asyncio.create_task(run_discord(_settings(world, env)))
    await world.dc.wait_until_connected()
    reply = await answer(world, await world.dc.user_says(world.general, world.alice, "hi", mention_bot=True))
    await shows(world, reply, "served")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await world.dc.wait_for(lambda: not _connected(world))


async def test_a_token_discord_refuses_is_one_config_error(world: World, env: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="DISCORD_TOKEN was not accepted"):
        await asyncio.wait_for(run_discord(_settings(world, env, DISCORD_TOKEN="not-the-token")), 20)


async def test_a_refused_message_content_intent_names_the_setting(world: World, env: dict[str, str]) -> None:
    world.dc.privileged_intents = 0  # the portal switch for message content is off
    with pytest.raises(ConfigError, match="BUFFER_ALL_MESSAGES"):
        await asyncio.wait_for(run_discord(_settings(world, env, BUFFER_ALL_MESSAGES="true")), 20)


async def test_run_discord_without_a_token_is_a_config_error(world: World, env: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="DISCORD_TOKEN is not set"):
        await run_discord(load_settings(env))


async def test_the_gateway_is_asked_from_the_configured_api(world: World, env: dict[str, str],
                                                            fake: FakeOpenAI,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Only DISCORD_API_BASE_URL points at the fake: the gateway must come from its /gateway/bot.
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL("wss://gateway.invalid/"))
    task = asyncio.create_task(run_discord(_settings(world, env)))
    try:
        await world.dc.wait_until_connected()
        assert [r.path for r in world.dc.requests if r.path == "/gateway/bot"] == ["/gateway/bot"]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
