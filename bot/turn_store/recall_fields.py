"""What a stored message carries for the memory's ranking: who said it, what came before it, the dates it names.

The memory ranks by metadata written with an item (memory.semantic.item_text, memory.semantic.ranking;
docs/decisions/0028-locomo-recall.md measured each on LoCoMo's conversations):
- `speaker`: the person's display name, embedded and keyword-indexed as "<name>: <text>", and
  weighed when a question names them ("what did Ana say about ...").
- `before`: the lines of the person's own conversation just before the message (their previous
  message and the bot's answer to it, each "<name>: <text>"), keyword-indexed only: "Yes, it
  was amazing" is found by the question it answered. As for a short message's `context`
  (bot.turn_store.persistence), another person's words never ride along: they are not this
  person's to keep (nor to export). A message that already carries `context` needs no `before`.
- `dates`: the relative dates it names ("yesterday", "last Saturday") resolved against the time
  it was said (memory.semantic.time_mentions). dateparser's first call loads its data for about
  a second, so `recall_fields` is for a worker thread (`asyncio.to_thread`), never the event loop.

Part of bot/: builds metadata for memory/; knows nothing of Discord or of the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.turn.history import answered_person
from memory.semantic.item_text import BEFORE_KEY, DATES_KEY
from memory.semantic.time_mentions import dates_of
from memory.semantic.validation import SPEAKER_KEY, visible
from memory.stores.buffer import BufferedMessage

__all__ = ["BEFORE_CHARS", "SPEAKER_CHARS", "before_lines", "recall_fields"]

SPEAKER_CHARS = 100
BEFORE_LINE_CHARS = 500
BEFORE_CHARS = 1200  # metadata strings over 2,000 characters are refused by the memory
ASSISTANT_NAME = "bot"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " [...]"


def before_lines(recent: Sequence[BufferedMessage], user_id: str, now: datetime, max_age_s: float) -> list[str]:
    """The messages of `recent` (a channel's last messages, oldest first) that belong to
    `user_id`'s own conversation and were said within `max_age_s` before `now`, as
    "<name>: <text>" lines: the person's own messages and the bot's answers to them. The
    run stops at the first message that is not theirs, counted from the newest: what came
    before another person's words is another conversation."""
    lines: list[str] = []
    for index in range(len(recent) - 1, -1, -1):
        message = recent[index]
        if (now - message.created_at).total_seconds() > max_age_s:
            break
        if message.role == "assistant":
            if answered_person(recent, index) != user_id:
                break
            name = ASSISTANT_NAME
        elif message.role == "user" and message.author_id == user_id:
            name = visible(message.author_name)[:SPEAKER_CHARS] or user_id
        else:
            break
        if text := visible(message.content):
            lines.append(f"{name}: {_clip(text, BEFORE_LINE_CHARS)}")
    return list(reversed(lines))


def recall_fields(speaker: str, text: str, said_at: datetime, before: Sequence[str] = ()) -> dict[str, str]:
    """The `speaker`, `before` and `dates` metadata of a message `speaker` said at `said_at`
    (timezone-aware), with the conversation's `before` lines; a field with nothing to say is
    left out. Slow on its first call (dateparser): run it in a worker thread."""
    fields: dict[str, str] = {}
    if who := visible(speaker)[:SPEAKER_CHARS].strip():
        fields[SPEAKER_KEY] = who
    if joined := "\n".join(line for line in before if line.strip()):
        fields[BEFORE_KEY] = joined[-BEFORE_CHARS:] if len(joined) > BEFORE_CHARS else joined
    if dates := dates_of(text, said_at.timestamp()):
        fields[DATES_KEY] = dates[:BEFORE_CHARS]
    return fields
