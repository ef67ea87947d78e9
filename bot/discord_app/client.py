"""The discord.py client: intents, allowed mentions, cogs, one-time command sync, access gate
and error funnel of slash commands.

Slash commands are synced once, in `setup_hook` (to DEV_GUILD_ID at once when set, else
globally), never in `on_ready`, which runs again on every reconnect. Allowed mentions are set
on the client so that every reply, followup and thread post inherits them: no @everyone,
@here, role or user pings whatever the model writes; only the replied-to asker is pinged.
With SHARD_COUNT/SHARD_IDS the process runs those shards (AutoShardedBot). With
DISCORD_API_BASE_URL set (a relay, a test server), discord.py's REST base is pointed there and the
gateway URL is asked from that API (GET /gateway/bot); unset, discord.py's globals are left alone.
An event discord.py cannot parse is dropped with a log line; the gateway reader yields to the
event loop once a loop iteration's time budget is spent (each change to discord.py's objects:
bot.discord_app.patches). Given people's reminders, the client serves /remind and runs their
delivery (bot.reminders.delivery through bot.discord_app.reminder_sender) from its first ready
until it closes.
Imports the cogs and the services' bundle (bot.interfaces); never agent/ or memory/ stores (memory.errors only, to
name a store failure).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.settings.budgets import TokenBudget
from bot.settings.config import DISCORD_DEFAULT_API_BASE_URL, Settings
from bot.discord_app.access import AccessPolicy
from bot.discord_app.cogs import (AdminCog, AskCog, DocsCog, MemoryCog, MentionsCog, RemindCog, SettingsCog, TldrCog,
                                  TraceCog, UsageCog)
from bot.discord_app.delivery_order import DeliveryOrder
from bot.discord_app.interactions import NOT_ALLOWED, NOT_THIS_SERVERS_CHANNEL, tell
from bot.discord_app.live_reply import LiveOptions
from bot.discord_app.dm_access import access_facts
from bot.discord_app.patches import (
    guard_event_parsers,
    install_gateway_pacing,
    install_tolerant_json,
    point_rest_at,
    use_gateway,
)
from bot.discord_app.reminder_sender import DiscordReminderSender
from bot.errors import sentence_for
from bot.interfaces import FrontEndServices
from bot.reminders.delivery import ReminderDelivery
from bot.reminders.service import Reminders
from memory.errors import MemoryStoreError

__all__ = ["ALLOWED_MENTIONS", "ReactBot", "ShardedReactBot", "create_bot", "intents_for", "policy_for"]

log = logging.getLogger(__name__)

UNKNOWN_INTERACTION = 10062  # Discord's JSON error code for an expired or unknown interaction
ALLOWED_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=False, replied_user=True)


def intents_for(settings: Settings) -> discord.Intents:
    """Default intents; the privileged message-content intent only with MESSAGE_CONTENT_INTENT
    (or BUFFER_ALL_MESSAGES, which implies it)."""
    intents = discord.Intents.default()
    intents.message_content = settings.message_content_intent
    return intents


def policy_for(settings: Settings) -> AccessPolicy:
    """The operator's ALLOWED_*/BLOCKED_USER_IDS/ALLOW_DMS settings as an access policy."""
    return AccessPolicy.from_lists(
        guilds=settings.allowed_guild_ids,
        channels=settings.allowed_channel_ids,
        roles=settings.allowed_role_ids,
        blocked=settings.blocked_user_ids,
        allow_dms=settings.allow_dms,
    )


OWN_DATA_COMMAND = "memory"  # bot.discord_app.cogs.memory's group


