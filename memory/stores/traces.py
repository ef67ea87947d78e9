"""The trace store: the steps of each answered turn, findable by the answer's Discord message.

One row per run: who asked where, the question, the agent's events (their ``to_dict()`` form,
stored as one JSON text, each text in them cut at MAX_EVENT_TEXT characters; a value JSON
cannot hold is stored as its str()), the outcome, answer,
step and token counts, the Discord message or interaction holding the answer, and the memories
the answer recalled (``Recalled``: item id, rank and which search; the items' words stay in the
memory store alone, so forgetting an item leaves no copy of it here). Indexed by
message id and by (user, channel, time) for "the last answer I got here". Traces older than the retention
period (TRACE_RETENTION_DAYS) are deleted by ``prune``.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from dataclasses import dataclass
from datetime import datetime

from memory.stores.database import Database, epoch_us, from_epoch_us, require_id, storable_text

__all__ = ["MAX_RECALLED", "Recalled", "TraceRecord", "TraceStore"]

MAX_RECALLED = 200  # memories kept per trace (a turn recalls a few per search, a search per step)
MAX_EVENT_TEXT = 200_000  # characters kept of any one text in the events (a hostile reply may be megabytes)


@dataclass(frozen=True, slots=True)
class Recalled:
    """One memory an answer recalled: the memory item's id, its rank (1 = best) in the search
    that found it, and that search: "prompt" (the turn's own recall) or "tool" (the model's
    recall_memory calls, numbered in order: "tool 1", "tool 2", ...)."""

    item_id: str
    rank: int
    search: str = "prompt"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One run of the agent, as stored."""

    trace_id: str
    channel_id: str
    guild_id: str | None  # None = a DM
    user_id: str
    question: str
    events: list[dict]
    outcome: str
    answer: str
    steps: int
    prompt_tokens: int
    completion_tokens: int
    elapsed_ms: float
    created_at: datetime  # timezone-aware
    message_id: str | None = None
    interaction_id: str | None = None
    recalled: tuple[Recalled, ...] = ()


def _recalled_json(recalled: tuple[Recalled, ...]) -> str | None:
    if not isinstance(recalled, tuple) or not all(isinstance(r, Recalled) for r in recalled):
        raise TypeError("recalled must be a tuple of Recalled")
    if not recalled:
        return None
    for one in recalled:
        require_id("recalled item_id", one.item_id)
        _require_count("recalled rank", one.rank)
    return json.dumps([[r.item_id, r.rank, r.search] for r in recalled[:MAX_RECALLED]])


def _recalled_of(text: str | None) -> tuple[Recalled, ...]:
    if not text:
        return ()
    return tuple(Recalled(str(item_id), int(rank), str(search)) for item_id, rank, search in json.loads(text))


