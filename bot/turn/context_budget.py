"""Fit what is sent to the model into a token budget: question, channel history, memories.

Order of sacrifice: a single over-long message (the question, one history message, one memory)
is first cut to at most half the budget with a visible marker (memory.tokens.truncate_to_tokens);
then the oldest history messages are dropped, down to the last exchange (KEEP_RECENT messages,
what "it" and "that" refer to);
then the least relevant memories (memories arrive best first); then the channel's running
summary (bot.knowledge.summary: it stands for what was dropped before, so it goes after the
history it replaces, and is cut to a quarter of the budget); then that last exchange. The
question is never dropped. Token counts are memory.tokens.estimate_tokens estimates plus a small per-message
overhead for the chat format.

Part of bot/: pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.tokens import estimate_tokens, truncate_to_tokens

__all__ = ["KEEP_RECENT", "MESSAGE_OVERHEAD_TOKENS", "MIN_BUDGET_TOKENS", "Budgeted", "fit_context",
           "message_tokens"]

MESSAGE_OVERHEAD_TOKENS = 4
MIN_BUDGET_TOKENS = 64
KEEP_RECENT = 2


@dataclass(frozen=True, slots=True)
class Budgeted:
    """The parts that fit, and what had to go."""

    question: str
    history: list[dict]  # the running summary's message first, when it was given and kept
    memories: list[str]
    dropped_history: int
    dropped_memories: int
    cut_messages: int
    tokens: int
    summary_kept: bool = False


def message_tokens(text: str) -> int:
    """Estimated tokens of one chat message carrying ``text``."""
    return estimate_tokens(text) + MESSAGE_OVERHEAD_TOKENS


def fit_context(question: str, history: Sequence[dict], memories: Sequence[str], *,
                budget: int, summary: dict | None = None) -> Budgeted:
    """Fit ``question`` + ``history`` (oldest first, chat dicts with "content") + ``memories``
    (best first) into ``budget`` estimated tokens; ``summary`` (a chat message standing for the
    history before ``history``) goes first in the history when it fits."""
    budget = max(budget, MIN_BUDGET_TOKENS)
    cap = budget // 2 - MESSAGE_OVERHEAD_TOKENS  # >= 28 tokens: room for the marker and a start
    cut = 0

    def capped(text: str) -> str:
        nonlocal cut
        short = truncate_to_tokens(text, cap)
        if short is not text:
            cut += 1
        return short or ""

    q = capped(question)
    hist = [dict(m, content=capped(m.get("content") or "")) for m in history]
    mems = [capped(m) for m in memories]

    q_cost = message_tokens(q)
    hist_costs = [message_tokens(m["content"]) for m in hist]
    mem_costs = [estimate_tokens(m) + 1 for m in mems]  # one line each in the system prompt
    total = q_cost + sum(hist_costs) + sum(mem_costs)

    dropped_history = 0

    def drop_history(down_to: int) -> None:
        nonlocal dropped_history, total
        while total > budget and len(hist) - dropped_history > down_to:
            total -= hist_costs[dropped_history]
            dropped_history += 1

    head: list[dict] = []
    if summary is not None:
        short = truncate_to_tokens(summary.get("content") or "", max(budget // 4, 1))
        if short:
            head = [dict(summary, content=short)]
            cut += short is not summary.get("content")
            total += message_tokens(short)

    drop_history(KEEP_RECENT)
    kept_memories = len(mems)
    while total > budget and kept_memories > 0:
        kept_memories -= 1
        total -= mem_costs[kept_memories]
    if head and total > budget:
        total -= message_tokens(head[0]["content"])
        head = []
    drop_history(0)

    return Budgeted(
        question=q,
        history=head + hist[dropped_history:],
        memories=mems[:kept_memories],
        dropped_history=dropped_history,
        dropped_memories=len(mems) - kept_memories,
        cut_messages=cut,
        tokens=total,
        summary_kept=bool(head),
    )
