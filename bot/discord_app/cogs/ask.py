"""`/ask question [trace] [private]`: defer at once, show live status and the growing answer.

Discord allows 3 seconds before an interaction must be acknowledged, so the command defers
first and does everything else after. The deferred response then shows the status line
("calling calculator…") and the answer as it streams (bot.discord_app.live_reply: throttled
edits, followups past 2,000 characters); a turn that outlives the interaction's token goes on
in channel messages (a DM when private). `private` answers ephemerally; `trace` posts the steps
in a thread under the answer (for a private answer, as private followups instead: a public
thread would leak it). `image` goes to the model when it can see images (bot.discord_app.images).
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from agent.events import AgentEvent
from bot.config import Settings
from bot.discord_app.delivery import post_trace, trace_messages
from bot.discord_app.images import take_images
from bot.discord_app.live_reply import LiveOptions, LiveReply
from bot.discord_app.live_targets import InteractionTarget
from bot.discord_app.translate import request_from_interaction
from bot.pipeline import TurnPipeline

__all__ = ["AskCog"]

QUESTION_MAX = 4000


class AskCog(commands.Cog):
    """The /ask command."""

    def __init__(self, pipeline: TurnPipeline, settings: Settings, live: LiveOptions | None = None) -> None:
        self.pipeline = pipeline
        self.settings = settings
        self.live = live or LiveOptions()

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
        seen = await take_images([image] if image is not None else [], self.settings)
        reply = LiveReply(target, interval_s=self.live.edit_interval_s, preface=seen.preface)
        if seen.problems:  # a bad image: say so, rather than answer without it
            await reply.finish(" ".join(seen.problems))
            return

        async def on_event(event: AgentEvent) -> None:
            reply.feed(event)

        try:
            result = await self.pipeline.handle(
                request_from_interaction(interaction, seen.question(question), want_trace=trace,
                                         images=seen.images), on_event
            )
        except BaseException:
            await reply.abandon()
            raise
        answer = (await reply.finish(result.text))[0]
        if result.trace_id is None:
            return
        if not private:
            await self.pipeline.attach_message(result.trace_id, str(answer.id))
        if trace:
            record = await self.pipeline.get_trace(result.trace_id)
            if record is None:
                return
            if private:
                for part in trace_messages(record):
                    await interaction.followup.send(part, ephemeral=True)
            else:
                await post_trace(answer, record)
