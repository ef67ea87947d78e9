"""What a person sees when they audit their memory: numbered entries with when, where and a link, older ones marked.

- `audit_entries`: the person's items (oldest first) as the numbered entries of `/memory show`
  and `/memory forget <number>`: one entry per stored exchange (their message and the answer kept
  beside it: the items of one turn), or one item alone (a fact); each with its date, its place
  (guild and channel, or a DM; and whether it was said in a private answer), the message it
  was said in when known, the ids of its items (to forget them), and whether it is `older`.
- `older`: an entry is marked older when a later entry shares a rare word with it (a word of
  at most `RARE_IN` entries): "I live in Lyon", then "I moved from Lyon to Berlin". Both stay;
  the mark says the first may be out of date, as the model is told for recalled memories
  (bot.turn.memory_tools.memory_lines). A word said in many entries names no one subject.
- `recalled_memories`: a trace's recalled memories (memory.stores.traces.Recalled) with what the
  memory still holds of them; one forgotten since is shown as such, never from a copy.
- `message_link`: the link of a Discord message from its ids (the one place that knows its form).

Part of bot/: reads memory/'s hits and traces; knows nothing of discord.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.turn.memory_reach import created_of
from bot.turn.privacy import is_private_scope
from memory.semantic import MemoryHit
from memory.semantic.ranking import tokenize
from memory.stores.traces import Recalled

__all__ = ["RARE_IN", "AuditEntry", "RecalledMemory", "audit_entries", "message_link", "place_of",
           "recalled_memories", "text_field"]

RARE_IN = 3  # a word in at most this many entries is rare enough to name one subject
_SPEAKERS = (("exchange", "you"), ("reply", "me"))


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One thing remembered, numbered from 1 in the person's list (oldest first)."""

    number: int
    kind: str                 # "exchange" (their message and my answer), "fact", or the item's kind
    text: str                 # "you: ... / me: ..." for an exchange
    created_at: float | None  # epoch seconds
    guild_id: str | None      # None: said in a DM (or the place is unknown)
    channel_id: str | None
    message_id: str | None    # the person's message, when it was one
    private: bool             # said in a DM or a private answer
    item_ids: tuple[str, ...]
    older: bool = False       # a later entry is on the same subject (`older`)


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    """One memory an answer recalled: its rank in the search that found it, and the item as the
    memory holds it now (`hit` None: forgotten since)."""

    rank: int
    search: str
    item_id: str
    hit: MemoryHit | None


def place_of(metadata: Mapping[str, object]) -> tuple[str | None, bool]:
    """Where an item was said, from its metadata: (guild id, None for a DM or an unknown
    place; whether it was said in a DM or a private answer)."""
    scope = metadata.get("scope")
    guild = scope.removeprefix("guild:").split(":", 1)[0] if isinstance(scope, str) and scope.startswith("guild:") else None
    private = is_private_scope(scope) or metadata.get("visibility") == "private"
    return guild, private


def text_field(metadata: Mapping[str, object], key: str) -> str | None:
    """The metadata value of `key` when it is a str with something in it; else None."""
    value = metadata.get(key)
    return value if isinstance(value, str) and value.strip() else None


def audit_entries(hits: Sequence[MemoryHit]) -> list[AuditEntry]:
    """`hits` (the person's items, oldest first) as numbered entries; see the module."""
    groups: dict[str, int] = {}
    built: list[dict] = []
    for hit in hits:
        meta = hit.metadata
        kind, trace = meta.get("kind"), text_field(meta, "trace_id")
        if kind in ("exchange", "reply") and trace is not None and trace in groups:
            group = built[groups[trace]]
        else:
            guild, private = place_of(meta)
            group = {"kind": "exchange" if kind in ("exchange", "reply") else str(kind or "item"),
                     "parts": {}, "created": created_of(meta), "guild": guild, "private": private,
                     "channel": text_field(meta, "channel_id"), "message": None, "ids": [], "words": set()}
            if kind in ("exchange", "reply") and trace is not None:
                groups[trace] = len(built)
            built.append(group)
        text = " ".join(hit.text.split())
        group["ids"].append(hit.id)
        group["parts"][kind if kind in ("exchange", "reply") and trace is not None else "item"] = text
        if kind != "reply":  # the person's words say what the entry is about, not my answer
            group["words"] |= set(tokenize(hit.text))
            group["message"] = group["message"] or text_field(meta, "message_id")
    seen_in = Counter(word for group in built for word in group["words"])
    later: set[str] = set()
    older = [False] * len(built)
    for index in sorted(range(len(built)), key=lambda i: (built[i]["created"] or 0.0, i), reverse=True):
        rare = {word for word in built[index]["words"] if seen_in[word] <= RARE_IN}
        older[index] = bool(rare & later)
        later |= rare
    entries = []
    for number, (group, is_older) in enumerate(zip(built, older, strict=True), 1):
        parts = group["parts"]
        text = parts.get("item") or " / ".join(f"{who}: {parts[k]}" for k, who in _SPEAKERS if k in parts)
        entries.append(AuditEntry(number, group["kind"], text, group["created"], group["guild"], group["channel"],
                                  group["message"], group["private"], tuple(group["ids"]), is_older))
    return entries


def recalled_memories(recalled: Sequence[Recalled], items: Mapping[str, MemoryHit]) -> list[RecalledMemory]:
    """A trace's recalled memories in the order recalled, each with the person's item of that
    id in `items` (their memory now), or None when it is no longer there."""
    return [RecalledMemory(r.rank, r.search, r.item_id, items.get(r.item_id)) for r in recalled]


def message_link(guild_id: str | None, channel_id: str | None, message_id: str | None) -> str | None:
    """The Discord link of a message ("@me" stands for a DM's guild), or None without its ids."""
    if not channel_id or not message_id:
        return None
    return f"https://discord.com/channels/{guild_id or '@me'}/{channel_id}/{message_id}"
