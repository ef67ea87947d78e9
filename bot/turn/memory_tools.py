"""The per-turn memory tools: `recall_memory(query)` and `remember(fact)`.

Both act for the person who asked, in the place they asked: the user comes from the runtime's
ToolContext and where recall looks from the turn (bot.turn.privacy), never from the model (the tools have no user parameter, and the
schema refuses extra arguments). `remember` does not write at once: it collects the fact in
the turn's `pending` list, and the pipeline stores it with the rest of the turn, so that a turn
that fails stores nothing (no half turn).

Recalled memories reach the model as the lines of `memory_lines` (in the prompt and in
`recall_memory`'s answer): newest first, each with its date, a memory older than another
recalled one on the same subject marked "earlier" (so "I moved from Lyon to Berlin" reads as
replacing "I live in Lyon"), what the bot itself said marked as its reply, and a short
message shown with the message it answered. `MemoryTools.recall_lines` is the turn's own
recall: a memory store that cannot be reached gives None, and the turn goes on without memory.

Part of bot/: joins agent/ (tools) and memory/ (the store).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from agent.tools.registry import Tool, ToolContext, ToolError, ToolFn, ToolRegistry
from bot.turn.memory_reach import created_of, search_reach
from bot.turn.privacy import MemoryPolicy, Reach
from memory.errors import StoreUnavailable
from memory.semantic import MemoryHit, UserMemory
from memory.semantic.ranking import tokenize
from memory.stores.traces import Recalled

__all__ = ["MAX_FACT_CHARS", "MAX_FACTS_PER_TURN", "RECALL_QUERY_CHARS", "MemoryTools", "format_memory_line",
           "memory_lines"]

MAX_FACT_CHARS = 1000
RECALL_QUERY_CHARS = 2000  # a huge query searches memory by its start (the turn's recall, the tool)
MAX_FACTS_PER_TURN = 5
RECALL_LINE_CHARS = 600
CONTEXT_SHOWN_CHARS = 160

log = logging.getLogger(__name__)


def _one_line(text: str, max_chars: int | None) -> str:
    body = " ".join(text.split())
    if max_chars is not None and len(body) > max_chars:
        body = body[:max_chars].rstrip() + " [...]"
    return body


def format_memory_line(text: str, metadata: dict[str, Any] | None, *,
                       max_chars: int | None = None, earlier: bool = False) -> str:
    """One memory as the model reads it: "(YYYY-MM-DD) text", the date from created_at;
    "(YYYY-MM-DD, earlier)" when a newer memory on its subject was recalled with it. The
    bot's own reply reads "you replied to “question”: answer"; a message stored with the
    message it answered (metadata `context`) ends with "(answering: “...”)"."""
    meta = metadata or {}
    created = created_of(meta)
    stamp = [f"{datetime.fromtimestamp(created, UTC):%Y-%m-%d}"] if created is not None else []
    stamp += ["earlier"] if earlier else []
    prefix = f"({', '.join(stamp)}) " if stamp else ""
    body = _one_line(text, max_chars)
    context = meta.get("context")
    if isinstance(context, str) and context.strip():
        shown = _one_line(context, CONTEXT_SHOWN_CHARS)
        if meta.get("kind") == "reply":
            return f"{prefix}you replied to “{shown}”: {body}"
        return f"{prefix}{body} (answering: “{shown}”)"
    return prefix + body


def memory_lines(hits: Sequence[MemoryHit], *, max_chars: int | None = None) -> list[str]:
    """Recalled memories as lines, newest first; a memory sharing a word (BM25's tokens)
    with a newer one among them is marked earlier: it may have been superseded."""
    # stable: equal times keep their rank
    ordered = sorted(hits, key=lambda hit: created_of(hit.metadata) or 0.0, reverse=True)
    seen: set[str] = set()
    lines = []
    for hit in ordered:
        words = set(tokenize(hit.text))
        lines.append(format_memory_line(hit.text, hit.metadata, max_chars=max_chars,
                                        earlier=bool(words & seen)))
        seen |= words
    return lines



class MemoryTools:
    """The two memory tools of one store; `for_turn` binds them to a turn: `recall_memory` to
    where the turn may recall (a bot.turn.privacy.Reach), `remember` to the turn's pending list.

    The tools' schemas are derived once here, not per turn (every turn of a burst builds its
    registry on the event loop): a turn's tools are copies with their own functions.
    """

    def __init__(self, memory: UserMemory, *, policy: MemoryPolicy | None = None, k: int = 5,
                 timeout_s: float | None = None) -> None:
        self._memory = memory
        self._policy = policy or MemoryPolicy()
        self._k = k
        self._recall = Tool.from_function(_recall_in(memory, None, self._policy, k), timeout_s=timeout_s)
        self._remember = Tool.from_function(_remember_into([]), timeout_s=timeout_s)  # a turn's: for_turn

    async def recall_lines(self, user_id: str, query: str, reach: Reach, *, k: int,
                           max_chars: int, recalled: list[Recalled] | None = None) -> list[str] | None:
        """The person's memories within ``reach`` for a turn's prompt (`memory_lines`); None
        when the memory store cannot be reached (logged): the turn is answered without memory,
        saying so. The hits go to ``recalled`` (search "prompt", ranked), for the turn's trace."""
        try:
            hits = await search_reach(self._memory, user_id, query, k, reach)
        except StoreUnavailable as exc:
            log.warning("recall for user %s failed, answering without memory: %s", user_id, exc)
            return None
        if recalled is not None:
            recalled.extend(Recalled(hit.id, rank, "prompt") for rank, hit in enumerate(hits, 1))
        return memory_lines(hits, max_chars=max_chars)

    def for_turn(self, pending: list[str], reach: Reach | None = None,
                 recalled: list[Recalled] | None = None) -> ToolRegistry:
        """A registry with both tools: recall looks within ``reach`` (None: where a public turn
        of the tool context's place may, by the policy) and adds its hits to ``recalled``
        (searches "tool 1", "tool 2", ...); `remember` appends to ``pending`` (stored by the
        pipeline with the rest of the turn)."""
        registry = ToolRegistry()
        registry.register(self._recall if reach is None and recalled is None else dataclasses.replace(
            self._recall, fn=_recall_in(self._memory, reach, self._policy, self._k, recalled)))
        registry.register(dataclasses.replace(self._remember, fn=_remember_into(pending)))
        return registry


