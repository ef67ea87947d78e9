"""`/ask question [trace] [private]`: defer at once, show live status, then the answer.

Discord allows 3 seconds before an interaction must be acknowledged, so the command defers
first and does everything else after. The status line is edited at most about once a second.
`private` answers ephemerally; `trace` posts the steps in a thread under the answer (for a
private answer, as private followups instead: a public thread would leak it).
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from agent.events import AgentEvent
from bot.discord_app.delivery import answer_parts, post_trace, trace_messages
from bot.discord_app.status import ThrottledStatus, status_line
from bot.discord_app.translate import request_from_interaction
from bot.interfaces import TraceAccess, TurnRunner

__all__ = ["AskCog"]

QUESTION_MAX = 4000


class AskCog(commands.Cog):
    """The /ask command."""

    def __init__(self, pipeline: TurnRunner, traces: TraceAccess, status_interval_s: float = 1.0) -> None:
        self.pipeline = pipeline
        self.traces = traces
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

        async def on_event(event: AgentEvent) -> None:
            if (line := status_line(event)) is not None:
                status.update(line)

        try:
            result = await self.pipeline.handle(
                request_from_interaction(interaction, question, want_trace=trace), on_event
            )
        finally:
            await status.close(flush=False)  # the answer replaces the status line
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