class ReactCommandTree(app_commands.CommandTree):
    """The single gate and error funnel of every slash command.

    Gate: a person or place outside the operator's lists (the client's `policy`) is refused
    politely before any command runs, except `/memory` (show, export, forget): what the bot keeps
    of a person is theirs to see and erase even once they are blocked or lose an allowed role. Funnel: an error is logged and the person answered, whether
    or not the command had already responded (see `tell`), so none leaves an interaction unanswered.
    """

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        policy: AccessPolicy = self.client.policy  # type: ignore[attr-defined]
        command = interaction.command
        if command is not None and command.qualified_name.split()[0] == OWN_DATA_COMMAND:
            return True
        where = await access_facts(self.client, policy, interaction.user, interaction.channel, interaction.guild)
        if policy.allows(where):
            return True
        await tell(interaction, NOT_ALLOWED)
        return False

    async def on_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
        name = interaction.command.qualified_name if interaction.command else "?"
        if isinstance(error, app_commands.TransformerError) and error.type is discord.AppCommandOptionType.channel:
            log.info("/%s: a channel option not of this server: %s", name, error)  # a person's mistake
            await tell(interaction, NOT_THIS_SERVERS_CHANNEL)
            return
        cause = getattr(error, "original", error)
        if isinstance(cause, discord.NotFound) and cause.code == UNKNOWN_INTERACTION:
            # acknowledged after Discord's 3 s (a busy bot), or answered after the token's 15
            # minutes: nothing more can be sent to this interaction, and it is no bug of ours
            log.warning("/%s from user %s: Discord no longer knows the interaction (acknowledged after its 3 s, "
                        "or answered after its 15 min): not answered", name, interaction.user.id)
            return
        log.error("/%s failed", name, exc_info=error)
        kind = "memory_unavailable" if isinstance(cause, MemoryStoreError) else "internal"
        await tell(interaction, sentence_for(kind))


