"""`/settings view | set | tool | persona | reset`: a server's own settings, and its channels'.

For members with Manage Server in that server, and for the operator's ADMIN_USER_IDS in every
server; everyone else is refused in one ephemeral sentence (the command is not hidden by
default permissions, so that the operator's people see it everywhere). Everything is
ephemeral. Without a ``channel`` a change is the server's; with one it is that channel's, which
overrides the server's (its threads follow it). A channel of another server is refused (here,
or by the command tree's funnel when discord.py cannot resolve it). What
each value means and how it is checked: bot.settings.place; a change takes effect on the next
turn and is logged with who made it. Model names are shown, never where they are served or
their keys.
"""

from __future__ import annotations

import logging
from typing import Literal, TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_app.interactions import NOT_THIS_SERVERS_CHANNEL, tell
from bot.discord_app.views import excerpt
from bot.settings.model_catalog import ModelCatalog
from bot.settings.place import (
    PERSONA_MAX_CHARS,
    InvalidSetting,
    PlaceSettings,
    cooldown_in,
)

if TYPE_CHECKING:  # the concrete services, for types only: cogs only call them
    from bot.settings.place import PlaceSettingsService

__all__ = ["NOT_PERMITTED", "SettingsCog"]

log = logging.getLogger(__name__)

NOT_PERMITTED = "Only members with the Manage Server permission can change my settings here."
PERSONA_SHOWN_CHARS = 300
ChoiceKey = Literal["model", "memory", "free_response", "auto_thread", "cooldown"]
ResetKey = Literal["persona", "model", "memory", "free_response", "auto_thread", "cooldown", "tools"]


class PersonaModal(discord.ui.Modal, title="Persona"):
    """The persona (system prompt) of a server or channel, in a modal; empty clears it."""

    text: discord.ui.TextInput[PersonaModal] = discord.ui.TextInput(
        label="How should I behave here?", style=discord.TextStyle.paragraph, required=False,
        max_length=PERSONA_MAX_CHARS, placeholder="You are a friendly helper for a cooking server...")

    def __init__(self, places: PlaceSettingsService, guild_id: str, channel_id: str | None,
                 actor_id: int, current: str | None) -> None:
        super().__init__(timeout=15 * 60)
        self.places = places
        self.guild_id = guild_id
        self.channel_id = channel_id
        self.actor_id = actor_id
        self.text.default = current

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        return interaction.user.id == self.actor_id

    async def on_submit(self, interaction: discord.Interaction, /) -> None:
        try:
            await self.places.set_value(self.guild_id, self.channel_id, "persona", self.text.value or "",
                                        str(interaction.user.id))
        except InvalidSetting as exc:
            await tell(interaction, str(exc))
            return
        where = f"<#{self.channel_id}>" if self.channel_id else "this server"
        if (self.text.value or "").strip():
            await tell(interaction, f"Persona for {where} saved ({len(self.text.value.strip())} characters); "
                                    "it applies from the next question.")
        else:
            await tell(interaction, f"Persona for {where} cleared: back to the default.")

    async def on_error(self, interaction: discord.Interaction, error: Exception, /) -> None:
        log.error("the persona modal failed", exc_info=error)
        await tell(interaction, "Something broke on my side; the persona was not saved.")


def _shown(value: object) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)


