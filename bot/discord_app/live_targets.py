"""Where a live reply's messages go on Discord (bot.discord_app.live_reply.ReplyTarget).

- a mention: a reply to the person's message, further parts in the channel;
- a slash command: the deferred response, further parts as followups; an interaction's token
  (which every edit and followup needs) lives 15 minutes, so from ``token_lifetime_s -
  token_margin_s`` after the command the reply moves on (`move_in`) and goes on as normal
  channel messages (a DM to the person for a private answer, which a channel would leak).

The client's allowed mentions apply to every send here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import discord

from bot.discord_app.delivery import reply_to
from bot.discord_app.live_reply import LiveOptions, ReplyTarget

__all__ = ["ChannelTarget", "DirectTarget", "InteractionTarget", "MessageReplyTarget"]


class MessageReplyTarget:
    """A reply to ``message``; further parts in its channel."""

    def __init__(self, message: discord.Message) -> None:
        self._message = message

    async def first(self, text: str) -> discord.Message:
        return await reply_to(self._message, text)

    async def more(self, text: str) -> discord.Message:
        return await self._message.channel.send(text)

    def move_in(self) -> float | None:
        return None

    def fallback(self) -> ReplyTarget[discord.Message]:
        return self


class ChannelTarget:
    """Plain messages in a channel: a thread the bot opened, or where an expiring slash command goes on."""

    def __init__(self, channel: discord.abc.Messageable) -> None:
        self._channel = channel

    async def first(self, text: str) -> discord.Message:
        return await self._channel.send(text)

    async def more(self, text: str) -> discord.Message:
        return await self._channel.send(text)

    def move_in(self) -> float | None:
        return None

    def fallback(self) -> ReplyTarget[discord.Message]:
        return self


class DirectTarget(ChannelTarget):
    """Direct messages to a person (an expiring private answer)."""

    def __init__(self, user: discord.abc.User) -> None:
        super().__init__(user)


class InteractionTarget:
    """A slash command's deferred response and followups, until its token nears its end."""

    def __init__(self, interaction: discord.Interaction, *, ephemeral: bool, options: LiveOptions,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._interaction = interaction
        self._ephemeral = ephemeral
        self._clock = clock
        self._move_at = clock() + options.token_lifetime_s - options.token_margin_s

    async def first(self, text: str) -> discord.Message:
        return await self._interaction.edit_original_response(content=text)

    async def more(self, text: str) -> discord.Message:
        return await self._interaction.followup.send(text, ephemeral=self._ephemeral, wait=True)

    def move_in(self) -> float | None:
        return self._move_at - self._clock()

    def fallback(self) -> ReplyTarget[discord.Message]:
        if self._ephemeral or self._interaction.channel is None:
            return DirectTarget(self._interaction.user)
        return ChannelTarget(self._interaction.channel)
