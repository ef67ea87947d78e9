"""Splitting an answer into Discord messages of at most 2,000 characters.

Parts break on line boundaries; a code block that spans a break is closed at the end of one part
and reopened (with its language tag) at the start of the next, so every part renders on its own.
A single line longer than a part is cut at the last space that fits, else hard. Pure text in,
text out: knows nothing of discord.py.
"""

from __future__ import annotations

import re

__all__ = ["DISCORD_MESSAGE_LIMIT", "split_message"]

DISCORD_MESSAGE_LIMIT = 2000
_FENCE = "```"
_FENCE_LANG = re.compile(r"```([\w+#.-]{0,20})")


def _fence_opener(line: str) -> str:
    """The fence to reopen a block with: backticks plus a short language tag, never the rest."""
    match = _FENCE_LANG.match(line.strip())
    return _FENCE + (match.group(1) if match else "")


def _cut_long_line(line: str, width: int) -> list[str]:
    """Cut one over-long line into pieces of at most `width`, preferring to break at a space."""
    pieces: list[str] = []
    while len(line) > width:
        cut = line.rfind(" ", width // 2, width)
        if cut <= 0:
            cut = width
        pieces.append(line[:cut])
        line = line[cut:].lstrip(" ") if line[cut:cut + 1] == " " else line[cut:]
    pieces.append(line)
    return pieces


def split_message(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """Split `text` into ordered parts of at most `limit` characters with intact code blocks.

    Whitespace-only text gives no parts (Discord refuses empty messages; callers decide what to
    send instead).
    """
    if limit < 64:
        raise ValueError(f"limit must be at least 64 characters, got {limit}")
    if not text.strip():
        return []
    closing = "\n" + _FENCE
    parts: list[str] = []
    lines: list[str] = []
    size = 0
    open_fence: str | None = None

    def flush() -> None:
        nonlocal lines, size
        body = "\n".join(lines)
        if open_fence is not None:
            body += closing
        if body.strip():
            parts.append(body)
        lines = [open_fence] if open_fence is not None else []
        size = len(open_fence) if open_fence is not None else 0

    # Room for the reopened fence, the newline before a line and the closing fence.
    width = limit - 2 * (len(_FENCE) + 22) - 2
    for raw_line in text.split("\n"):
        for line in _cut_long_line(raw_line, width):
            is_fence = line.strip().startswith(_FENCE)
            fence_after = open_fence
            if is_fence:
                fence_after = None if open_fence is not None else _fence_opener(line)
            added = len(line) + (1 if lines else 0)
            reserve = len(closing) if fence_after is not None else 0
            if lines and size + added + reserve > limit:
                flush()
                added = len(line) + (1 if lines else 0)
            lines.append(line)
            size += added
            open_fence = fence_after
    if lines:
        flush()
    return parts
