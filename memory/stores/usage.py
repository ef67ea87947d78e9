"""Token use per UTC day, person and place: what daily budgets are checked against.

Storage design: one row per (day, user, place) in the ``token_usage`` table (migration
m005_token_usage), ``day`` an ISO date (UTC) and ``guild_id`` '' for direct messages; a turn
adds its tokens with one upsert, so a row stays one integer however many turns a person takes.
A person's total for a day sums their rows over every place; a server's sums its rows over
every person. Old days stay until pruned (``prune_before``).

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date

from memory.stores.database import Database, require_id

__all__ = ["TokenUsageStore", "UserTokens"]

log = logging.getLogger(__name__)

_DM = ""  # the place of direct messages (a primary key cannot hold NULL usefully)


@dataclass(frozen=True, slots=True)
class UserTokens:
    """One person's tokens in one server on one day."""

    user_id: str
    tokens: int


class TokenUsageStore:
    """Daily token counts on a Database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, day: date, user_id: str, guild_id: str | None, tokens: int) -> None:
        """Count ``tokens`` (>= 0) for this person in this place (None: DMs) on ``day``."""
        require_id("user_id", user_id)
        require_id("guild_id", guild_id, optional=True)
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            raise ValueError(f"tokens must be a whole number >= 0, got {tokens!r}")
        await self._db.execute(
            "INSERT INTO token_usage (day, user_id, guild_id, tokens) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (day, user_id, guild_id) DO UPDATE SET tokens = tokens + excluded.tokens",
            (day.isoformat(), user_id, guild_id or _DM, tokens))

    async def user_total(self, day: date, user_id: str) -> int:
        """The person's tokens on ``day``, every place together."""
        row = await self._db.fetchone(
            "SELECT COALESCE(SUM(tokens), 0) AS n FROM token_usage WHERE day = ? AND user_id = ?",
            (day.isoformat(), user_id))
        return int(row["n"]) if row is not None else 0

    async def guild_total(self, day: date, guild_id: str) -> int:
        """The server's tokens on ``day``, every person together."""
        row = await self._db.fetchone(
            "SELECT COALESCE(SUM(tokens), 0) AS n FROM token_usage WHERE day = ? AND guild_id = ?",
            (day.isoformat(), guild_id))
        return int(row["n"]) if row is not None else 0

    async def top_users(self, day: date, guild_id: str, limit: int = 5) -> list[UserTokens]:
        """The server's heaviest users on ``day``, most tokens first (ties by user id)."""
        rows = await self._db.fetchall(
            "SELECT user_id, tokens FROM token_usage WHERE day = ? AND guild_id = ? "
            "ORDER BY tokens DESC, user_id LIMIT ?", (day.isoformat(), guild_id, limit))
        return [UserTokens(r["user_id"], int(r["tokens"])) for r in rows]

    async def prune_before(self, day: date) -> int:
        """Delete the rows of days before ``day``; how many."""
        return await self._db.execute("DELETE FROM token_usage WHERE day < ?", (day.isoformat(),))
