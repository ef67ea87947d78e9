"""Fixtures of the Discord end-to-end tests: a FakeDiscord world and the real bot logged into it.

The bot under test is the product's own (``bot.discord_app.create_bot`` over a real ``Runtime``:
real agent, real SQLite file and embedded Chroma under a tmp DATA_DIR), talking to the loopback
FakeDiscord (REST + gateway) and to the loopback FakeOpenAI of ``tests/bot/conftest.py`` (chat
and embeddings). Test modules import the fixtures they use from here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime

import pytest
from discord.ext import commands

from bot.settings.config import load_settings
from bot.discord_app import create_bot
from bot.discord_app.live_reply import LiveOptions
from bot.interfaces import FrontEndServices
from bot.turn.pipeline import TurnPipeline
from bot.process.runtime import Runtime
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord, FakeInteraction, FakeMessage

__all__ = [
    "BotUnderTest",
    "World",
    "answer",
    "answered",
    "final_answers",
    "run_bot",
    "sent_by_bot",
    "shows",
    "shown_for",
    "world",
]

# discord.py waits this long after the last GUILD_CREATE before it calls itself ready (2 s by
# default); the fake sends every guild at once.
GUILD_READY_TIMEOUT_S = 0.05
# Live replies edit once per 1.5 s in production; tests that do not time them need not wait so
# long. A short answer of the fake model streams whole well within this interval, so it is shown
# once, as the final text (tests/bot/test_live_replies.py times the edits themselves).
FAST_LIVE = LiveOptions(edit_interval_s=0.25)


@dataclass
class World:
    """Two guilds, channels, people and a DM, in a running FakeDiscord.

    ``alice`` and ``bob`` are plain members of ``guild`` (alice also of ``other_guild``); ``mod``
    has a role with Manage Messages; ``helper_bot`` is another bot account.
    """

    dc: FakeDiscord
    guild: str
    general: str
    random: str
    other_guild: str
    elsewhere: str
    alice: str
    bob: str
    mod: str
    helper_bot: str
    alice_dm: str
    roles: dict[str, str] = field(default_factory=dict)


@pytest.fixture
async def world() -> AsyncIterator[World]:
    async with FakeDiscord() as dc:
        guild = dc.add_guild("Guild One")
        general = dc.add_channel(guild, "general")
        random = dc.add_channel(guild, "random")
        other_guild = dc.add_guild("Guild Two")
        elsewhere = dc.add_channel(other_guild, "elsewhere")
        moderators = dc.add_role(guild, "moderators", p.MANAGE_MESSAGES)
        announcements = dc.add_role(guild, "announcements", 0, mentionable=True)
        alice = dc.add_member(guild, name="alice")
        dc.add_member(other_guild, alice)
        bob = dc.add_member(guild, name="bob")
        mod = dc.add_member(guild, name="mod", roles=[moderators])
        helper_bot = dc.add_member(guild, name="helperbot", bot=True)
        alice_dm = dc.add_dm_channel(alice)
        with dc.patch_client():
            yield World(dc, guild, general, random, other_guild, elsewhere, alice, bob, mod,
                        helper_bot, alice_dm,
                        roles={"moderators": moderators, "announcements": announcements})


class BotUnderTest:
    """A Runtime and the product's bot on it, logged into the fake; closed by ``stop``."""

    def __init__(self, runtime: Runtime, bot: commands.Bot, task: asyncio.Task[None]) -> None:
        self.runtime = runtime
        self.bot = bot
        self.task = task

    @property
    def pipeline(self) -> TurnPipeline:
        return self.runtime.pipeline

    @property
    def services(self) -> FrontEndServices:
        return self.runtime.services

    async def stop(self) -> None:
        """Let running turns finish, log out, close the stores."""
        await self.runtime.pipeline.tracker.wait_idle(10)
        if not self.bot.is_closed():
            await self.bot.close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self.task, 10)
        await self.runtime.__aexit__(None, None, None)