class _BotCore:
    """What both bot classes share: cogs and the one-time sync in setup_hook."""

    services: FrontEndServices
    settings: Settings
    policy: AccessPolicy
    budget: TokenBudget | None
    live: LiveOptions
    reminders: Reminders | None
    reminder_delivery: ReminderDelivery | None
    _delivery_task: asyncio.Task[None] | None

    def __init__(self, services: FrontEndServices, settings: Settings, *, budget: TokenBudget | None = None,
                 live: LiveOptions | None = None, reminders: Reminders | None = None, **kwargs: Any) -> None:
        super().__init__(  # type: ignore[call-arg]
            command_prefix=commands.when_mentioned,  # required by commands.Bot; unused (on_message)
            help_command=None,
            intents=intents_for(settings),
            allowed_mentions=ALLOWED_MENTIONS,
            tree_cls=ReactCommandTree,
            **kwargs,
        )
        self.services = services
        self.settings = settings
        self.policy = policy_for(settings)
        self.budget = budget
        self.live = live or LiveOptions()
        self.reminders = reminders
        self.reminder_delivery = None
        self._delivery_task = None
        guard_event_parsers(self)  # type: ignore[arg-type]  # each patch: bot.discord_app.patches
        install_tolerant_json()
        install_gateway_pacing()

    async def setup_hook(self) -> None:
        bot: commands.Bot = self  # type: ignore[assignment]
        if self.settings.discord_api != DISCORD_DEFAULT_API_BASE_URL:
            await self._use_gateway_of_api(bot)
        s = self.services
        order = DeliveryOrder()  # one per client: mentions and /ask of a channel share it
        await bot.add_cog(MentionsCog(bot, s.turns, s.traces, s.channels, s.places, self.settings, self.policy,
                                      self.live, order))
        await bot.add_cog(AskCog(s.turns, s.traces, s.places, self.settings, self.live, order))
        await bot.add_cog(TraceCog(bot, s.traces, s.memory))
        await bot.add_cog(MemoryCog(s.memory))
        if s.documents is not None:
            await bot.add_cog(DocsCog(s.documents, admin_user_ids=self.settings.admin_user_ids))
        if s.digests is not None:
            await bot.add_cog(TldrCog(s.digests))
        await bot.add_cog(AdminCog(s.channels))
        await bot.add_cog(SettingsCog(s.places, self.settings.models, admin_user_ids=self.settings.admin_user_ids,
                                      default_cooldown_s=self.settings.user_cooldown_s,
                                      content_intent=self.settings.message_content_intent))
        if self.budget is not None:
            await bot.add_cog(UsageCog(self.budget, admin_user_ids=self.settings.admin_user_ids))
        if self.reminders is not None:
            await bot.add_cog(RemindCog(self.reminders))
            sender = DiscordReminderSender(bot, self.policy, shard_count=self.settings.shard_count,
                                           shard_ids=self.settings.shard_ids)
            delivery = self.reminder_delivery = ReminderDelivery(self.reminders, sender,
                                                                 turns=s.turns)  # type: ignore[arg-type]
            self._delivery_task = asyncio.create_task(self._deliver_reminders(bot, delivery), name="reminders")
        if self.settings.dev_guild_id is not None:
            guild = discord.Object(id=int(self.settings.dev_guild_id))
            bot.tree.copy_global_to(guild=guild)
            synced = await bot.tree.sync(guild=guild)
            log.info("synced %d slash commands to guild %s", len(synced), self.settings.dev_guild_id)
        else:
            synced = await bot.tree.sync()
            log.info("synced %d slash commands globally (may take up to an hour to appear)", len(synced))

    async def _deliver_reminders(self, bot: commands.Bot, delivery: ReminderDelivery) -> None:
        """Deliver reminders once the caches are filled (channels, guilds), until closed."""
        await bot.wait_until_ready()
        try:
            await delivery.run()
        finally:
            await delivery.stop()

    async def close(self) -> None:
        """Stop delivering reminders (an occurrence cut here is sent again on the next start),
        then discord.py's own close."""
        task, self._delivery_task = self._delivery_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await super().close()  # type: ignore[misc]

    async def _use_gateway_of_api(self, bot: commands.Bot) -> None:
        """Another API than Discord's (DISCORD_API_BASE_URL: a test server, a relay) names its
        own gateway; discord.py's single-connection client would otherwise dial Discord's."""
        _, url, _ = await bot.http.get_bot_gateway()
        use_gateway(url)
        log.info("using the gateway %s of %s", url, self.settings.discord_api_base_url)

    async def on_message(self, message: discord.Message, /) -> None:
        """Replaces commands.Bot's handler: there are no text commands (only slash commands and
        the MentionsCog listener), so a mention must not be parsed as an unknown prefix command."""

    def dispatch(self, event_name: str, /, *args: Any, **kwargs: Any) -> None:
        """discord.py's own, but nothing once closing: its task that dispatches `ready`
        (`guild_ready_timeout` after the last guild of READY) outlives `close`, and dispatching
        found the client without a loop and died with a traceback in the log (a SIGTERM in the
        first seconds of a connection)."""
        if self.is_closed():  # type: ignore[attr-defined]
            return
        super().dispatch(event_name, *args, **kwargs)  # type: ignore[misc]

    async def on_ready(self) -> None:
        bot: commands.Bot = self  # type: ignore[assignment]
        log.info("logged in as %s (%s) in %d guild(s)", bot.user, getattr(bot.user, "id", "?"), len(bot.guilds))


class ReactBot(_BotCore, commands.Bot):
    """One process, one shard (or Discord's recommended single connection)."""


class ShardedReactBot(_BotCore, commands.AutoShardedBot):
    """The shards named by SHARD_COUNT/SHARD_IDS in this process."""


def create_bot(services: FrontEndServices, settings: Settings, *, budget: TokenBudget | None = None,
               live: LiveOptions | None = None, reminders: Reminders | None = None,
               **client_options: Any) -> commands.Bot:
    """The right bot class for the settings, pointed at DISCORD_API_BASE_URL.

    ``budget`` serves /usage (left out without it); ``reminders`` serves /remind and is
    delivered (left out without it); ``live`` times live replies (tests shorten it). ``client_options`` go to discord.py's client as they are (e.g. ``guild_ready_timeout``).
    """
    if settings.discord_api_base_url is not None:
        point_rest_at(settings.discord_api_base_url)
    if settings.shard_count is not None:
        shard_ids = list(settings.shard_ids) if settings.shard_ids is not None else None
        return ShardedReactBot(services, settings, budget=budget, live=live, reminders=reminders,
                               shard_count=settings.shard_count, shard_ids=shard_ids, **client_options)
    return ReactBot(services, settings, budget=budget, live=live, reminders=reminders, **client_options)