def _cut_texts(value: object) -> object:
    """``value`` with every string over MAX_EVENT_TEXT cut, saying how much was left out."""
    if isinstance(value, str):
        if len(value) <= MAX_EVENT_TEXT:
            return value
        return value[:MAX_EVENT_TEXT] + f" [... {len(value) - MAX_EVENT_TEXT} more characters not kept]"
    if isinstance(value, dict):
        return {key: _cut_texts(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_cut_texts(item) for item in value]
    return value


def _require_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0: {value}")


def _row_of(rec: TraceRecord) -> tuple[object, ...]:
    if not isinstance(rec, TraceRecord):
        raise TypeError(f"expected a TraceRecord, got {type(rec).__name__}")
    for name in ("trace_id", "channel_id", "user_id"):
        require_id(name, getattr(rec, name))
    for name in ("guild_id", "message_id", "interaction_id"):
        require_id(name, getattr(rec, name), optional=True)
    for name in ("question", "outcome", "answer"):
        if not isinstance(getattr(rec, name), str):
            raise TypeError(f"{name} must be a str, got {type(getattr(rec, name)).__name__}")
    for name in ("steps", "prompt_tokens", "completion_tokens"):
        _require_count(name, getattr(rec, name))
    if not isinstance(rec.events, list) or not all(isinstance(e, dict) for e in rec.events):
        raise TypeError("events must be a list of dicts (AgentEvent.to_dict())")
    elapsed = float(rec.elapsed_ms)
    if not math.isfinite(elapsed) or elapsed < 0:
        raise ValueError(f"elapsed_ms must be a finite number >= 0: {rec.elapsed_ms!r}")
    return (
        rec.trace_id,
        rec.channel_id,
        rec.guild_id,
        rec.user_id,
        storable_text(rec.question),
        json.dumps(_cut_texts(rec.events), default=str),
        rec.outcome,
        storable_text(rec.answer),
        rec.steps,
        rec.prompt_tokens,
        rec.completion_tokens,
        elapsed,
        epoch_us(rec.created_at),
        rec.message_id,
        rec.interaction_id,
        _recalled_json(rec.recalled),
    )


def _record_of(row: sqlite3.Row) -> TraceRecord:
    return TraceRecord(
        trace_id=row["trace_id"],
        channel_id=row["channel_id"],
        guild_id=row["guild_id"],
        user_id=row["user_id"],
        question=row["question"],
        events=json.loads(row["events_json"]),
        outcome=row["outcome"],
        answer=row["answer"],
        steps=row["steps"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        elapsed_ms=row["elapsed_ms"],
        created_at=from_epoch_us(row["created_at_us"]),
        message_id=row["message_id"],
        interaction_id=row["interaction_id"],
        recalled=_recalled_of(row["recalled_json"]),
    )


BY_MESSAGE_SQL = "SELECT * FROM traces WHERE message_id = ? ORDER BY created_at_us DESC, rowid DESC LIMIT 1"
LAST_FOR_SQL = (
    "SELECT * FROM traces WHERE user_id = ? AND channel_id = ? ORDER BY created_at_us DESC, rowid DESC LIMIT 1"
)
PRUNE_BATCH = 1000  # traces are large (up to about 1 MB each): smaller batches than the buffer's
PRUNE_SQL = ("DELETE FROM traces WHERE trace_id IN "
             "(SELECT trace_id FROM traces WHERE created_at_us < ? LIMIT ?)")


class TraceStore:
    """Stored agent runs on a Database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(self, rec: TraceRecord) -> None:
        """Store a run; a trace id that is already stored raises ValueError."""
        row = _row_of(rec)
        try:
            await self._db.execute(
                "INSERT INTO traces (trace_id, channel_id, guild_id, user_id, question, events_json,"
                " outcome, answer, steps, prompt_tokens, completion_tokens, elapsed_ms,"
                " created_at_us, message_id, interaction_id, recalled_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"trace {rec.trace_id!r} is already stored") from exc

    async def attach_message(self, trace_id: str, message_id: str) -> None:
        """Link a stored trace to the Discord message holding its answer (KeyError if unknown)."""
        require_id("trace_id", trace_id)
        require_id("message_id", message_id)
        changed = await self._db.execute(
            "UPDATE traces SET message_id = ? WHERE trace_id = ?", (message_id, trace_id)
        )
        if changed == 0:
            raise KeyError(f"no trace {trace_id!r}")

    async def get(self, trace_id: str) -> TraceRecord | None:
        """The trace with this id, or None."""
        require_id("trace_id", trace_id)
        row = await self._db.fetchone("SELECT * FROM traces WHERE trace_id = ?", (trace_id,))
        return None if row is None else _record_of(row)

    async def by_message(self, message_id: str) -> TraceRecord | None:
        """The trace whose answer is this Discord message (the newest, if several), or None."""
        require_id("message_id", message_id)
        row = await self._db.fetchone(BY_MESSAGE_SQL, (message_id,))
        return None if row is None else _record_of(row)

    async def prune(self, older_than: datetime) -> int:
        """Delete traces created before ``older_than`` (the retention period); returns how
        many. In batches, each its own transaction (inside a caller's, all one)."""
        total = await self._db.delete_in_batches(PRUNE_SQL, epoch_us(older_than), PRUNE_BATCH)
        if total:
            log.info("pruned %d traces older than %s", total, older_than.isoformat())
        return total

    async def last_for(self, user_id: str, channel_id: str) -> TraceRecord | None:
        """The newest trace of ``user_id``'s questions in ``channel_id``, or None."""
        require_id("user_id", user_id)
        require_id("channel_id", channel_id)
        row = await self._db.fetchone(LAST_FOR_SQL, (user_id, channel_id))
        return None if row is None else _record_of(row)
