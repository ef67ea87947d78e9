"""Logging for the bot's processes: plain text lines on stderr, which journald keeps.

One line per record: ``HH:MM:SS LEVEL logger: message``. The compact time is there for a
terminal or a plain log file; journald adds its own full timestamp and ignores it. LOG_LEVEL
sets the bot's level. discord.py's own loggers stay at WARNING (its INFO is connection chatter,
its DEBUG every gateway frame) unless LOG_LEVEL=DEBUG, which lets them through too; the HTTP,
model and storage libraries stay at WARNING always. Message contents are logged only at DEBUG
(the pipeline's turn line at INFO carries ids, counts and times, never text).

Part of bot/: imports only the standard library.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

__all__ = ["FORMAT", "QUIET_LIBRARIES", "configure_logging"]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%H:%M:%S"
QUIET_LIBRARIES = ("httpx", "httpcore", "openai", "chromadb", "sentence_transformers", "urllib3",
                   "aiosqlite", "asyncio")


def configure_logging(level: str, stream: TextIO | None = None) -> None:
    """Send every log record at ``level`` and above to ``stream`` (stderr) as plain text."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level: {level!r}")
    logging.basicConfig(level=numeric, stream=stream or sys.stderr, format=FORMAT,
                        datefmt=DATE_FORMAT, force=True)
    logging.getLogger("discord").setLevel(numeric if numeric <= logging.DEBUG else max(numeric, logging.WARNING))
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
