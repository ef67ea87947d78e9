"""The status line ("calling calculator…") an agent event shows while a slash command works.

Shown by bot.discord_app.live_reply until the answer starts. Imports agent.events for the event
types only; never discord.py.
"""

from __future__ import annotations

from agent.events import AgentEvent, Nudge, ToolFinished, ToolStarted

__all__ = ["status_line"]


def status_line(event: AgentEvent) -> str | None:
    """The status text an agent event shows while a slash command works (None: no change).

    The deferred response already reads "thinking"; a tool call shows its name while it runs,
    and still names it once done (a fast tool's two updates coalesce into one edit, which
    should not hide which tool ran). The final answer needs no status: it replaces the line.
    """
    if isinstance(event, ToolStarted):
        return f"calling {event.tool}…"
    if isinstance(event, ToolFinished):
        return f"{event.tool} done, thinking…"
    if isinstance(event, Nudge):
        return "thinking…"
    return None
