"""`python -m bot [run|chat]`: the Discord bot when DISCORD_TOKEN is set, else the console chat.

    python -m bot        Discord with DISCORD_TOKEN, else the console chat
    python -m bot chat   the console chat (same pipeline and storage)
    python -m bot run    the Discord bot (an error line without DISCORD_TOKEN)

Reads .env from the current folder first (variables already set win). A configuration or
store problem prints one line "config error: ..." on stderr and exits 2, never a traceback.
The only place in bot/ that reads os.environ.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import sys
from pathlib import Path

from dotenv import load_dotenv

from agent.errors import ConfigError as AgentConfigError
from bot.config import Settings, load_settings
from bot.errors import ConfigError
from memory.errors import MemoryStoreError

EXIT_CONFIG = 2


def configure_logging(level: str) -> None:
    """Plain text to stderr (journald adds the time); discord.py's own logs at WARNING."""
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s", force=True)
    logging.getLogger("discord").setLevel(max(logging.WARNING, logging.getLevelName(level)))
    for noisy in ("httpx", "httpcore", "openai", "chromadb", "sentence_transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _require_model(settings: Settings) -> None:
    if not settings.agent.is_configured:
        raise ConfigError(settings.agent.missing())


def _chat(settings: Settings, explicit_log_level: bool) -> int:
    from bot.console import run_console
    from bot.runtime import Runtime

    # A person at the terminal: no cooldown, and only warnings on stderr unless asked.
    configure_logging(settings.log_level if explicit_log_level else "WARNING")
    chat_settings = dataclasses.replace(settings, user_cooldown_s=0.0)
    return asyncio.run(run_console(lambda: Runtime(chat_settings)))


def _discord(settings: Settings) -> int:
    if not settings.has_discord_token:
        raise ConfigError("DISCORD_TOKEN is not set: `python -m bot run` needs a bot token "
                          "(or use `python -m bot chat` for the console)")
    from bot.discord_app import run_discord  # imported here: the console works without it

    configure_logging(settings.log_level)
    asyncio.run(run_discord(settings))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bot",
        description="A Discord bot driven by a ReAct agent, or the same bot as a console chat.")
    parser.add_argument("command", nargs="?", choices=("run", "chat"),
                        help="run: the Discord bot; chat: the console chat "
                             "(default: run when DISCORD_TOKEN is set, else chat)")
    args = parser.parse_args(argv)
    load_dotenv(Path.cwd() / ".env", override=False)
    try:
        settings = load_settings(os.environ)
        command = args.command or ("run" if settings.has_discord_token else "chat")
        _require_model(settings)
        if command == "run":
            return _discord(settings)
        return _chat(settings, explicit_log_level=bool(os.environ.get("LOG_LEVEL", "").strip()))
    except (ConfigError, AgentConfigError, MemoryStoreError) as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
