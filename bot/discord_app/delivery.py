"""Sending to Discord: a reply to a message, and a trace posted in a thread (a live answer's
parts: bot.discord_app.live_reply).

The client's allowed-mentions (set once on the client, see client.py) apply to every send here,
so nothing the model writes can ping @everyone, @here, a role or another user.
Imports discord.py and the pure renderers; never the pipeline.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord

from bot.discord_app.trace_render import render_steps, render_summary

if TYPE_CHECKING:
    from memory.stores.traces import TraceRecord

__all__ = ["EMPTY_ANSWER", "post_trace", "reply_to", "thread_name", "trace_messages"]

log = logging.getLogger(__name__)

EMPTY_ANSWER = "(I have no answer to show.)"
_THREAD_NAME_MAX = 90


async def reply_to(message: discord.Message, text: str) -> discord.Message:
    """Reply to `message` (pinging its author only: the client's allowed mentions keep
    `replied_user`); a deleted original gives a plain message."""
    reference = message.to_reference(fail_if_not_exists=False)
    return await message.channel.send(text, reference=reference)


def trace_messages(trace: TraceRecord) -> list[str]:
    """The trace as Discord messages: one per step, then the summary line."""
    summary = render_summary(
        steps=trace.steps,
        prompt_tokens=trace.prompt_tokens,
        completion_tokens=trace.completion_tokens,
        elapsed_ms=trace.elapsed_ms,
        outcome=trace.outcome,
    )
    return [*render_steps(trace.events), summary]


def thread_name(question: str, prefix: str = "") -> str:
    """A thread's name from a question, on one line, cut to fit (Discord allows 100)."""
    name = prefix + (" ".join(question.split()) or "answer")
    return name if len(name) <= _THREAD_NAME_MAX else name[: _THREAD_NAME_MAX - 1] + "…"


async def post_trace(anchor: discord.Message, trace: TraceRecord) -> discord.abc.Messageable:
    """Post `trace` step by step in a public thread started from `anchor` (the answer).

    An answer already inside a thread gets its trace in that thread (threads do not nest); an
    answer that already has a thread reuses it; a DM has no threads, so the steps follow the
    answer there. Returns where the trace went.
    """
    target: discord.abc.Messageable
    if anchor.guild is None:
        target = anchor.channel
    elif isinstance(anchor.channel, discord.Thread):
        target = anchor.channel
    elif anchor.thread is not None:
        target = anchor.thread
    else:
        target = await anchor.create_thread(name=thread_name(trace.question, "Trace: "))
    for part in trace_messages(trace):
        await target.send(part)
    return target
