"""Who may read what of a person's memory: the one rule for where items are stored, recalled
and managed (every caller asks ``MemoryPolicy``; nothing else builds a scope).

Every stored item has an owner (the person: the memory's ``user_id``) and a scope, which also
says its visibility:

    "guild:<id>"           said in public in a server: recalled in that server's public and
                           private answers (in every public answer with MEMORY_SCOPE=global)
    "guild:<id>:private"   said in a private `/ask` in that server: recalled only in the
                           person's private answers there (everywhere private with global)
    "dm"                   said in a DM (or the console): recalled only in the person's DMs
                           (and in every private answer with global)

So what was said in private never comes back in a public reply, whatever the settings: with
MEMORY_SCOPE=global a public reply sees the person's public items of every server, never a
private one. A place's `memory` setting (bot.settings.place) narrows: "server" keeps it to the
place even when the operator chose global, "off" neither recalls nor stores; "global" widens
only where the operator allows it.

`/memory show|export|forget` act on what the person's private answers see in that server (its
public and private items; everything with global), and in a DM on everything the person said
anywhere (a DM is private to them). A forget erases the SQLite rows of the same reach
(bot.forgetting).

Part of bot/: pure rules on ids and settings; imports memory.semantic's scope_for only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memory.semantic import scope_for

__all__ = ["DM_SCOPE", "PRIVATE_SUFFIX", "MemoryPolicy", "Reach", "Visibility", "is_private_scope"]

DM_SCOPE = "dm"
PRIVATE_SUFFIX = ":private"

Visibility = Literal["public", "private"]


def is_private_scope(scope: object) -> bool:
    """Whether an item of this scope may be recalled only in its owner's private answers.
    Anything not a known public scope counts as private (an item whose scope is missing or
    unreadable is never shown in public)."""
    if not isinstance(scope, str):
        return True
    return scope == DM_SCOPE or scope.endswith(PRIVATE_SUFFIX)


@dataclass(frozen=True, slots=True)
class Reach:
    """Where a read of a person's memory looks.

    ``scopes``: exactly these scopes (each searched, the hits merged), or None for every scope
    of the person; with ``public_only`` (only with ``scopes`` None) items of private scopes are
    left out. ``guild_id``: the SQLite rows a forget erases with it, those of that server, or
    every row of the person when None (``everywhere``)."""

    scopes: tuple[str, ...] | None
    public_only: bool = False
    guild_id: str | None = None

    @property
    def everywhere(self) -> bool:
        return self.scopes is None


@dataclass(frozen=True, slots=True)
class MemoryPolicy:
    """The rule; ``operator_global`` is MEMORY_SCOPE=global."""

    operator_global: bool = False

    def wide(self, memory_setting: str | None) -> bool:
        """Whether recall crosses places here: the operator's global, unless the place says
        "server" (or "off")."""
        return self.operator_global and memory_setting in (None, "global")

    @staticmethod
    def remembers(memory_setting: str | None) -> bool:
        """Whether turns here are recalled and stored at all (`memory off` says no)."""
        return memory_setting != "off"

    @staticmethod
    def visibility(guild_id: str | None, private: bool) -> Visibility:
        """A DM or a private answer is private; a turn in a server's channel is public."""
        return "private" if private or guild_id is None else "public"

    def store_scope(self, guild_id: str | None, private: bool) -> str:
        """The scope of what a turn stores."""
        if guild_id is None:
            return DM_SCOPE
        return scope_for(guild_id) + PRIVATE_SUFFIX if private else scope_for(guild_id)

    def recall(self, guild_id: str | None, private: bool, memory_setting: str | None) -> Reach:
        """What a turn may recall: public answers see public items only; private answers
        (a private /ask, a DM) also the private ones of their place."""
        seen_privately = self.visibility(guild_id, private) == "private"
        if self.wide(memory_setting):
            return Reach(None, public_only=not seen_privately)
        if guild_id is None:
            return Reach((DM_SCOPE,))
        public = scope_for(guild_id)
        return Reach((public, public + PRIVATE_SUFFIX) if seen_privately else (public,))

    def manage(self, guild_id: str | None, memory_setting: str | None) -> Reach:
        """What `/memory show|export|forget` covers: in a server, what the person's private
        answers there recall (and the server's SQLite rows); in a DM, everything."""
        if guild_id is None or self.wide(memory_setting):
            return Reach(None)
        public = scope_for(guild_id)
        return Reach((public, public + PRIVATE_SUFFIX), guild_id=guild_id)
