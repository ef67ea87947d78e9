"""Rendering a stored trace as Discord messages: one per step, then a summary line.

Works on the JSON dicts the trace store keeps (the agent's events' `to_dict()`), so a trace
written by an older version still renders: unknown event types are skipped, missing fields
show as blanks. Long fields are cut with a visible note so every message fits Discord's limit.
The thread is the channel's to read: what `recall_memory` found (the asker's memories, which
/trace shows to the asker alone) is left out; the step, its input and its time stay. Pure text:
imports neither discord.py nor memory/.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.discord_app.replies import DISCORD_MESSAGE_LIMIT

__all__ = ["render_steps", "render_summary"]

_THOUGHT_MAX = 400
_INPUT_MAX = 500
_OBSERVATION_MAX = 800
_ANSWER_MAX = 900
# Tools whose observation is the asker's memories (bot.turn.memory_tools; test_discord_memory_audit
# calls the tool by this name).
PERSONAL_OBSERVATIONS = frozenset({"recall_memory"})
WITHHELD = "(the asker's memories: not shown here)"


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" … [{len(text) - limit} more characters]"


def _fenced(text: str) -> str:
    # A backtick run inside would end the block early; a zero-width space breaks it up.
    return "```\n" + text.replace("```", "`\u200b``") + "\n```"


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in text.splitlines() or [""])


def _seconds(ms: Any) -> str:
    try:
        return f"{float(ms) / 1000:.2f} s"
    except (TypeError, ValueError):
        return "? s"


def _tool_step(n: int, event: Mapping[str, Any]) -> str:
    status = "ok" if event.get("ok", True) else "error"
    lines = [f"**Step {n}** · `{event.get('tool', '?')}` · {status} · {_seconds(event.get('elapsed_ms'))}"]
    if thought := str(event.get("thought") or "").strip():
        lines.append(_quote(_cut(thought, _THOUGHT_MAX)))
    args = json.dumps(event.get("args") or {}, ensure_ascii=False)
    lines.append("Input:\n" + _fenced(_cut(args, _INPUT_MAX)))
    if event.get("tool") in PERSONAL_OBSERVATIONS:
        lines.append(f"Observation: {WITHHELD}")
    else:
        lines.append("Observation:\n" + _fenced(_cut(str(event.get("observation", "")), _OBSERVATION_MAX)))
    return "\n".join(lines)


def _nudge_step(n: int, event: Mapping[str, Any]) -> str:
    return f"**Step {n}** · the model's reply was not usable: {_cut(str(event.get('problem', '')), _THOUGHT_MAX)}"


def _final_step(n: int, event: Mapping[str, Any]) -> str:
    lines = [f"**Step {n}** · final answer"]
    if thought := str(event.get("thought") or "").strip():
        lines.append(_quote(_cut(thought, _THOUGHT_MAX)))
    lines.append(_cut(str(event.get("answer", "")), _ANSWER_MAX))
    return "\n".join(lines)


_RENDERERS = {"tool_finished": _tool_step, "nudge": _nudge_step, "final_answer": _final_step}


def render_steps(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """One message per step (tool call, nudge, final answer), in order."""
    messages: list[str] = []
    for event in events:
        render = _RENDERERS.get(str(event.get("type")))
        if render is not None:
            messages.append(render(len(messages) + 1, event)[:DISCORD_MESSAGE_LIMIT])
    return messages


def render_summary(*, steps: int, prompt_tokens: int, completion_tokens: int, elapsed_ms: float, outcome: str) -> str:
    """The closing line: steps, tokens, total time and outcome."""
    total = prompt_tokens + completion_tokens
    return (
        f"**Summary** · {steps} step{'s' if steps != 1 else ''} · {total:,} tokens "
        f"({prompt_tokens:,} in, {completion_tokens:,} out) · {_seconds(elapsed_ms)} · {outcome}"
    )
