"""Answering messages addressed to the bot: a mention (of the bot or of its managed role), a
reply to the bot, any DM, every message in a free-response channel, and follow-ups in a thread
the bot opened for an answer.

Bots (and the bot itself) are ignored; people outside the operator's lists get silence. The
typing indicator shows while the pipeline works (one per channel, however many turns wait there:
bot.discord_app.typing_indicator); the answer is a reply that grows as the model
writes it (bot.discord_app.live_reply), split into parts. Attached images go to the model when it
can see them (bot.discord_app.images); a bad one gets a sentence instead of an answer. With
auto-thread on (bot.settings.place), a turn started in a text channel opens a public thread
named from the question and is answered there; the thread keeps its own buffer. Without the
Message Content intent a free-response channel receives blank messages: the bot says so once
per channel instead of ignoring them. A flood within the cooldown gets one polite sentence,
then silence until the window ends. With BUFFER_ALL_MESSAGES the channel's other chatter is
kept as context.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from agent.events import AgentEvent
from bot.settings.config import Settings
from bot.discord_app.access import AccessPolicy
from bot.discord_app.delivery import reply_to, thread_name
from bot.discord_app.dm_access import access_facts
from bot.discord_app.images import is_image, take_images, will_download
from bot.discord_app.live_reply import LiveOptions, LiveReply
from bot.discord_app.live_targets import ChannelTarget, MessageReplyTarget
from bot.discord_app.delivery_order import DeliveryOrder, DeliverySlot
from bot.discord_app.translate import (
    attachments_text,
    place_of,
    request_from_message,
    strip_bot_mention,
)
from bot.discord_app.typing_indicator import ChannelTyping
from bot.errors import sentence_for
from bot.settings.place import DEFAULTS, PlaceSettings, cooldown_in
from bot.turn.requests import TurnResult
from bot.turn.scheduling import Admission

if TYPE_CHECKING:  # the concrete services, for types only: cogs only call them
    from bot.services import ChannelService, TraceService
    from bot.settings.place import PlaceSettingsService
    from bot.turn.pipeline import TurnPipeline

__all__ = ["NO_CONTENT_INTENT", "MentionsCog", "mentions_bot"]

log = logging.getLogger(__name__)

_COOLDOWN_NOTICES_MAX = 10_000
_BUSY_NOTICE_S = 30.0  # "still answering your other questions" is said at most this often
_INTENT_NOTICES_MAX = 10_000
NO_CONTENT_INTENT = (
    "I answer here without a mention, but I can't read messages here: I run without Discord's "
    "Message Content intent (the operator can switch it on: MESSAGE_CONTENT_INTENT=true and the "
    "developer portal). Until then, mention me to ask something.")


def mentions_bot(message: discord.Message, me: discord.abc.User) -> bool:
    """A mention of the bot itself, or of its managed role (Discord's client often writes that).
    A payload discord.py could only partly parse may lack the mention lists: no mention then."""
    if me in getattr(message, "mentions", ()):
        return True
    role = message.guild.self_role if message.guild is not None else None
    if role is None:
        return False
    return role in getattr(message, "role_mentions", ()) or role.id in message.raw_role_mentions


class MentionsCog(commands.Cog):
    """Listens to messages and answers the ones addressed to the bot."""

    def __init__(self, bot: commands.Bot, pipeline: TurnPipeline, traces: TraceService, channels: ChannelService,
                 places: PlaceSettingsService, settings: Settings, policy: AccessPolicy,
                 live: LiveOptions | None = None, order: DeliveryOrder | None = None) -> None:
        self.bot = bot
        self.pipeline = pipeline
        self.traces = traces
        self.channels = channels
        self.places = places
        self.settings = settings
        self.policy = policy
        self.live = live or LiveOptions()
        self.order = order or DeliveryOrder()
        self.typing = ChannelTyping()  # one indicator per channel, however many turns wait there
        self._cooldown_notices: dict[str, float] = {}  # user id -> when last told to slow down
        self._intent_noticed: set[str] = set()  # channels told that the intent is missing

    def _first_cooldown_notice(self, user_id: str, window: float) -> bool:
        """Whether to tell `user_id` about the cooldown: once per cooldown window, so that a
        flood of messages gets one polite sentence, not a flood of them."""
        now = time.monotonic()
        if now - self._cooldown_notices.get(user_id, -window) < window:
            return False
        if len(self._cooldown_notices) > _COOLDOWN_NOTICES_MAX:
            self._cooldown_notices = {u: t for u, t in self._cooldown_notices.items() if now - t < window}
        self._cooldown_notices[user_id] = now
        return True

    def _place(self, message: discord.Message) -> PlaceSettings:
        if message.guild is None:
            return DEFAULTS
        channel_id, parent_id = place_of(message.channel)
        return self.places.for_place(str(message.guild.id),
                                           (channel_id,) if parent_id is None else (parent_id, channel_id))

    def _is_addressed(self, message: discord.Message, place: PlaceSettings) -> bool:
        me = self.bot.user
        if me is None:
            return False
        if message.guild is None or mentions_bot(message, me):
            return True
        if place.free_response or place.bot_thread:
            return True
        resolved = message.reference.resolved if message.reference is not None else None
        if not (isinstance(resolved, discord.Message) and resolved.author.id == me.id):
            return False
        # A reply that does not ping the bot arrives blank without the message-content intent:
        # then there is nothing to answer (rather than "your message was empty").
        return bool(message.content.strip() or message.attachments)

    def _blank_without_intent(self, message: discord.Message) -> bool:
        return (not self.bot.intents.message_content and not message.content.strip()
                and not message.attachments and not mentions_bot(message, self.bot.user))  # type: ignore[arg-type]

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        """A message deleted on Discord (cached or not) leaves the channel's kept conversation."""
        await self.channels.messages_deleted(str(payload.channel_id), [str(payload.message_id)])

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self.channels.messages_deleted(str(payload.channel_id), [str(m) for m in sorted(payload.message_ids)])

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot or self.bot.user is None:
            return
        where = await access_facts(self.bot, self.policy, message.author, message.channel, message.guild)
        if not self.policy.allows(where):
            return
        try:
            place = self._place(message)
            if not self._is_addressed(message, place):
                if self.settings.buffer_all_messages:  # record_chatter skips empty text itself
                    await self.channels.record_chatter(
                        user_id=str(message.author.id),
                        display_name=message.author.display_name,
                        guild_id=str(message.guild.id) if message.guild else None,
                        channel_id=str(message.channel.id),
                        text=message.content,
                        message_id=str(message.id),
                    )
                return
            if message.guild is not None and self._blank_without_intent(message):
                await self._tell_intent_missing(message)
                return
            await self._answer(message, place)
        except Exception:  # one funnel: log it, tell the person one sentence, keep serving
            log.exception("answering message %s in channel %s failed", message.id, message.channel.id)
            try:
                await reply_to(message, sentence_for("internal"))
            except discord.HTTPException:
                log.warning("could not tell the user about the failure", exc_info=True)

    async def _tell_intent_missing(self, message: discord.Message) -> None:
        """Once per channel (per process): messages here arrive blank."""
        channel_id = str(message.channel.id)
        if channel_id in self._intent_noticed:
            return
        if len(self._intent_noticed) > _INTENT_NOTICES_MAX:
            self._intent_noticed.clear()
        self._intent_noticed.add(channel_id)
        log.warning("free-response channel %s: messages arrive blank without the Message Content "
                    "intent (MESSAGE_CONTENT_INTENT)", channel_id)
        await message.channel.send(NO_CONTENT_INTENT)

    async def _open_thread(self, message: discord.Message, text: str) -> discord.Thread:
        thread = await message.create_thread(name=thread_name(text))
        await self.places.mark_bot_thread(str(message.guild.id), str(thread.id), str(self.bot.user.id))  # type: ignore[union-attr]
        return thread

    async def _answer(self, message: discord.Message, place: PlaceSettings) -> None:
        me = self.bot.user
        role = message.guild.self_role if message.guild is not None else None
        text = strip_bot_mention(message.content, me.id, role.id if role else None)  # type: ignore[union-attr]
        images = [a for a in message.attachments if is_image(a)]
        admission: Admission | None = None
        if will_download(images, self.settings, place):  # let in before any image is fetched
            channel_id, parent_id = place_of(message.channel)
            new_thread = place.auto_thread and isinstance(message.channel, discord.TextChannel)
            admitted = await self.pipeline.admit(
                str(message.author.id), str(message.guild.id) if message.guild else None,
                (channel_id,) if parent_id is None else (parent_id, channel_id),
                f"message:{message.id}" if new_thread else channel_id)
            if isinstance(admitted, TurnResult):
                await self._tell_refusal(message, place, admitted)
                return
            admission = admitted
        try:
            await self._answer_admitted(message, place, text, images, admission)
        finally:  # the turn released it when it ran; a failed download or a dropped turn did not
            if admission is not None:
                admission.release()

    async def _tell_refusal(self, message: discord.Message, place: PlaceSettings, result: TurnResult) -> None:
        """A turn refused before it ran: the sentence, once per window for cooldown and busy."""
        window = cooldown_in(place, self.settings.user_cooldown_s)
        if result.outcome in ("cooldown", "busy") and not self._first_cooldown_notice(
                str(message.author.id), window if result.outcome == "cooldown" else max(window, _BUSY_NOTICE_S)):
            return
        await reply_to(message, result.text)

    async def _answer_admitted(self, message: discord.Message, place: PlaceSettings, text: str,
                               images: list[discord.Attachment], admission: Admission | None) -> None:
        if others := [a for a in message.attachments if not is_image(a)]:
            extra = await attachments_text(others, self.settings.attachment_max_bytes)
            text = f"{text}\n\n{extra}".strip()
        seen = await take_images(images, self.settings, place)
        if seen.problems:  # a bad image: say so, rather than answer without it
            await reply_to(message, " ".join(seen.problems))
            return
        thread = None
        if place.auto_thread and isinstance(message.channel, discord.TextChannel) and text:
            thread = await self._open_thread(message, text)
        # The turn joins its channel's queue now, with no await between the message's arrival
        # and this point (except for an attachment's download or the thread's creation), so
        # that one channel's messages are answered in the order they arrived.
        target = ChannelTarget(thread) if thread is not None else MessageReplyTarget(message)
        where: discord.abc.Messageable = thread if thread is not None else message.channel
        slot = self.order.take(where.id)  # type: ignore[union-attr]  # a channel or thread has an id
        reply = LiveReply(target, interval_s=self.live.edit_interval_s, wait_first=slot.wait,
                          show_status=False, preface=seen.preface)  # the typing indicator is the status here

        async def on_event(event: AgentEvent) -> None:
            reply.feed(event)

        req = request_from_message(message, seen.question(text), thread, images=seen.images)
        try:
            async with self.traces.answering(req.user_id, req.channel_id):  # until the trace is linked
                turn = asyncio.create_task(self.pipeline.handle(req, on_event, admission=admission),
                                           name=f"turn-{message.id}")
                await self._deliver(message, place, turn, reply, where, slot)
        finally:
            slot.release()

    async def _deliver(self, message: discord.Message, place: PlaceSettings, turn: asyncio.Task[TurnResult],
                      reply: LiveReply, where: discord.abc.Messageable, slot: DeliverySlot) -> None:
        try:
            async with self.typing.shown(where, where.id):  # type: ignore[attr-defined]  # a channel or thread
                result = await turn
        except BaseException:
            await reply.abandon()
            raise
        if result.unqueued:
            slot.unordered()
        window = cooldown_in(place, self.settings.user_cooldown_s)
        if result.outcome in ("cooldown", "busy") and not self._first_cooldown_notice(
                str(message.author.id), window if result.outcome == "cooldown" else max(window, _BUSY_NOTICE_S)):
            await reply.abandon()
            return
        sent = (await reply.finish(result.text))[0]
        if result.trace_id is not None:
            await self.traces.attach_message(result.trace_id, str(sent.id))
