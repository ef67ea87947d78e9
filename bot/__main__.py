"""`python -m bot [run|chat|check]`: the Discord bot, the console chat, or the configuration check.

    python -m bot        Discord with DISCORD_TOKEN, else the console chat
    python -m bot chat   the console chat (same pipeline and storage)
    python -m bot run    the Discord bot (an error line without DISCORD_TOKEN)
    python -m bot check  one line per check (configuration, data folder, SQLite, Chroma,
                         embeddings, model endpoint, Discord token); exit 0 only if all pass

Reads .env from the current folder first (variables already set win). A configuration or
store problem prints one line "config error: ..." on stderr and exits 2, never a traceback.
SIGTERM and SIGINT stop gracefully (bot.process.shutdown): running turns finish within
SHUTDOWN_TIMEOUT_S, the rest get a "restarting" sentence, the stores are closed, exit 0.
Logging: bot.process.logging_setup. The only place in bot/ that reads os.environ.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from dotenv import load_dotenv

from bot.settings.config import Settings, load_settings
from bot.errors import ConfigError
from bot.process.logging_setup import configure_logging
from bot.process.shutdown import StopSignal
from memory.errors import MemoryStoreError

EXIT_CONFIG = 2


def _require_model(settings: Settings) -> None:
    if not settings.agent.is_configured:
        raise ConfigError(settings.agent.missing())


async def _until_stopped(serve: Callable[[Settings, StopSignal], Awaitable[int | None]],
                         settings: Settings) -> int:
    """Run a front end with SIGTERM/SIGINT routed to its graceful shutdown (bot.process.shutdown)."""
    stop = StopSignal()
    with stop.installed():
        return await serve(settings, stop) or 0


def _chat(settings: Settings, explicit_log_level: bool) -> int:
    from bot.console.chat import run_console

    # A person at the terminal: no cooldown, and only warnings on stderr unless asked.
    configure_logging(settings.log_level if explicit_log_level else "WARNING")
    return asyncio.run(_until_stopped(run_console, dataclasses.replace(settings, user_cooldown_s=0.0)))


def _discord(settings: Settings) -> int:
    if not settings.has_discord_token:
        raise ConfigError("DISCORD_TOKEN is not set: `python -m bot run` needs a bot token "
                          "(or use `python -m bot chat` for the console)")
    configure_logging(settings.log_level)
    from bot.discord_app import run_discord  # imported here: the console works without it

    return asyncio.run(_until_stopped(run_discord, settings))


def _check() -> int:
    from bot.process.check import run_checks

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    configure_logging("ERROR")
    return run_checks(os.environ, sys.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bot",
        description="A Discord bot driven by a ReAct agent, or the same bot as a console chat.")
    parser.add_argument("command", nargs="?", choices=("run", "chat", "check"),
                        help="run: the Discord bot; chat: the console chat "
                             "(default: run when DISCORD_TOKEN is set, else chat); "
                             "check: test the configuration and every dependency")
    args = parser.parse_args(argv)
    load_dotenv(Path.cwd() / ".env", override=False)
    if args.command == "check":
        return _check()
    try:
        settings = load_settings(os.environ)
        command = args.command or ("run" if settings.has_discord_token else "chat")
        _require_model(settings)
        if command == "run":
            return _discord(settings)
        return _chat(settings, explicit_log_level=bool(os.environ.get("LOG_LEVEL", "").strip()))
    except (ConfigError, MemoryStoreError) as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
