"""Buttons: a pager for long ephemeral lists and a confirm/cancel prompt; the text they show cut to size.

Both only answer the person who opened them; anyone else pressing gets a short refusal. When
they expire, the buttons are taken off the message.
Imports discord.py and the shared `tell`; never the pipeline (the confirm action is given).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import discord

from bot.discord_app.interactions import tell

__all__ = ["ConfirmView", "PagerView", "excerpt", "paginate"]

log = logging.getLogger(__name__)

PAGE_CHARS = 1800


def excerpt(text: str, limit: int) -> str:
    """``text`` on one line (its whitespace runs made single spaces), cut to at most ``limit``
    characters with "…" (a select option's label, a list line, a quote in a prompt)."""
    body = " ".join(text.split())
    return body if len(body) <= limit else body[: limit - 1].rstrip() + "…"


def paginate(lines: Sequence[str], page_chars: int = PAGE_CHARS) -> list[str]:
    """Group lines into pages of at most `page_chars` characters (a longer line is cut)."""
    pages: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        line = line if len(line) <= page_chars else line[: page_chars - 1] + "…"
        if current and size + len(line) + 1 > page_chars:
            pages.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        pages.append("\n".join(current))
    return pages


class _OwnedView(discord.ui.View):
    """Buttons of one person. Set `origin` to the interaction whose response carries them: when
    they expire they are taken off that message, so no later click goes unanswered."""

    default_timeout_s = 300.0
    timeout_text: str | None = None  # replaces the message's text when the buttons expire

    def __init__(self, owner_id: int, timeout: float | None) -> None:
        super().__init__(timeout=self.default_timeout_s if timeout is None else timeout)
        self.owner_id = owner_id
        self.origin: discord.Interaction | None = None

    async def on_timeout(self) -> None:
        if self.origin is None:
            return
        try:
            if self.timeout_text is None:
                await self.origin.edit_original_response(view=None)
            else:
                await self.origin.edit_original_response(content=self.timeout_text, view=None)
        except discord.HTTPException:
            log.info("could not take expired buttons off interaction %s", self.origin.id, exc_info=True)

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.owner_id:
            await interaction.response.send_message("These buttons are not yours.", ephemeral=True)
            return False
        return True


class PagerView(_OwnedView):
    """Previous/next buttons over pre-rendered pages."""

    def __init__(self, owner_id: int, pages: Sequence[str], timeout: float | None = None) -> None:
        super().__init__(owner_id, timeout)
        self.pages = list(pages)
        self.index = 0
        self._sync_buttons()

    def page_text(self) -> str:
        return f"{self.pages[self.index]}\n\n-# page {self.index + 1} of {len(self.pages)}"

    def _sync_buttons(self) -> None:
        self.previous.disabled = self.index == 0
        self.next.disabled = self.index >= len(self.pages) - 1

    async def _show(self, interaction: discord.Interaction) -> None:
        self._sync_buttons()
        await interaction.response.edit_message(content=self.page_text(), view=self)

    @discord.ui.button(label="Previous", style=discord.ButtonStyle.secondary)
    async def previous(self, interaction: discord.Interaction, _: discord.ui.Button[PagerView]) -> None:
        self.index = max(0, self.index - 1)
        await self._show(interaction)

    @discord.ui.button(label="Next", style=discord.ButtonStyle.secondary)
    async def next(self, interaction: discord.Interaction, _: discord.ui.Button[PagerView]) -> None:
        self.index = min(len(self.pages) - 1, self.index + 1)
        await self._show(interaction)


class ConfirmView(_OwnedView):
    """Confirm/cancel; on confirm runs `action`, whose returned text replaces the prompt."""

    default_timeout_s = 60.0
    timeout_text = "Nothing was forgotten: the question expired."

    def __init__(self, owner_id: int, action: Callable[[], Awaitable[str]], timeout: float | None = None) -> None:
        super().__init__(owner_id, timeout)
        self.action = action

    @discord.ui.button(label="Yes, forget it", style=discord.ButtonStyle.danger)
    async def confirm(self, interaction: discord.Interaction, _: discord.ui.Button[ConfirmView]) -> None:
        self.stop()
        await interaction.response.defer()
        text = await self.action()
        await interaction.edit_original_response(content=text, view=None)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, _: discord.ui.Button[ConfirmView]) -> None:
        self.stop()
        await interaction.response.edit_message(content="Nothing was forgotten.", view=None)

    async def on_error(
        self, interaction: discord.Interaction, error: Exception, item: discord.ui.Item[ConfirmView]
    ) -> None:
        log.error("memory forget failed", exc_info=error)
        await tell(interaction, "Something went wrong; nothing may have been forgotten. Please try again.")
