"""`/ask question [trace] [private] [image]`: defer at once, show live status and the growing answer.

Discord allows 3 seconds before an interaction must be acknowledged, so the command defers
first and does everything else after. The deferred response then shows the status line
("calling calculator…") and the answer as it streams (bot.discord_app.live_reply: throttled
edits, followups past 2,000 characters); a turn that outlives the interaction's token goes on
in channel messages (a DM when private). `private` answers ephemerally; `trace` posts the steps
in a thread under the answer (for a private answer, as private followups instead: a public
thread would leak it). A private answer stays out of the channel's conversation (nobody else's
turn reads it) and what it stores is recalled only in the asker's private answers (bot.turn.privacy).
`image` goes to the model when it can see images (bot.discord_app.images).
With auto-thread on (bot.settings.place), a public /ask in a text channel opens a public thread
named from the question and the answer grows there (the response in the channel points to it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from agent.events import AgentEvent
from bot.settings.config import Settings
from bot.discord_app.delivery import post_trace, thread_name, trace_messages
from bot.discord_app.delivery_order import DeliveryOrder, DeliverySlot
from bot.discord_app.images import take_images, will_download
from bot.discord_app.live_reply import LiveOptions, LiveReply
from bot.discord_app.live_targets import ChannelTarget, InteractionTarget
from bot.discord_app.translate import place_of, request_from_interaction
from bot.turn.images import ImageIntake
from bot.settings.place import PlaceSettings
from bot.turn.requests import TurnRequest, TurnResult
from bot.turn.scheduling import Admission

if TYPE_CHECKING:  # the concrete services, for types only: cogs only call them
    from bot.services import TraceService
    from bot.settings.place import PlaceSettingsService
    from bot.turn.pipeline import TurnPipeline

__all__ = ["AskCog"]

QUESTION_MAX = 4000


class AskCog(commands.Cog):
    """The /ask command."""

    def __init__(self, pipeline: TurnPipeline, traces: TraceService, places: PlaceSettingsService,
                 settings: Settings, live: LiveOptions | None = None, order: DeliveryOrder | None = None) -> None:
        self.pipeline = pipeline
        self.traces = traces
        self.places = places
        self.settings = settings
        self.live = live or LiveOptions()
        self.order = order or DeliveryOrder()

    @app_commands.command(name="ask", description="Ask the agent a question")
    @app_commands.describe(
        question="What you want to know",
        trace="Also show the steps in a thread",
        private="Only you see the answer",
        image="An image to ask about (PNG, JPEG, WebP or GIF)",
    )
    async def ask(
        self,
        interaction: discord.Interaction,
        question: app_commands.Range[str, 1, QUESTION_MAX],
        trace: bool = False,
        private: bool = False,
        image: discord.Attachment | None = None,
    ) -> None:
        """Ask the agent."""
        target = InteractionTarget(interaction, ephemeral=private, options=self.live)
        await interaction.response.defer(thinking=True, ephemeral=private)
        place = self._place(interaction)
        images = [image] if image is not None else []
        admission: Admission | None = None
        if will_download(images, self.settings, place):  # let in before the image is fetched
            channels = self._place_channels(interaction)
            new_thread = place.auto_thread and not private and isinstance(interaction.channel, discord.TextChannel)
            admitted = await self.pipeline.admit(str(interaction.user.id), _guild_of(interaction), channels,
                                                 f"interaction:{interaction.id}" if new_thread else channels[-1])
            if isinstance(admitted, TurnResult):
                await LiveReply(target, interval_s=self.live.edit_interval_s).finish(admitted.text)
                return
            admission = admitted
        try:
            await self._ask_admitted(interaction, target, question, trace, private, place, images, admission)
        finally:  # the turn released it when it ran; a failed download did not
            if admission is not None:
                admission.release()

    async def _ask_admitted(self, interaction: discord.Interaction, target: InteractionTarget, question: str,
                            trace: bool, private: bool, place: PlaceSettings, images: list[discord.Attachment],
                            admission: Admission | None) -> None:
        seen = await take_images(images, self.settings, place)
        if seen.problems:  # a bad image: say so, rather than answer without it
            await LiveReply(target, interval_s=self.live.edit_interval_s).finish(" ".join(seen.problems))
            return
        thread = None if private else await self._auto_thread(interaction, place, question)
        # taken with no await before the turn joins the channel's queue (a new thread has no
        # other turns), so the answer shows after the channel's earlier ones
        slot = self.order.take(thread.id if thread is not None else interaction.channel_id or 0)
        req = request_from_interaction(interaction, seen.question(question), want_trace=trace,
                                       thread=thread, images=seen.images, private=private)
        async with self.traces.answering(req.user_id, req.channel_id):  # until the trace is linked
            try:
                answer, result = await self._answer(interaction, target, thread, slot, req, seen, admission)
            finally:
                slot.release()
            if result.trace_id is not None and not private:
                await self.traces.attach_message(result.trace_id, str(answer.id))
        if thread is not None:
            await interaction.edit_original_response(content=f"Answered in {thread.mention}.")
        if result.trace_id is None:
            return
        if trace:
            record = await self.traces.get_trace(result.trace_id)
            if record is None:
                return
            if private:
                for part in trace_messages(record):
                    await interaction.followup.send(part, ephemeral=True)
            else:
                await post_trace(answer, record)

    async def _answer(self, interaction: discord.Interaction, target: InteractionTarget,
                      thread: discord.Thread | None, slot: DeliverySlot, req: TurnRequest,
                      seen: ImageIntake, admission: Admission | None) -> tuple[discord.Message, TurnResult]:
        if thread is not None:
            await interaction.edit_original_response(content=f"Answering in {thread.mention}.")
            reply = LiveReply(ChannelTarget(thread), interval_s=self.live.edit_interval_s,
                              preface=seen.preface, wait_first=slot.wait)
        else:
            reply = LiveReply(target, interval_s=self.live.edit_interval_s, preface=seen.preface,
                              wait_first=slot.wait)

        async def on_event(event: AgentEvent) -> None:
            reply.feed(event)

        try:
            result = await self.pipeline.handle(req, on_event, admission=admission)
        except BaseException:
            await reply.abandon()
            raise
        if result.unqueued:
            slot.unordered()
        return (await reply.finish(result.text))[0], result

    def _place_channels(self, interaction: discord.Interaction) -> tuple[str, ...]:
        channel_id, parent_id = place_of(interaction.channel)
        return (channel_id or str(interaction.channel_id),) if parent_id is None else (parent_id, channel_id)

    def _place(self, interaction: discord.Interaction) -> PlaceSettings:
        return self.places.for_place(_guild_of(interaction), self._place_channels(interaction))

    async def _auto_thread(self, interaction: discord.Interaction, place: PlaceSettings,
                           question: str) -> discord.Thread | None:
        """A public thread for the answer when auto-thread is on in this text channel."""
        channel = interaction.channel
        if interaction.guild_id is None or not isinstance(channel, discord.TextChannel):
            return None
        if not place.auto_thread:
            return None
        thread = await channel.create_thread(name=thread_name(question), type=discord.ChannelType.public_thread)
        await self.places.mark_bot_thread(str(interaction.guild_id), str(thread.id), str(interaction.client.user.id))  # type: ignore[union-attr]
        return thread


def _guild_of(interaction: discord.Interaction) -> str | None:
    return str(interaction.guild_id) if interaction.guild_id is not None else None
