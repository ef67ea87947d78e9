"""`/memory forget`: erase everything the bot keeps of a person's words, and say what.

Within the reach bot.turn.privacy gives (a server: its rows and the memory the person's private
answers there recall; a DM, or MEMORY_SCOPE=global: everywhere), in this order:
1. the SQLite file (memory.stores.erasure): their channel-buffer rows and the bot's answers to them,
   their traces (questions with attachments' text and images' descriptions, steps, answers),
   memory writes of theirs deferred while the memory was down, their pending reminders (and,
   everywhere, the time zone they set for them), and the
   running summaries of channels they spoke in or that folded in their words (the reply says they
   "may have held" them: a summary mixes everyone's words, so it goes whole);
2. the semantic memory's items (bot.turn.memory_reach).
The file goes first so that no deferred write of theirs can land after the memory is cleared;
a failure part-way is told as one sentence, and forgetting again finishes the job. A turn of
theirs still running while they forget is stored when it ends (it is not waited for): what it
stores is theirs to forget again.

Part of bot/: joins memory/'s stores; knows nothing of Discord.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.turn.memory_reach import forget_reach
from bot.turn.privacy import Reach
from memory.semantic import UserMemory
from memory.stores.erasure import ErasedRows, PersonErasure

__all__ = ["Forgotten", "forget_person"]


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What one forget erased, by kind."""

    items: int = 0            # semantic-memory items
    messages: int = 0         # the person's messages in channel histories
    answers: int = 0          # the bot's answers to them there
    traces: int = 0           # stored steps of their answers
    deferred_writes: int = 0  # memory writes still to be made
    reminders: int = 0        # pending reminders and scheduled questions
    summaries: int = 0        # running summaries of channels they spoke in (which may hold their words)
    time_zones: int = 0       # the time zone they set for reminders (a forget everywhere only)

    @property
    def total(self) -> int:
        return (self.items + self.messages + self.answers + self.traces + self.deferred_writes + self.reminders
                + self.summaries + self.time_zones)

    def summary(self) -> str:
        """One sentence for the person."""
        if self.total == 0:
            return "There was nothing to forget."
        parts = [f"{self.items} memory item(s)", f"{self.messages} of your message(s) and "
                 f"{self.answers} of my answer(s) in channel histories", f"{self.traces} answer trace(s)"]
        if self.deferred_writes:
            parts.append(f"{self.deferred_writes} memory write(s) still waiting")
        if self.reminders:
            parts.append(f"{self.reminders} pending reminder(s)")
        if self.summaries:
            parts.append(f"{self.summaries} channel summary(ies) that may have held your words")
        if self.time_zones:
            parts.append("your time zone")
        return "Done: I forgot " + ", ".join(parts) + "."


async def forget_person(memory: UserMemory, rows: PersonErasure | None, user_id: str,
                        reach: Reach) -> Forgotten:
    """Erase the person's words within ``reach`` (see the module docstring); ``rows`` None
    (no SQLite file: tests of the memory alone) erases the memory items only."""
    erased = await rows.erase(user_id, None if reach.everywhere else reach.guild_id) if rows else ErasedRows()
    items = await forget_reach(memory, user_id, reach)
    return Forgotten(items=items, messages=erased.messages, answers=erased.replies, traces=erased.traces,
                     deferred_writes=erased.deferred_writes, reminders=erased.reminders, summaries=erased.summaries,
                     time_zones=erased.time_zones)
