"""`/ask question [trace] [private]`: defer at once, show live status, then the answer.

Discord allows 3 seconds before an interaction must be acknowledged, so the command defers
first and does everything else after. The status line is edited at most about once a second.
`private` answers ephemerally; `trace` posts the steps in a thread under the answer (for a
private answer, as private followups instead: a public thread would leak it). With auto-thread
on (bot.place_settings), a public /ask in a text channel opens a public thread named from the
question and answers there (the status line stays in the channel, then points to the thread).
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from agent.events import AgentEvent
from bot.discord_app.delivery import answer_parts, post_trace, send_in_parts, thread_name, trace_messages
from bot.discord_app.status import ThrottledStatus, status_line
from bot.discord_app.translate import request_from_interaction
from bot.interfaces import PlaceSettingsAccess, TraceAccess, TurnRunner

__all__ = ["AskCog"]

QUESTION_MAX = 4000


class AskCog(commands.Cog):
    """The /ask command."""

    def __init__(self, pipeline: TurnRunner, traces: TraceAccess, places: PlaceSettingsAccess,
                 status_interval_s: float = 1.0) -> None:
        self.pipeline = pipeline
        self.traces = traces
        self.places = places
        self.status_interval_s = status_interval_s

    @app_commands.command(name="ask", description="Ask the agent a question")
    @app_commands.describe(
        question="What you want to know",
        trace="Also show the steps in a thread",
        private="Only you see the answer",
    )
    async def ask(
        self,
        interaction: discord.Interaction,
        question: app_commands.Range[str, 1, QUESTION_MAX],
        trace: bool = False,
        private: bool = False,
    ) -> None:
        """Ask the agent."""
        await interaction.response.defer(thinking=True, ephemeral=private)

        async def edit_status(text: str) -> None:
            await interaction.edit_original_response(content=text)

        status = ThrottledStatus(edit_status, self.status_interval_s)
        thread = None if private else await self._auto_thread(interaction, question)

        async def on_event(event: AgentEvent) -> None:
            if (line := status_line(event)) is not None:
                status.update(line)

        try:
            result = await self.pipeline.handle(
                request_from_interaction(interaction, question, want_trace=trace, thread=thread), on_event
            )
        finally:
            await status.close(flush=False)  # the answer replaces the status line
        if thread is not None:
            answer = await send_in_parts(thread, result.text)
            await interaction.edit_original_response(content=f"Answered in {thread.mention}.")
        else:
            parts = answer_parts(result.text)
            answer = await interaction.edit_original_response(content=parts[0])
            for part in parts[1:]:
                await interaction.followup.send(part, ephemeral=private)
        if result.trace_id is None:
            return
        if not private:
            await self.traces.attach_message(result.trace_id, str(answer.id))
        if trace:
            record = await self.traces.get_trace(result.trace_id)
            if record is None:
                return
            if private:
                for part in trace_messages(record):
                    await interaction.followup.send(part, ephemeral=True)
            else:
                await post_trace(answer, record)

    async def _auto_thread(self, interaction: discord.Interaction, question: str) -> discord.Thread | None:
        """A public thread for the answer when auto-thread is on in this text channel."""
        channel = interaction.channel
        if interaction.guild_id is None or not isinstance(channel, discord.TextChannel):
            return None
        place = self.places.for_place(str(interaction.guild_id), (str(channel.id),))
        if not place.auto_thread:
            return None
        thread = await channel.create_thread(name=thread_name(question), type=discord.ChannelType.public_thread)
        await self.places.mark_bot_thread(str(interaction.guild_id), str(thread.id), str(interaction.client.user.id))  # type: ignore[union-attr]
        return thread
