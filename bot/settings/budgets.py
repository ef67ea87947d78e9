"""Daily token budgets: a person or a server over its allowance for the UTC day is refused.

USER_DAILY_TOKENS caps one person's tokens per UTC day over every place together,
GUILD_DAILY_TOKENS one server's over all its people (0 = no cap). What counts is what the model
reported for each turn (prompt + completion, every step), for each /tldr (the person asking)
and for each running summary fold (the person whose turn started it), stored per day in SQLite
(memory.stores.usage). The check comes before a turn and the charge after it, so turns already
running when a budget runs out finish (a budget can be overshot by the turns in flight and the
folds they start, never refused mid-answer). Both reset at UTC midnight; the refusal names that
time. The clock is injected (``now``), so tests move to the next day without waiting.

A failure of the usage table neither refuses nor fails a turn: it is logged, and the turn runs
(its own storing would report a broken store). Rows of days past KEEP_DAYS are pruned on the
first charge of each day.

A turn is charged once (`TurnCharge`), as soon as the model's run ends, beside its storing:
its answer may already show (a live reply's preview) while it is being stored, and `/usage`
asked then counts it.

Part of bot/: platform-free (no discord.py); imports memory.stores.usage for its store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from memory.errors import MemoryStoreError
from memory.stores.usage import TokenUsageStore, UserTokens

__all__ = ["KEEP_DAYS", "GuildUsage", "TokenBudget", "TurnCharge", "UsageReport", "reset_phrase"]

log = logging.getLogger(__name__)

KEEP_DAYS = 7


@dataclass(frozen=True, slots=True)
class GuildUsage:
    """A server's use today: its total, its cap (0 = none) and its heaviest users."""

    tokens: int
    limit: int
    top: list[UserTokens]


@dataclass(frozen=True, slots=True)
class UsageReport:
    """What /usage shows: the person's use today, and the server's for an admin."""

    day: date
    user_tokens: int
    user_limit: int
    resets_at: datetime
    guild: GuildUsage | None = None


def reset_phrase(resets_at: datetime, now: datetime) -> str:
    """"00:00 UTC (in 3 h 12 min)": when a daily budget resets."""
    minutes = max(1, int((resets_at - now).total_seconds() // 60))
    hours, minutes = divmod(minutes, 60)
    left = f"{hours} h {minutes} min" if hours else f"{minutes} min"
    return f"{resets_at:%H:%M} UTC (in {left})"


class TokenBudget:
    """Checks and charges the daily budgets; see the module docstring."""

    def __init__(self, store: TokenUsageStore, *, user_daily: int, guild_daily: int,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        if user_daily < 0 or guild_daily < 0:
            raise ValueError("daily budgets must be >= 0 (0 = no limit)")
        self._store = store
        self.user_daily = user_daily
        self.guild_daily = guild_daily
        self._now = now
        self._pruned: date | None = None

    def _today(self) -> tuple[datetime, date, datetime]:
        now = self._now().astimezone(UTC)
        day = now.date()
        return now, day, datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)

    async def refusal(self, user_id: str, guild_id: str | None) -> str | None:
        """The polite sentence for a person (or server) over budget today; None to go on."""
        if not self.user_daily and not (self.guild_daily and guild_id is not None):
            return None
        now, day, resets = self._today()
        try:
            if self.user_daily and await self._store.user_total(day, user_id) >= self.user_daily:
                return (f"You have used your {self.user_daily:,} tokens for today; "
                        f"I can answer again after {reset_phrase(resets, now)}.")
            if (self.guild_daily and guild_id is not None
                    and await self._store.guild_total(day, guild_id) >= self.guild_daily):
                return (f"This server has used its {self.guild_daily:,} tokens for today; "
                        f"I can answer here again after {reset_phrase(resets, now)}.")
        except MemoryStoreError:
            log.warning("could not read today's token use of user %s; answering anyway", user_id,
                        exc_info=True)
        return None

    async def charge(self, user_id: str, guild_id: str | None, tokens: int) -> None:
        """Count the tokens of a finished turn, /tldr or fold for today (never raises for a store failure)."""
        if tokens <= 0:
            return
        _, day, _ = self._today()
        try:
            await self._store.add(day, user_id, guild_id, tokens)
            if self._pruned != day:
                self._pruned = day
                await self._store.prune_before(day - timedelta(days=KEEP_DAYS))
        except MemoryStoreError:
            log.error("could not count %d tokens of user %s; today's use is short by them",
                      tokens, user_id, exc_info=True)

    async def report(self, user_id: str, guild_id: str | None, *, with_guild: bool) -> UsageReport:
        """Today's use of the person, and (``with_guild``, in a server) of the server."""
        _, day, resets = self._today()
        guild = None
        if with_guild and guild_id is not None:
            guild = GuildUsage(await self._store.guild_total(day, guild_id), self.guild_daily,
                               await self._store.top_users(day, guild_id))
        return UsageReport(day, await self._store.user_total(day, user_id), self.user_daily,
                           resets, guild)

    def now(self) -> datetime:
        """The budget clock's time (for phrasing a report's reset time)."""
        return self._now().astimezone(UTC)


class TurnCharge:
    """One turn's charge, made once: `start` charges in a task of its own (beside the turn's
    storing, which a cancellation must not cut short), calling it charges now; whichever comes
    first counts, the other waits for it."""

    def __init__(self, budget: TokenBudget | None, user_id: str, guild_id: str | None) -> None:
        self._budget = budget
        self._user_id = user_id
        self._guild_id = guild_id
        self._task: asyncio.Task[None] | None = None

    def start(self, tokens: int) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._charge(tokens))
        return self._task

    async def __call__(self, tokens: int) -> None:
        await self.start(tokens)

    async def _charge(self, tokens: int) -> None:
        if self._budget is not None:
            await self._budget.charge(self._user_id, self._guild_id, tokens)
