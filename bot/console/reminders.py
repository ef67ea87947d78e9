"""Reminders in the console chat: the console user's reminders that fall due while it runs are
printed in the terminal.

Only the console user's own reminders belong to the console (``owns``): the console may share
DATA_DIR with the Discord bot, whose people's reminders are not its to deliver. A reminder due
while the console was closed is printed when it opens again, marked late (bot.reminders.delivery).

Part of bot/: the console's ReminderSender.
"""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel

from bot.reminders.delivery import SendOutcome
from memory.stores.reminders import Reminder

__all__ = ["ConsoleReminderSender"]


class ConsoleReminderSender:
    """Prints the reminders of ``user_id`` on ``console``."""

    def __init__(self, console: Console, user_id: str) -> None:
        self._console = console
        self._user_id = user_id

    def owns(self, reminder: Reminder) -> bool:
        return reminder.user_id == self._user_id

    async def allowed(self, reminder: Reminder) -> bool:
        return True

    async def send(self, reminder: Reminder, text: str, nonce: str) -> SendOutcome:
        self._console.print()
        self._console.print(Panel(Markdown(text), title=f"reminder #{reminder.id}", title_align="left",
                                  border_style="magenta"))
        self._console.file.flush()
        return "sent"
