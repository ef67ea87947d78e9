"""The audit of a person's memory on Discord: its entries and an answer's recalled memories as lines, and a pager that forgets one entry.

- `entry_line`: one entry of `/memory show` ("3. [2026-12-01, #general] you: ... / me: ... · older · message").
- `recalled_lines`: the memories an answer recalled, for `/trace` (ephemeral: the asker's own).
- `MemoryPagerView`: the pages of `/memory show` with a select menu of the entries on the page
  shown; picking one asks to confirm (bot.discord_app.views.ConfirmView), then forgets its items.

Part of bot/discord_app: renders bot.memory_audit's entries; the forget action is given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

import discord

from bot.discord_app.views import ConfirmView, PagerView, excerpt, paginate
from bot.memory_audit import AuditEntry, RecalledMemory, message_link, place_of, text_field
from bot.turn.memory_reach import created_of

__all__ = ["EXCERPT_CHARS", "MemoryPagerView", "entry_line", "entry_pages", "forget_prompt", "recalled_lines"]

EXCERPT_CHARS = 200          # of a recalled memory in /trace
OPTION_CHARS = 90            # a select option's label (Discord allows 100)
ENTRIES_PER_PAGE = 25        # a select menu offers at most 25 options

ForgetAction = Callable[[AuditEntry], Awaitable[str]]


def _day(created_at: float | None) -> str:
    return "?" if created_at is None else f"{datetime.fromtimestamp(created_at, UTC):%Y-%m-%d}"


def _place(guild_id: str | None, channel_id: str | None, private: bool) -> str:
    if guild_id is None:
        return "DM"
    where = f"<#{channel_id}>" if channel_id else "this server"
    return f"{where}, private answer" if private else where


def entry_line(entry: AuditEntry) -> str:
    """One entry of /memory show: number, date, place, text, "older" when a later entry is on
    its subject, and a link to the message it was said in when there is one."""
    line = f"{entry.number}. [{_day(entry.created_at)}, {_place(entry.guild_id, entry.channel_id, entry.private)}] {entry.text}"
    if entry.older:
        line += " · *older*"
    if link := message_link(entry.guild_id, entry.channel_id, entry.message_id):
        line += f" · [message](<{link}>)"
    return line


def entry_pages(entries: Sequence[AuditEntry]) -> list[tuple[str, list[AuditEntry]]]:
    """Pages of entries (text, the entries on it): at most `ENTRIES_PER_PAGE` entries and
    the pager's characters a page; an entry longer than a page is cut."""
    pages: list[tuple[str, list[AuditEntry]]] = []
    for start in range(0, len(entries), ENTRIES_PER_PAGE):
        chunk = list(entries[start:start + ENTRIES_PER_PAGE])
        lines = [entry_line(e) for e in chunk]
        first = 0
        for text in paginate(lines):
            count = text.count("\n") + 1
            pages.append((text, chunk[first:first + count]))
            first += count
    return pages


def recalled_lines(recalled: Sequence[RecalledMemory]) -> list[str]:
    """The memories an answer recalled, in the order recalled: rank and search, date and place,
    an excerpt and a link to the message it was said in; one forgotten since says so."""
    lines = []
    for memory in recalled:
        head = f"**#{memory.rank}** ({memory.search})"
        if memory.hit is None:
            lines.append(f"{head} forgotten since")
            continue
        meta = memory.hit.metadata
        guild, private = place_of(meta)
        channel = text_field(meta, "channel_id")
        when = _day(created_of(meta))
        line = f"{head} [{when}, {_place(guild, channel, private)}] {excerpt(memory.hit.text, EXCERPT_CHARS)}"
        if meta.get("kind") == "reply":
            line += " (my answer)"
        if link := message_link(guild, channel, text_field(meta, "message_id")):
            line += f" · [message](<{link}>)"
        lines.append(line)
    return lines


def forget_prompt(entry: AuditEntry) -> str:
    return f"Forget {entry.number}. “{excerpt(entry.text, 300)}” from my memory? This cannot be undone."


class MemoryPagerView(PagerView):
    """/memory show's pages, with a select menu of the entries on the page shown: picking one
    replaces the page by a confirmation (`forget_prompt`); confirming runs `forget`."""

    def __init__(self, owner_id: int, pages: Sequence[tuple[str, list[AuditEntry]]], forget: ForgetAction,
                 timeout: float | None = None) -> None:
        self.entries = [chosen for _, chosen in pages]
        self.forget = forget
        self.menu: discord.ui.Select[MemoryPagerView] = discord.ui.Select(
            custom_id="memory:forget-one", placeholder="Forget one of these…", min_values=1, max_values=1)
        self.menu.callback = self._picked  # type: ignore[method-assign]
        super().__init__(owner_id, [text for text, _ in pages], timeout)
        self.add_item(self.menu)

    def page_text(self) -> str:
        return self.pages[self.index] if len(self.pages) == 1 else super().page_text()

    def _sync_buttons(self) -> None:
        super()._sync_buttons()
        if len(self.pages) == 1:
            self.remove_item(self.previous)
            self.remove_item(self.next)
        self.menu.options = [
            discord.SelectOption(label=excerpt(f"{e.number}. {e.text}", OPTION_CHARS), value=str(e.number))
            for e in self.entries[self.index]]

    async def _picked(self, interaction: discord.Interaction) -> None:
        number = int(self.menu.values[0])
        entry = next(e for page in self.entries for e in page if e.number == number)
        self.stop()

        async def erase() -> str:
            return await self.forget(entry)

        confirm = ConfirmView(self.owner_id, erase)
        confirm.origin = self.origin
        await interaction.response.edit_message(content=forget_prompt(entry), view=confirm)
