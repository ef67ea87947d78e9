"""A channel's buffered messages as a transcript the model reads as quoted material.

One line per message, "[HH:MM] name (user id): text" (the bot's own: "[HH:MM] you (the bot):"),
names cleaned of control characters and bounded, the whole quoted line by line behind "> "
(bot.turn.history.quoted), so nothing in it passes for an instruction. Used by /tldr and by the
running summary.

Part of bot/: pure functions over memory.stores.buffer's records.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from memory.stores.buffer import BufferedMessage

__all__ = ["transcript_lines"]

NAME_CHARS = 64


def _speaker(m: BufferedMessage) -> str:
    if m.role == "assistant":
        return "you (the bot)"
    shown = "".join(ch for ch in m.author_name if unicodedata.category(ch)[0] != "C")
    shown = " ".join(shown.split())[:NAME_CHARS] or "someone"
    return f"{shown} (user {m.author_id})"


def transcript_lines(messages: Sequence[BufferedMessage]) -> list[str]:
    """The messages (oldest first) as transcript lines, a message's own lines joined by " / "."""
    return [f"[{m.created_at:%H:%M}] {_speaker(m)}: {' / '.join(m.content.split(chr(10)))}" for m in messages]
