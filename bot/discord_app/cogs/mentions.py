"""Answering messages addressed to the bot: a mention, a reply to the bot, or any DM.

Bots (and the bot itself) are ignored; people outside the operator's lists get silence. The
typing indicator shows while the pipeline works; the answer is a reply that grows as the model
writes it (bot.discord_app.live_reply), split into parts. Attached images go to the model when it
can see them (bot.discord_app.images); a bad one gets a sentence instead of an answer. A
flood within USER_COOLDOWN_S gets one polite sentence, then silence until the window ends. With
BUFFER_ALL_MESSAGES the channel's other chatter is kept as context.
"""

from __future__ import annotations

import asyncio
import logging
import time

import discord
from discord.ext import commands

from agent.events import AgentEvent
from bot.config import Settings
from bot.discord_app.access import AccessPolicy
from bot.discord_app.delivery import reply_to
from bot.discord_app.images import is_image, take_images
from bot.discord_app.live_reply import LiveOptions, LiveReply
from bot.discord_app.live_targets import MessageReplyTarget
from bot.discord_app.translate import attachments_text, request_from_message, strip_bot_mention, where_of
from bot.errors import sentence_for
from bot.pipeline import TurnPipeline

__all__ = ["MentionsCog"]

log = logging.getLogger(__name__)

_COOLDOWN_NOTICES_MAX = 10_000


class MentionsCog(commands.Cog):
    """Listens to messages and answers the ones addressed to the bot."""

    def __init__(self, bot: commands.Bot, pipeline: TurnPipeline, settings: Settings, policy: AccessPolicy,
                 live: LiveOptions | None = None) -> None:
        self.bot = bot
        self.live = live or LiveOptions()
        self.pipeline = pipeline
        self.settings = settings
        self.policy = policy
        self._cooldown_notices: dict[str, float] = {}  # user id -> when last told to slow down

    def _first_cooldown_notice(self, user_id: str) -> bool:
        """Whether to tell `user_id` about the cooldown: once per cooldown window, so that a
        flood of messages gets one polite sentence, not a flood of them."""
        now = time.monotonic()
        window = self.settings.user_cooldown_s
        if now - self._cooldown_notices.get(user_id, -window) < window:
            return False
        if len(self._cooldown_notices) > _COOLDOWN_NOTICES_MAX:
            self._cooldown_notices = {u: t for u, t in self._cooldown_notices.items() if now - t < window}
        self._cooldown_notices[user_id] = now
        return True

    def _is_addressed(self, message: discord.Message) -> bool:
        me = self.bot.user
        if me is None:
            return False
        if message.guild is None:
            return True
        if me in message.mentions:
            return True
        resolved = message.reference.resolved if message.reference is not None else None
        if not (isinstance(resolved, discord.Message) and resolved.author.id == me.id):
            return False
        # A reply that does not ping the bot arrives blank without the message-content intent:
        # then there is nothing to answer (rather than "your message was empty").
        return bool(message.content.strip() or message.attachments)

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot or self.bot.user is None:
            return
        if not self.policy.allows(where_of(message.author, message.channel, message.guild)):
            return
        if not self._is_addressed(message):
            if self.settings.buffer_all_messages:  # record_chatter skips empty text itself
                await self.pipeline.record_chatter(
                    user_id=str(message.author.id),
                    display_name=message.author.display_name,
                    guild_id=str(message.guild.id) if message.guild else None,
                    channel_id=str(message.channel.id),
                    text=message.content,
                    message_id=str(message.id),
                )
            return
        try:
            await self._answer(message)
        except Exception:  # one funnel: log it, tell the person one sentence, keep serving
            log.exception("answering message %s in channel %s failed", message.id, message.channel.id)
            try:
                await reply_to(message, sentence_for("internal"))
            except discord.HTTPException:
                log.warning("could not tell the user about the failure", exc_info=True)

    async def _answer(self, message: discord.Message) -> None:
        text = strip_bot_mention(message.content, self.bot.user.id)  # type: ignore[union-attr]
        if others := [a for a in message.attachments if not is_image(a)]:
            extra = await attachments_text(others, self.settings.attachment_max_bytes)
            text = f"{text}\n\n{extra}".strip()
        seen = await take_images([a for a in message.attachments if is_image(a)], self.settings)
        if seen.problems:  # a bad image: say so, rather than answer without it
            await reply_to(message, " ".join(seen.problems))
            return
        # The turn joins its channel's queue now, with no await between the message's arrival
        # and this point (except for an attachment's download), so that one channel's messages
        # are answered in the order they arrived.
        reply = LiveReply(MessageReplyTarget(message), interval_s=self.live.edit_interval_s,
                          show_status=False, preface=seen.preface)  # the typing indicator is the status here

        async def on_event(event: AgentEvent) -> None:
            reply.feed(event)

        turn = asyncio.create_task(self.pipeline.handle(
            request_from_message(message, seen.question(text), images=seen.images), on_event),
                                   name=f"turn-{message.id}")
        try:
            try:
                async with message.channel.typing():
                    result = await turn
            except discord.HTTPException:  # the typing indicator failed; the answer still goes out
                log.warning("typing indicator failed in channel %s", message.channel.id, exc_info=True)
                result = await turn
        except BaseException:
            await reply.abandon()
            raise
        if result.outcome == "cooldown" and not self._first_cooldown_notice(str(message.author.id)):
            await reply.abandon()
            return
        sent = (await reply.finish(result.text))[0]
        if result.trace_id is not None:
            await self.pipeline.attach_message(result.trace_id, str(sent.id))