def _recall_in(memory: UserMemory, reach: Reach | None, policy: MemoryPolicy, k: int,
               recalled: list[Recalled] | None = None) -> ToolFn:
    """The `recall_memory` tool's function, searching within ``reach`` (None: the public reach
    of the context's place); each call's hits go to ``recalled`` when given."""
    calls = [0]

    async def recall_memory(ctx: ToolContext, query: str) -> str:
        """Search what this person told you in earlier conversations (their memory, here).

        Args:
            query: what to look for, in a few words (e.g. "favourite tea", "trip last week")
        """
        query = query.strip()[:RECALL_QUERY_CHARS]
        if not query:
            raise ToolError("query is empty; say in a few words what to look for")
        where = reach if reach is not None else policy.recall(ctx.guild_id, False, None)
        hits = await search_reach(memory, ctx.user_id, query, k, where)
        if recalled is not None:
            calls[0] += 1
            recalled.extend(Recalled(hit.id, rank, f"tool {calls[0]}") for rank, hit in enumerate(hits, 1))
        if not hits:
            return "Nothing remembered about that."
        return "\n".join(f"- {line}" for line in memory_lines(hits, max_chars=RECALL_LINE_CHARS))

    return recall_memory


def _remember_into(pending: list[str]) -> ToolFn:
    """The `remember` tool's function for one turn: it appends to that turn's ``pending``."""

    async def remember(ctx: ToolContext, fact: str) -> str:
        """Keep a fact the person explicitly asked you to remember, for later conversations.

        Args:
            fact: the fact, as one short sentence in the third person (e.g. "They are vegetarian")
        """
        fact = " ".join(fact.split())
        if not fact:
            raise ToolError("fact is empty; give the fact to keep as one short sentence")
        if len(pending) >= MAX_FACTS_PER_TURN:
            raise ToolError(f"at most {MAX_FACTS_PER_TURN} facts can be kept per message")
        if len(fact) > MAX_FACT_CHARS:
            fact = fact[:MAX_FACT_CHARS].rstrip() + " [...]"
        pending.append(fact)
        return f"Will remember: {fact}"

    return remember
