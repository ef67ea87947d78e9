"""FakeDiscord works with the real discord.py client: login, gateway, messages, interactions."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import discord
import pytest
from discord import app_commands
from discord.ext import commands

from tests.fakes import discord_payloads as p
from tests.fakes.discord_ratelimit import RateLimiter
from tests.fakes.discord_server import FakeDiscord, FakeMessage


@dataclass
class World:
    fake: FakeDiscord
    guild_id: str
    channel_id: str
    alice: str


@pytest.fixture
async def world() -> AsyncIterator[World]:
    async with FakeDiscord() as fake:
        gid = fake.add_guild("Test Guild")
        cid = fake.add_channel(gid, "general")
        alice = fake.add_member(gid, name="alice")
        with fake.patch_client():
            yield World(fake, gid, cid, alice)


class MiniBot(commands.Bot):
    """A tiny bot written for these tests: a /ask command synced in setup_hook, hooks per test."""

    def __init__(self, *, sync_guild: str | None = None, message_content: bool = True,
                 members: bool = False, allowed_mentions: discord.AllowedMentions | None = None) -> None:
        intents = discord.Intents.default()
        intents.message_content = message_content
        intents.members = members
        super().__init__(command_prefix="!", intents=intents, guild_ready_timeout=0.05,
                         allowed_mentions=allowed_mentions)
        self.sync_guild = sync_guild
        self.extra_commands: list[app_commands.Command[Any, ..., Any] | app_commands.Group] = []
        self.on_mention: Callable[[discord.Message], Awaitable[None]] | None = None
        self.on_ask: Callable[[discord.Interaction, str], Awaitable[None]] | None = None
        self.seen: list[discord.Message] = []
        self.errors: list[BaseException] = []

    async def setup_hook(self) -> None:
        @app_commands.command(name="ask", description="Ask the bot")
        @app_commands.describe(question="What to ask")
        async def ask(interaction: discord.Interaction, question: str, private: bool = False) -> None:
            try:
                assert self.on_ask is not None
                await self.on_ask(interaction, question)
            except Exception as exc:
                self.errors.append(exc)
                raise

        guild = discord.Object(int(self.sync_guild)) if self.sync_guild else None
        for command in [ask, *self.extra_commands]:
            self.tree.add_command(command, guild=guild)
        await self.tree.sync(guild=guild)

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        # discord.py waits 5 s before every identify but the first; the fake has no such limit.
        return None

    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot:
            return
        self.seen.append(message)
        if self.user in message.mentions and self.on_mention is not None:
            try:
                await self.on_mention(message)
            except Exception as exc:
                self.errors.append(exc)


@contextlib.asynccontextmanager
async def running(bot: commands.Bot, token: str) -> AsyncIterator[commands.Bot]:
    task = asyncio.create_task(bot.start(token))
    try:
        ready = asyncio.create_task(bot.wait_until_ready())
        done, _ = await asyncio.wait({ready, task}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            ready.cancel()
            task.result()
        assert ready in done, "bot did not become ready"
        yield bot
    finally:
        await bot.close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)


# ------------------------------------------------------------------ login and gateway


async def test_bot_logs_in_and_caches_the_guild_with_channels_and_members(world: World) -> None:
    bot = MiniBot(members=True)
    async with running(bot, world.fake.token):
        guild = bot.get_guild(int(world.guild_id))
        assert guild is not None and guild.name == "Test Guild"
        assert guild.get_channel(int(world.channel_id)).name == "general"
        assert guild.get_member(int(world.alice)).name == "alice"
        assert bot.user.id == int(world.fake.bot_id)
        assert bot.application_id == int(world.fake.application_id)
    assert world.fake.identifies[0]["token"] == world.fake.token


async def test_wrong_token_raises_login_failure(world: World) -> None:
    bot = MiniBot()
    with pytest.raises(discord.LoginFailure):
        await bot.login("not-the-token")
    await bot.close()
    assert world.fake.requests[-1].status == 401


@pytest.mark.parametrize("compression", ["auto", "none"])
async def test_gateway_frames_work_compressed_and_plain(compression: str) -> None:
    async with FakeDiscord(compression=compression) as fake:
        gid = fake.add_guild("G")
        cid = fake.add_channel(gid, "c")
        alice = fake.add_member(gid, name="alice")
        with fake.patch_client():
            bot = MiniBot()
            async with running(bot, fake.token):
                await fake.user_says(cid, alice, "hello")
                await fake.wait_for(lambda: bot.seen)
                assert bot.seen[0].content == "hello"


async def test_zlib_stream_gateway_frames_decompress_to_hello() -> None:
    import zlib

    import aiohttp

    async with FakeDiscord() as fake, aiohttp.ClientSession() as session:
        async with session.ws_connect(f"{fake.gateway_url}?v=10&encoding=json&compress=zlib-stream") as ws:
            frame = await ws.receive_bytes(timeout=5)
    assert frame.endswith(b"\x00\x00\xff\xff")
    assert '"op": 10' in zlib.decompressobj().decompress(frame).decode()


async def test_dropped_gateway_resumes_and_replays_missed_events(world: World) -> None:
    bot = MiniBot()
    async with running(bot, world.fake.token):
        await world.fake.drop_gateway()
        await world.fake.user_says(world.channel_id, world.alice, "said while disconnected")
        await world.fake.wait_for(lambda: [m for m in bot.seen if m.content == "said while disconnected"])
        assert any(frame.get("op") == 6 for frame in world.fake.gateway_log)
        assert len(world.fake.identifies) == 1


async def test_without_message_content_intent_only_mentions_carry_content(world: World) -> None:
    bot = MiniBot(message_content=False)
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "chatter")
        await world.fake.user_says(world.channel_id, world.alice, "question", mention_bot=True)
        await world.fake.wait_for(lambda: len(bot.seen) == 2)
        assert bot.seen[0].content == ""
        assert bot.seen[1].content == f"<@{world.fake.bot_id}> question"


async def test_privileged_intent_not_enabled_closes_with_4014() -> None:
    async with FakeDiscord(privileged_intents=0) as fake:
        fake.add_guild("G")
        with fake.patch_client():
            bot = MiniBot(message_content=True)
            with pytest.raises(discord.PrivilegedIntentsRequired):
                await asyncio.wait_for(bot.start(fake.token), 10)
            await bot.close()


# ------------------------------------------------------------------ messages and pings


async def test_mention_reply_with_allowed_mentions_none_pings_nobody(world: World) -> None:
    bot = MiniBot(allowed_mentions=discord.AllowedMentions.none())

    async def reply(message: discord.Message) -> None:
        async with message.channel.typing():
            await message.reply(f"@everyone look, <@{world.alice}>!")

    bot.on_mention = reply
    async with running(bot, world.fake.token):
        asked = await world.fake.user_says(world.channel_id, world.alice, "hi", mention_bot=True)
        answer = await world.fake.wait_for_message(world.channel_id)
    assert answer.reference_id == asked.id
    assert "@everyone" in answer.content
    assert answer.pings.nobody and answer.pings.replied_user is None
    assert world.fake.typing_events[0].channel_id == world.channel_id


async def test_reply_without_allowed_mentions_pings_everyone_and_the_asker(world: World) -> None:
    bot = MiniBot()
    bot.on_mention = lambda message: message.reply("@everyone hello")
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "hi", mention_bot=True)
        answer = await world.fake.wait_for_message(world.channel_id)
    assert answer.pings.everyone
    assert answer.pings.users == {world.alice}
    assert answer.pings.replied_user == world.alice


async def test_bot_reads_an_attachment_served_by_the_fake(world: World) -> None:
    bot = MiniBot()

    async def echo_file(message: discord.Message) -> None:
        data = await message.attachments[0].read()
        await message.channel.send(f"{message.attachments[0].filename}: {data.decode()}")

    bot.on_mention = echo_file
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "read this", mention_bot=True,
                                   attachments=[("notes.txt", b"remember the milk")])
        answer = await world.fake.wait_for_message(world.channel_id)
    assert answer.content == "notes.txt: remember the milk"


async def test_bot_uploads_a_file_and_the_fake_keeps_its_bytes(world: World) -> None:
    bot = MiniBot()
    bot.on_mention = lambda message: message.channel.send(
        "export", file=discord.File(io.BytesIO(b'{"items": []}'), filename="memory.json"))
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "export", mention_bot=True)
        answer = await world.fake.wait_for_message(world.channel_id)
    assert answer.attachments[0]["filename"] == "memory.json"
    assert world.fake.attachment_bytes(answer.id) == b'{"items": []}'
    assert world.fake.requests[-1].files == [("memory.json", b'{"items": []}')]


async def test_message_over_2000_characters_is_rejected_like_discord(world: World) -> None:
    bot = MiniBot()
    bot.on_mention = lambda message: message.channel.send("x" * 2001)
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "long", mention_bot=True)
        await world.fake.wait_for(lambda: bot.errors)
    error = bot.errors[0]
    assert isinstance(error, discord.HTTPException) and (error.status, error.code) == (400, 50035)
    assert error.text == "Invalid Form Body\nIn content: Must be 2000 or fewer in length."
    assert world.fake.bot_messages() == []


async def test_thread_from_an_answer_gets_posts(world: World) -> None:
    bot = MiniBot()

    async def answer_with_thread(message: discord.Message) -> None:
        answer = await message.channel.send("the answer")
        thread = await answer.create_thread(name="trace")
        await thread.send("step 1: calculator")

    bot.on_mention = answer_with_thread
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "trace it", mention_bot=True)
        answer = await world.fake.wait_for_message(world.channel_id)
        step = await world.fake.wait_for_message(answer.id)
        await world.fake.wait_for(lambda: bot.get_channel(int(answer.id)))
        assert isinstance(bot.get_channel(int(answer.id)), discord.Thread)
    thread = world.fake.threads[0]
    assert thread["id"] == answer.id and thread["parent_id"] == world.channel_id
    assert thread["type"] == p.PUBLIC_THREAD
    assert step.content == "step 1: calculator"


async def test_rate_limited_route_is_retried_by_the_client(world: World) -> None:
    world.fake.rate_limit_once("POST", "/channels/*/messages", retry_after=0.05)
    bot = MiniBot()
    bot.on_mention = lambda message: message.channel.send("after a 429")
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "go", mention_bot=True)
        answer = await world.fake.wait_for_message(world.channel_id)
    posts = [r.status for r in world.fake.requests if r.method == "POST" and r.path.endswith("/messages")]
    assert posts == [429, 200]
    assert answer.content == "after a 429"


async def test_a_full_bucket_makes_the_client_wait_for_its_reset(world: World) -> None:
    # 2 sends per 1 s window: the client reads X-RateLimit-Remaining 0 and holds the third
    world.fake.rate_limits = RateLimiter(limit=2, window_s=1.0)
    bot = MiniBot()

    async def three(message: discord.Message) -> None:
        for n in range(3):
            await message.channel.send(f"part {n}")

    bot.on_mention = three
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "go", mention_bot=True)
        parts = [await world.fake.wait_for_message(world.channel_id) for _ in range(3)]
    assert [m.content for m in parts] == ["part 0", "part 1", "part 2"]
    assert parts[2].created_at - parts[0].created_at >= 0.9
    assert world.fake.rate_limits.overruns == 0 and world.fake.rate_limits.records == []


async def test_a_random_429_is_retried_once_after_its_retry_after(world: World) -> None:
    world.fake.rate_limits = RateLimiter(inject_rate=1.0, retry_after_s=(0.3, 0.3))
    bot = MiniBot()
    bot.on_mention = lambda message: message.channel.send("after a 429")
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "go", mention_bot=True)
        await world.fake.wait_for(lambda: len(world.fake.rate_limits.records) >= 2)
        world.fake.rate_limits.inject_rate = 0.0
        answer = await world.fake.wait_for_message(world.channel_id)
    limits = world.fake.rate_limits
    assert answer.content == "after a 429"
    assert all(r.retried_at is not None and r.retried_at - r.at >= 0.3 for r in limits.records)
    assert (limits.early_retries, limits.never_retried, limits.overruns) == (0, 0, 0)


async def test_heartbeats_are_recorded_against_the_hello(world: World) -> None:
    world.fake.heartbeat_interval_ms = 200
    bot = MiniBot()
    async with running(bot, world.fake.token):
        await world.fake.wait_for(lambda: sum(not h.hello for h in world.fake.heartbeats) >= 3)
    hello, first, second, third = world.fake.heartbeats[:4]
    assert hello.hello and not first.hello and first.conn == hello.conn
    # discord.py beats once on HELLO, then every interval from its own thread (only lower bounds:
    # a loaded machine makes any beat later, never earlier)
    assert hello.at <= first.at and 0.15 <= second.at - first.at and 0.15 <= third.at - second.at


async def test_unknown_route_answers_404_and_is_recorded(world: World) -> None:
    bot = MiniBot()
    bot.on_mention = lambda message: message.pin()
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "pin me", mention_bot=True)
        await world.fake.wait_for(lambda: bot.errors)
    assert isinstance(bot.errors[0], discord.NotFound)
    assert [r.method for r in world.fake.unknown_requests] == ["PUT"]


async def test_dm_message_is_answered_in_the_dm(world: World) -> None:
    dm = world.fake.add_dm_channel(world.alice)
    bot = MiniBot()
    bot.on_mention = lambda message: message.channel.send("private hello")
    async with running(bot, world.fake.token):
        await world.fake.user_says(dm, world.alice, "hello", mention_bot=True)
        answer = await world.fake.wait_for_message(dm)
        bot_dm = await (await bot.fetch_user(int(world.alice))).create_dm()
    assert answer.guild_id is None and answer.content == "private hello"
    assert bot_dm.id == int(dm)


# ------------------------------------------------------------------ slash commands and components


async def test_slash_command_in_a_dm_has_a_user_and_no_guild(world: World) -> None:
    dm = world.fake.add_dm_channel(world.alice)
    bot = MiniBot()
    seen: list[tuple[Any, type, type]] = []

    async def ask(interaction: discord.Interaction, question: str) -> None:
        seen.append((interaction.guild, type(interaction.user), type(interaction.channel)))
        await interaction.response.send_message("hi in private")

    bot.on_ask = ask
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(dm, world.alice, "ask", {"question": "q"})
        event = await world.fake.wait_for_response(inter, "callback")
    assert seen == [(None, discord.User, discord.DMChannel)]
    assert world.fake.messages[event.message_id].channel_id == dm


async def test_commands_synced_once_in_setup_hook_to_the_dev_guild(world: World) -> None:
    bot = MiniBot(sync_guild=world.guild_id)
    async with running(bot, world.fake.token):
        pass
    assert len(world.fake.command_syncs) == 1
    sync = world.fake.command_syncs[0]
    assert sync.guild_id == world.guild_id and sync.names == ["ask"]
    assert [o["name"] for o in sync.commands[0]["options"]] == ["question", "private"]


async def test_interaction_defer_followup_and_edit_original(world: World) -> None:
    bot = MiniBot()

    async def ask(interaction: discord.Interaction, question: str) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.followup.send("calling calculator...")
        await interaction.edit_original_response(content=f"answer to {question}: 42")
        await interaction.followup.send("just for you", ephemeral=True)

    bot.on_ask = ask
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "ask", {"question": "life"})
        await world.fake.wait_for_response(inter, "followup", count=2)
    events = world.fake.interaction_responses(inter.id)
    assert [(e.kind, e.status) for e in events] == [
        ("callback", 200), ("followup", 200), ("original_edit", 200), ("followup", 200)]
    assert events[0].callback_type == 5 and events[0].at < world.fake.interaction_deadline_s
    original = world.fake.messages[inter.original_message_id]
    assert original.content == "answer to life: 42" and not original.loading
    assert [e.ephemeral for e in events] == [False, False, False, True]
    assert bot.errors == []


async def test_original_and_followup_messages_can_be_read_edited_and_deleted(world: World) -> None:
    bot = MiniBot()
    read_back: list[str] = []

    async def ask(interaction: discord.Interaction, question: str) -> None:
        await interaction.response.send_message("first")
        read_back.append((await interaction.original_response()).content)
        extra = await interaction.followup.send(
            "your export", ephemeral=True, wait=True,
            file=discord.File(io.BytesIO(b"[1, 2]"), filename="memory.json"))
        await extra.edit(content="your export (edited)")
        await interaction.delete_original_response()

    bot.on_ask = ask
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "ask", {"question": "q"})
        await world.fake.wait_for_response(inter, "original_delete")
    assert [e.kind for e in inter.events] == [
        "callback", "original_get", "followup", "followup_edit", "original_delete"]
    assert read_back == ["first"]
    export = world.fake.messages[inter.events[2].message_id]
    assert export.ephemeral and export.content == "your export (edited)"
    assert world.fake.attachment_bytes(export.id) == b"[1, 2]"
    assert world.fake.messages[inter.events[0].message_id].deleted
    assert bot.errors == []


async def test_defer_after_the_deadline_is_refused_as_unknown_interaction() -> None:
    async with FakeDiscord(interaction_deadline_s=0.1) as fake:
        gid = fake.add_guild("G")
        cid = fake.add_channel(gid, "c")
        alice = fake.add_member(gid, name="alice")
        with fake.patch_client():
            bot = MiniBot()

            async def slow(interaction: discord.Interaction, question: str) -> None:
                await asyncio.sleep(0.3)
                await interaction.response.defer()

            bot.on_ask = slow
            async with running(bot, fake.token):
                inter = await fake.invoke_command(cid, alice, "ask", {"question": "q"})
                await fake.wait_for(lambda: bot.errors)
    assert isinstance(bot.errors[0], discord.NotFound) and bot.errors[0].code == 10062
    assert not inter.acknowledged


@contextlib.asynccontextmanager
async def _prompted(world: World, view: Callable[[], discord.ui.View]) -> AsyncIterator[FakeMessage]:
    """A bot answering /ask with an ephemeral message carrying ``view()``: that message, while it runs."""
    bot = MiniBot()

    async def ask(interaction: discord.Interaction, question: str) -> None:
        await interaction.response.send_message("?", view=view(), ephemeral=True)

    bot.on_ask = ask
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "ask", {"question": "q"})
        await world.fake.wait_for_response(inter, "callback")
        yield world.fake.messages[inter.original_message_id]


async def test_component_click_updates_the_message(world: World) -> None:
    clicked: list[int] = []

    class Confirm(discord.ui.View):
        @discord.ui.button(label="Forget", custom_id="forget:yes", style=discord.ButtonStyle.danger)
        async def yes(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
            clicked.append(interaction.user.id)
            await interaction.response.edit_message(content="forgotten", view=None)

    async with _prompted(world, Confirm) as prompt:
        assert prompt.ephemeral and prompt.custom_ids() == ["forget:yes"]
        click = await world.fake.click_button(prompt.id, "forget:yes", world.alice)
        event = await world.fake.wait_for_response(click, "callback")
    assert event.callback_type == 7
    assert prompt.content == "forgotten" and prompt.components == []
    assert clicked == [int(world.alice)]


async def test_a_select_menu_choice_reaches_the_view_with_the_values_picked(world: World) -> None:
    picked: list[list[str]] = []

    class Pick(discord.ui.View):
        @discord.ui.select(custom_id="pick", options=[discord.SelectOption(label=n, value=n) for n in ("1", "2")])
        async def pick(self, interaction: discord.Interaction, select: discord.ui.Select[Any]) -> None:
            picked.append(list(select.values))
            await interaction.response.edit_message(content=f"picked {select.values[0]}", view=None)

    async with _prompted(world, Pick) as prompt:
        with pytest.raises(ValueError, match="offers"):
            await world.fake.choose(prompt.id, "pick", ["3"], world.alice)  # not an option
        with pytest.raises(KeyError, match="no select menu"):
            await world.fake.choose(prompt.id, "nope", ["1"], world.alice)
        choice = await world.fake.choose(prompt.id, "pick", ["2"], world.alice)
        await world.fake.wait_for_response(choice, "callback")
    assert picked == [["2"]] and prompt.content == "picked 2" and prompt.components == []


async def test_invoking_a_command_that_was_never_synced_is_a_test_error(world: World) -> None:
    with pytest.raises(KeyError, match="never synced"):
        await world.fake.invoke_command(world.channel_id, world.alice, "nope")


async def test_subcommand_with_user_option_reaches_the_right_callback(world: World) -> None:
    bob = world.fake.add_member(world.guild_id, name="bob")
    bot = MiniBot(sync_guild=world.guild_id)
    memory = app_commands.Group(name="memory", description="Your memory")
    calls: list[tuple[str, int, bool]] = []

    @memory.command(name="show", description="Show it")
    async def show(interaction: discord.Interaction, who: discord.Member, page: int = 1) -> None:
        calls.append((interaction.command.qualified_name, who.id, who.guild_permissions.manage_messages))
        await interaction.response.send_message(f"{who.display_name} page {page}", ephemeral=True)

    bot.extra_commands.append(memory)
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "memory",
                                                {"who": bob, "page": 2}, subcommand="show")
        event = await world.fake.wait_for_response(inter, "callback")
    assert calls == [("memory show", int(bob), False)]
    assert event.callback_type == 4 and event.ephemeral
    assert world.fake.messages[event.message_id].content == "bob page 2"


async def test_member_permissions_come_from_roles(world: World) -> None:
    mods = world.fake.add_role(world.guild_id, "mods", p.MANAGE_MESSAGES)
    world.fake.add_member(world.guild_id, world.alice, roles=[mods])
    bot = MiniBot()
    seen: list[bool] = []

    async def ask(interaction: discord.Interaction, question: str) -> None:
        seen.append(interaction.permissions.manage_messages)
        await interaction.response.send_message("ok")

    bot.on_ask = ask
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "ask", {"question": "q"})
        await world.fake.wait_for_response(inter, "callback")
    assert seen == [True]


async def test_followup_before_acknowledging_is_refused(world: World) -> None:
    bot = MiniBot()
    bot.on_ask = lambda interaction, question: interaction.followup.send("too early")
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "ask", {"question": "q"})
        await world.fake.wait_for(lambda: bot.errors)
    assert isinstance(bot.errors[0], discord.NotFound)
    assert [(e.kind, e.status) for e in inter.events] == [("followup", 404)]


async def error_codes(*calls: Callable[[], Awaitable[object]],
                      error: type[discord.HTTPException] = discord.HTTPException) -> list[int]:
    """Make each call; the Discord error code of each that fails with ``error``."""
    codes: list[int] = []
    for call in calls:
        try:
            await call()
        except error as exc:
            codes.append(exc.code)
    return codes


async def test_an_expired_interaction_token_is_refused_by_every_webhook_route(world: World) -> None:
    world.fake.interaction_token_lifetime_s = 0.2
    bot = MiniBot()
    codes: list[int] = []

    async def ask(interaction: discord.Interaction, question: str) -> None:
        await interaction.response.defer(thinking=True)
        await asyncio.sleep(0.3)
        codes.extend(await error_codes(lambda: interaction.edit_original_response(content="late"),
                                       lambda: interaction.followup.send("late too")))

    bot.on_ask = ask
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "ask", {"question": "q"})
        await world.fake.wait_for(lambda: len(codes) == 2)
    assert codes == [50027, 50027]  # Invalid Webhook Token, as Discord answers after 15 minutes
    assert [(e.kind, e.status) for e in inter.events] == [("callback", 200), ("original_edit", 401), ("followup", 401)]


async def test_a_deleted_original_is_an_unknown_message_to_read_edit_or_delete(world: World) -> None:
    bot = MiniBot()
    codes: list[int] = []

    async def ask(interaction: discord.Interaction, question: str) -> None:
        await interaction.response.send_message("first")
        await interaction.delete_original_response()
        codes.extend(await error_codes(interaction.original_response,
                                       lambda: interaction.edit_original_response(content="x"),
                                       interaction.delete_original_response, error=discord.NotFound))

    bot.on_ask = ask
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "ask", {"question": "q"})
        await world.fake.wait_for(lambda: len(codes) == 3)
    assert codes == [10008, 10008, 10008]
    assert [(e.kind, e.status) for e in inter.events] == [
        ("callback", 200), ("original_delete", 204),
        ("original_get", 404), ("original_edit", 404), ("original_delete", 404)]


async def test_second_acknowledgement_is_refused(world: World) -> None:
    import aiohttp

    bot = MiniBot()
    bot.on_ask = lambda interaction, question: interaction.response.defer()
    async with running(bot, world.fake.token):
        inter = await world.fake.invoke_command(world.channel_id, world.alice, "ask", {"question": "q"})
        await world.fake.wait_for_response(inter, "callback")
        url = f"{world.fake.api_base}/interactions/{inter.id}/{inter.token}/callback"
        async with aiohttp.ClientSession() as session, session.post(url, json={"type": 4, "data": {"content": "x"}}) as r:
            assert r.status == 400 and (await r.json())["code"] == 40060
    assert [e.status for e in inter.events] == [200, 400]


async def test_edits_and_deletes_are_recorded_and_pings_of_every_version_kept(world: World) -> None:
    bot = MiniBot()

    async def edit_then_delete(message: discord.Message) -> None:
        status = await message.channel.send("working...")
        await status.edit(content="@everyone done")
        await status.delete()

    bot.on_mention = edit_then_delete
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "go", mention_bot=True)
        await world.fake.wait_for(lambda: [m for m in world.fake.messages_in(world.channel_id, include_deleted=True)
                                           if m.deleted])
    status = world.fake.messages_in(world.channel_id, include_deleted=True)[-1]
    assert [e["content"] for e in status.edits] == ["@everyone done"]
    assert status.pings.everyone and status.deleted
    assert world.fake.bot_messages(world.channel_id) == []


async def test_history_lists_earlier_messages_newest_first(world: World) -> None:
    first = await world.fake.user_says(world.channel_id, world.alice, "before the bot started")
    bot = MiniBot()
    history: list[str] = []

    async def read_history(message: discord.Message) -> None:
        history.extend([m.content async for m in message.channel.history(limit=10)])

    bot.on_mention = read_history
    async with running(bot, world.fake.token):
        await world.fake.user_says(world.channel_id, world.alice, "what did I say?", mention_bot=True,
                                   reply_to=first.id)
        await world.fake.wait_for(lambda: history)
    assert history == [f"<@{world.fake.bot_id}> what did I say?", "before the bot started"]


async def test_reconnect_request_resumes_the_session(world: World) -> None:
    bot = MiniBot()
    async with running(bot, world.fake.token):
        world.fake.request_reconnect()
        await world.fake.wait_for(lambda: any(f.get("op") == 6 for f in world.fake.gateway_log))
        await world.fake.user_says(world.channel_id, world.alice, "still there?")
        await world.fake.wait_for(lambda: bot.seen)
    assert len(world.fake.identifies) == 1


async def test_invalidated_session_makes_the_client_identify_again_without_resyncing(world: World) -> None:
    bot = MiniBot()
    readies: list[int] = []

    async def count_ready() -> None:
        readies.append(1)

    bot.add_listener(count_ready, "on_ready")
    async with running(bot, world.fake.token):
        await world.fake.wait_for(lambda: readies)
        world.fake.invalidate_sessions()
        await world.fake.wait_for(lambda: len(readies) == 2)
        await world.fake.user_says(world.channel_id, world.alice, "after the new session")
        await world.fake.wait_for(lambda: bot.seen)
    assert len(world.fake.identifies) == 2
    assert len(world.fake.command_syncs) == 1


async def test_bot_configured_with_only_the_api_base_finds_the_gateway() -> None:
    import discord.gateway
    import discord.http
    import yarl

    class SelfConfiguring(MiniBot):
        async def setup_hook(self) -> None:
            _, url, _ = await self.http.get_bot_gateway()
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
            await super().setup_hook()

    old_base, old_gateway = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    async with FakeDiscord() as fake:
        fake.add_guild("G")
        discord.http.Route.BASE = fake.api_base
        try:
            bot = SelfConfiguring()
            async with running(bot, fake.token):
                assert len(bot.guilds) == 1
        finally:
            discord.http.Route.BASE = old_base
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway


async def test_sharded_bot_gets_each_guild_on_its_own_shard() -> None:
    class ShardedBot(commands.AutoShardedBot):
        async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
            return None

    async with FakeDiscord() as fake:
        guild_ids = [fake.add_guild(f"G{i}") for i in range(2)]
        while len({(int(g) >> 22) % 2 for g in guild_ids}) < 2:
            await asyncio.sleep(0.002)
            guild_ids.append(fake.add_guild(f"G{len(guild_ids)}"))
        with fake.patch_client():
            bot = ShardedBot(command_prefix="!", intents=discord.Intents.default(), shard_count=2,
                             guild_ready_timeout=0.05)
            async with running(bot, fake.token):
                shard_of = {str(g.id): g.shard_id for g in bot.guilds}
    assert shard_of == {g: (int(g) >> 22) % 2 for g in guild_ids}
    assert sorted(tuple(i["shard"]) for i in fake.identifies) == [(0, 2), (1, 2)]


# ------------------------------------------------------------------ mention rules (pure)


def _pings(content: str, allowed: dict[str, Any] | None, **kw: Any) -> p.Pings:
    args: dict[str, Any] = dict(author_id="1" * 18, in_guild=True, can_mention_everyone=True,
                                mentionable_roles=set())
    args.update(kw)
    return p.compute_pings(content, allowed, **args)


def test_allowed_mentions_none_suppresses_everything() -> None:
    assert _pings(f"@everyone @here <@{'2' * 18}> <@&{'3' * 18}>", {"parse": []},
                  replied_user_id="4" * 18).nobody


def test_user_whitelist_pings_only_listed_users_present_in_content() -> None:
    result = _pings(f"<@{'2' * 18}> <@!{'5' * 18}>", {"parse": [], "users": ["5" * 18, "6" * 18]})
    assert result.users == {"5" * 18}


def test_everyone_needs_the_permission_and_roles_need_mentionable() -> None:
    text = f"@everyone <@&{'3' * 18}>"
    assert not _pings(text, None, can_mention_everyone=False).everyone
    assert _pings(text, None, can_mention_everyone=False).roles == set()
    assert _pings(text, None, can_mention_everyone=False, mentionable_roles={"3" * 18}).roles == {"3" * 18}


def test_dm_has_no_everyone_or_role_pings() -> None:
    assert _pings(f"@everyone <@&{'3' * 18}>", None, in_guild=False).nobody


def test_snowflakes_increase_and_look_like_discord_ids() -> None:
    ids = [int(p.snowflake()) for _ in range(100)]
    assert ids == sorted(set(ids)) and all(17 <= len(str(i)) <= 20 for i in ids)


async def test_an_enforced_nonce_sent_twice_creates_one_message(world: World) -> None:
    async with running(MiniBot(), world.fake.token) as bot:
        channel = bot.get_partial_messageable(int(world.channel_id))
        first = await channel.send("once", nonce="r1.abc")
        again = await channel.send("once", nonce="r1.abc")
        other = await channel.send("twice", nonce="r1.abd")
    assert first.id == again.id != other.id
    assert [m.content for m in world.fake.bot_messages(world.channel_id)] == ["once", "twice"]
    body = next(r.json for r in world.fake.requests if r.method == "POST" and r.path.endswith("/messages"))
    assert body["nonce"] == "r1.abc" and body["enforce_nonce"] is True


async def test_a_deleted_channel_answers_unknown_channel(world: World) -> None:
    async with running(MiniBot(), world.fake.token) as bot:
        world.fake.delete_channel(world.channel_id)
        await world.fake.wait_for(lambda: bot.get_channel(int(world.channel_id)) is None)
        with pytest.raises(discord.NotFound) as info:
            await bot.get_partial_messageable(int(world.channel_id)).send("anyone?")
    assert info.value.code == 10003