class SettingsCog(commands.Cog):
    """The /settings command group."""

    group = app_commands.Group(name="settings", description="My settings in this server (Manage Server)",
                               guild_only=True)

    def __init__(self, places: PlaceSettingsService, models: ModelCatalog, *, admin_user_ids: frozenset[str],
                 default_cooldown_s: float, content_intent: bool) -> None:
        self.places = places
        self.models = models
        self.admin_user_ids = admin_user_ids
        self.default_cooldown_s = default_cooldown_s
        self.content_intent = content_intent

    # -- gate ---------------------------------------------------------------------------

    async def _target(self, interaction: discord.Interaction,
                      channel: discord.TextChannel | None) -> tuple[str, str | None] | None:
        """(guild id, channel id or None) when the person may configure it; else answers why not."""
        if interaction.guild_id is None:
            await tell(interaction, "Settings are per server; use this command in a server.")
            return None
        if not (interaction.permissions.manage_guild or str(interaction.user.id) in self.admin_user_ids):
            await tell(interaction, NOT_PERMITTED)
            return None
        if channel is not None and channel.guild.id != interaction.guild_id:
            await tell(interaction, NOT_THIS_SERVERS_CHANNEL)
            return None
        return str(interaction.guild_id), str(channel.id) if channel is not None else None

    # -- commands -----------------------------------------------------------------------

    @group.command(name="view", description="Show my settings here (a channel's override the server's)")
    @app_commands.describe(channel="A channel of this server (default: this channel)")
    async def view(self, interaction: discord.Interaction, channel: discord.TextChannel | None = None) -> None:
        if (target := await self._target(interaction, channel)) is None:
            return
        guild_id, channel_id = target
        channel_id = channel_id or self._current_channel(interaction)
        place = self.places.for_place(guild_id, (channel_id,) if channel_id else ())
        await tell(interaction, self._render(place, channel_id))

    @group.command(name="set", description="Change a setting of this server or of one channel")
    @app_commands.describe(key="Which setting", value="The new value (on/off, seconds, a model name, server/off/global)",
                           channel="Only this channel (default: the whole server)")
    async def set(self, interaction: discord.Interaction, key: ChoiceKey,
                  value: app_commands.Range[str, 1, 200], channel: discord.TextChannel | None = None) -> None:
        if (target := await self._target(interaction, channel)) is None:
            return
        try:
            stored = await self.places.set_value(*target, key, value, str(interaction.user.id))
        except InvalidSetting as exc:
            await tell(interaction, str(exc))
            return
        text = f"{key.replace('_', '-')} is now {_shown(stored)} for {self._where(target[1])}."
        if key == "free_response" and stored is True and not self.content_intent:
            text += (" Note: I run without the Message Content intent, so I can't read messages there "
                     "until the operator switches it on (MESSAGE_CONTENT_INTENT).")
        await tell(interaction, text)

    @group.command(name="tool", description="Switch one of my tools on or off")
    @app_commands.describe(name="The tool's name (built-in, or MCP server__tool)", enabled="On or off",
                           channel="Only this channel (default: the whole server)")
    async def tool(self, interaction: discord.Interaction, name: app_commands.Range[str, 1, 200], enabled: bool,
                   channel: discord.TextChannel | None = None) -> None:
        if (target := await self._target(interaction, channel)) is None:
            return
        try:
            tool = await self.places.set_tool(*target, name, enabled, str(interaction.user.id))
        except InvalidSetting as exc:
            await tell(interaction, str(exc))
            return
        await tell(interaction, f"Tool {tool} is now {'on' if enabled else 'off'} for {self._where(target[1])}.")

    @group.command(name="persona", description="Write how I should behave here (a system prompt)")
    @app_commands.describe(channel="Only this channel (default: the whole server)")
    async def persona(self, interaction: discord.Interaction, channel: discord.TextChannel | None = None) -> None:
        if (target := await self._target(interaction, channel)) is None:
            return
        guild_id, channel_id = target
        current = next((r.value for r in self.places.rows(guild_id)
                        if r.key == "persona" and r.channel_id == channel_id), None)
        await interaction.response.send_modal(PersonaModal(
            self.places, guild_id, channel_id, interaction.user.id, current if isinstance(current, str) else None))

    @group.command(name="reset", description="Return settings to the defaults")
    @app_commands.describe(key="Only this setting (default: every setting at this level)",
                           channel="This channel's own settings (default: the server's)")
    async def reset(self, interaction: discord.Interaction, key: ResetKey | None = None,
                    channel: discord.TextChannel | None = None) -> None:
        if (target := await self._target(interaction, channel)) is None:
            return
        removed = await self.places.reset(*target, key, str(interaction.user.id))
        what = key.replace("_", "-") if key else "every setting"
        await tell(interaction, f"Reset {what} for {self._where(target[1])} ({removed} value(s) removed).")

    # -- rendering ----------------------------------------------------------------------

    @staticmethod
    def _current_channel(interaction: discord.Interaction) -> str | None:
        channel = interaction.channel
        if isinstance(channel, discord.Thread) and channel.parent_id is not None:
            return str(channel.parent_id)
        return str(interaction.channel_id) if interaction.channel_id is not None else None

    @staticmethod
    def _where(channel_id: str | None) -> str:
        return f"<#{channel_id}>" if channel_id else "this server"

    def _render(self, place: PlaceSettings, channel_id: str | None) -> str:
        def source(key: str) -> str:
            return f" ({place.sources[key]})" if key in place.sources else " (default)"

        persona = place.persona
        persona_line = ("default" if persona is None
                        else f"{len(persona)} characters: “{excerpt(persona, PERSONA_SHOWN_CHARS)}”")
        cooldown = cooldown_in(place, self.default_cooldown_s)
        off = ", ".join(sorted(place.tools_off)) or "none"
        lines = [
            f"My settings in {self._where(channel_id)} (a channel's values override the server's):",
            f"- persona{source('persona')}: {persona_line}",
            f"- model{source('model')}: {place.model or self.models.default.name}",
            f"- memory{source('memory')}: {place.memory or 'operator default'}",
            f"- free-response{source('free_response')}: {_shown(place.free_response)}",
            f"- auto-thread{source('auto_thread')}: {_shown(place.auto_thread)}",
            f"- cooldown{source('cooldown')}: {cooldown:g} s",
            f"- tools off: {off}",
            f"Models you can choose: {', '.join(self.models.names())}",
        ]
        return "\n".join(lines)[:2000]
