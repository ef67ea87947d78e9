"""`python -m bot [run|chat|check]`: the Discord bot, the console chat, or the configuration check.

    python -m bot        Discord with DISCORD_TOKEN, else the console chat
    python -m bot chat   the console chat (same pipeline and storage)
    python -m bot run    the Discord bot (an error line without DISCORD_TOKEN)
    python -m bot check  one line per check (configuration, data folder, SQLite, Chroma,
                         embeddings, model endpoint, Discord token); exit 0 only if all pass

Reads .env from the current folder first (variables already set win), then the systemd
credentials in $CREDENTIALS_DIRECTORY (a credential wins over the same variable set in the
environment). The process is made non-dumpable first and the secrets leave os.environ once the
settings hold them (bot.process.credentials), so that no other process of the user reads them. A
configuration or store problem prints one line "config error: ..." on stderr and exits 2,
never a traceback.
SIGTERM and SIGINT stop gracefully (bot.process.shutdown): running turns finish within
SHUTDOWN_TIMEOUT_S, the rest get a "restarting" sentence, the stores are closed, exit 0.
Logging: bot.process.logging_setup. The only place in bot/ that reads os.environ.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from dotenv import load_dotenv

from bot.settings.config import Settings, load_settings
from bot.process.credentials import drop_secrets, read_credentials, seal_process, secret_names, with_credentials
from bot.errors import ConfigError
from bot.process.heap import freeze_start_up_heap
from bot.process.logging_setup import configure_logging
from bot.process.shutdown import StopSignal
from memory.errors import MemoryStoreError

EXIT_CONFIG = 2

log = logging.getLogger("bot")


def _require_model(settings: Settings) -> None:
    if not settings.agent.is_configured:
        raise ConfigError(settings.agent.missing())


async def _until_stopped(serve: Callable[[Settings, StopSignal], Awaitable[int | None]],
                         settings: Settings) -> int:
    """Run a front end with SIGTERM/SIGINT routed to its graceful shutdown (bot.process.shutdown)."""
    stop = StopSignal()
    with stop.installed():
        return await serve(settings, stop) or 0


def _warn(warnings: list[str]) -> None:
    """The start-up's warnings about secrets, once logging is set up."""
    for line in warnings:
        log.warning("%s", line)


def _chat(settings: Settings, explicit_log_level: bool, warnings: list[str]) -> int:
    print("Starting the console chat...", flush=True)  # the imports and the stores take seconds
    from bot.console.chat import run_console

    # A person at the terminal: no cooldown, and only warnings on stderr unless asked.
    configure_logging(settings.log_level if explicit_log_level else "WARNING")
    _warn(warnings)
    return asyncio.run(_until_stopped(run_console, dataclasses.replace(settings, user_cooldown_s=0.0)))


def _discord(settings: Settings, warnings: list[str]) -> int:
    if not settings.has_discord_token:
        raise ConfigError("DISCORD_TOKEN is not set: `python -m bot run` needs a bot token "
                          "(or use `python -m bot chat` for the console)")
    configure_logging(settings.log_level)
    _warn(warnings)
    from bot.discord_app import run_discord  # imported here: the console works without it

    freeze_start_up_heap()  # the imports' objects, out of the collector's full scans (bot.process.heap)
    return asyncio.run(_until_stopped(run_discord, settings))


def _check(env: Mapping[str, str]) -> int:
    from bot.process.check import run_checks

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    configure_logging("ERROR")
    return run_checks({"HF_HUB_OFFLINE": "1", **env}, sys.stdout)


def _secret_warnings(sealed: bool, both: list[str], settings: Settings, credentials: Mapping[str, str]) -> list[str]:
    warnings = [f"{name} is set both as a systemd credential and in the environment; "
                "the credential is used" for name in both]
    stdio = [server.name for server in settings.mcp.servers if server.transport == "stdio"]
    if stdio and any(value.strip() for value in credentials.values()):
        warnings.append(f"the MCP stdio servers ({', '.join(stdio)}) run as this user and can read the "
                        "credential files while the bot runs; keep secrets they must not see in the "
                        "environment file (deploy/README.md#secrets)")
    if not sealed and sys.platform.startswith("linux"):
        warnings.append("could not make the process non-dumpable: other processes of this user "
                        "may read its environment")
    return warnings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bot",
        description="A Discord bot driven by a ReAct agent, or the same bot as a console chat.")
    parser.add_argument("command", nargs="?", choices=("run", "chat", "check"),
                        help="run: the Discord bot; chat: the console chat "
                             "(default: run when DISCORD_TOKEN is set, else chat); "
                             "check: test the configuration and every dependency")
    args = parser.parse_args(argv)
    sealed = seal_process()  # before any secret is read: /proc/<pid>/environ closes to others
    load_dotenv(Path.cwd() / ".env", override=False)
    try:
        credentials = read_credentials(os.environ.get("CREDENTIALS_DIRECTORY"))
        env, both = with_credentials(os.environ, credentials)
        if args.command == "check":
            return _check(env)
        settings = load_settings(env)
        drop_secrets(os.environ, secret_names(settings, credentials))  # children inherit none
        warnings = _secret_warnings(sealed, both, settings, credentials)
        command = args.command or ("run" if settings.has_discord_token else "chat")
        _require_model(settings)
        if command == "run":
            return _discord(settings, warnings)
        return _chat(settings, explicit_log_level=bool(env.get("LOG_LEVEL", "").strip()), warnings=warnings)
    except (ConfigError, MemoryStoreError) as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())
