"""The console chat: the turn pipeline in a terminal (`python -m bot chat`).

- `chat`: ConsoleChat and run_console.
"""

from __future__ import annotations

from bot.console.chat import ConsoleChat, run_console

__all__ = ["ConsoleChat", "run_console"]