@pytest.fixture
async def run_bot(world: World, env: dict[str, str]) -> AsyncIterator[Callable[..., Awaitable[BotUnderTest]]]:
    """Start the bot with extra env settings (``live``: timing of live replies; ``now``: the
    budgets' clock); every bot started is stopped at teardown."""
    started: list[BotUnderTest] = []

    async def start(*, live: LiveOptions | None = None, now: Callable[[], datetime] | None = None,
                    **overrides: str) -> BotUnderTest:
        settings = load_settings({
            **env,
            "DISCORD_TOKEN": world.dc.token,
            "DISCORD_API_BASE_URL": world.dc.api_base,
            **overrides,
        })
        runtime = Runtime(settings) if now is None else Runtime(settings, now=now)
        await runtime.__aenter__()
        try:
            bot = create_bot(runtime.services, settings, budget=runtime.budget, live=live or FAST_LIVE,
                             reminders=runtime.reminders,
                             guild_ready_timeout=GUILD_READY_TIMEOUT_S)
        except BaseException:
            await runtime.__aexit__(None, None, None)
            raise
        task = asyncio.create_task(bot.start(settings.discord_token or ""), name="bot-under-test")
        running = BotUnderTest(runtime, bot, task)
        started.append(running)
        ready = asyncio.create_task(bot.wait_until_ready())
        done, _ = await asyncio.wait({ready, task}, timeout=15, return_when=asyncio.FIRST_COMPLETED)
        if ready not in done:
            ready.cancel()
            if task in done:
                task.result()
            raise TimeoutError("the bot did not become ready")
        return running

    yield start
    for running in reversed(started):
        await running.stop()


async def answer(world: World, asked: FakeMessage, *, timeout: float = 15.0) -> FakeMessage:
    """The bot's reply to ``asked`` (its first part, for an answer in several parts)."""
    return await world.dc.wait_for_message(
        asked.channel_id, lambda m: m.author_id == world.dc.bot_id and m.reference_id == asked.id,
        timeout=timeout)


async def answered(world: World, asked: FakeMessage, text: str, *, timeout: float = 15.0) -> FakeMessage:
    """The bot's reply to ``asked`` once it shows ``text``. Its first message may show a preview
    first: when the model writes slowly, or the turn ends slowly, the live reply shows what it
    has after one edit interval (FAST_LIVE: 0.25 s), so `answer` alone may return a part."""
    reply = await answer(world, asked, timeout=timeout)
    await shows(world, reply, text, timeout=timeout)
    return reply


async def shows(world: World, reply: FakeMessage, text: str, *, timeout: float = 15.0) -> None:
    """Wait until ``reply`` shows ``text`` (a live reply's last edit may still be on its way)."""
    try:
        await world.dc.wait_for(lambda: reply.content == text, timeout=timeout)
    except TimeoutError:
        raise AssertionError(f"the reply shows {reply.content!r}, not {text!r}") from None


def sent_by_bot(world: World, channel: str) -> list[FakeMessage]:
    """What our bot (not any other bot account) posted in ``channel``, oldest first."""
    return [m for m in world.dc.bot_messages(channel) if m.author_id == world.dc.bot_id]


def shown_for(world: World, inter: FakeInteraction) -> list[str]:
    """What the messages of an interaction show now: its response, then its followups."""
    messages = [m for m in world.dc.messages.values() if m.interaction_id == inter.id and not m.deleted]
    return [m.content for m in sorted(messages, key=lambda m: int(m.id))]


def final_answers(inter: FakeInteraction) -> list[str]:
    """Every text the bot gave an interaction, in order: a callback's message, edits of the
    original, followups (accepted requests only)."""
    texts: list[str] = []
    for event in inter.events:
        body = event.json if isinstance(event.json, dict) else {}
        if event.kind == "callback":
            body = body.get("data") or {}
        if event.status < 300 and body.get("content") is not None:
            texts.append(str(body["content"]))
    return texts

