"""The front ends (console chat, Discord) and the platform-free turn pipeline joining agent/ and
memory/. Heavy parts (runtime, pipeline, Discord) are imported from their modules, not here, so
that `import bot` stays light."""

from __future__ import annotations

from bot.errors import BotError, ConfigError, sentence_for
from bot.turn.requests import TurnRequest, TurnResult

__all__ = ["BotError", "ConfigError", "TurnRequest", "TurnResult", "sentence_for"]
