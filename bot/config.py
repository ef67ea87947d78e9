"""All settings of the bot: the agent's, memory's, and the bot's own, from one env mapping.

Bot variables (empty values count as unset):
    DISCORD_TOKEN          bot token (unset: `python -m bot` runs the console chat); never shown
    DEV_GUILD_ID           guild to sync slash commands to at once (a snowflake)
    DISCORD_API_BASE_URL   Discord REST base URL (default https://discord.com/api/v10; tests)
    MAX_CONCURRENT_TURNS   turns running at once over all channels (default 4)
    MAX_CONTEXT_TOKENS     what is sent to the model fits this estimate (default 6000)
    BUFFER_WINDOW          channel messages read as history (default 40)
    USER_COOLDOWN_S        seconds between two turns of one person (default 3; 0 = off)
    BUFFER_ALL_MESSAGES    keep other chatter of a channel as context (default false)
    ALLOWED_GUILD_IDS, ALLOWED_CHANNEL_IDS, ALLOWED_ROLE_IDS, BLOCKED_USER_IDS
                           comma-separated snowflakes (empty = no restriction / nobody blocked)
    ALLOW_DMS              answer in direct messages (default true)
    ATTACHMENT_MAX_BYTES   largest text attachment read into a question (default 100000)
    LOG_LEVEL              DEBUG, INFO (default), WARNING, ERROR, CRITICAL
    SHARD_COUNT            total shards (unset = let Discord decide / one process)
    SHARD_IDS              comma-separated shard ids this process runs (needs SHARD_COUNT)
    TURN_TIMEOUT_S         a whole turn's time limit in seconds (default 180)
    SHUTDOWN_TIMEOUT_S     on SIGTERM/SIGINT, seconds running turns get to finish (default 60)

The agent's variables are read by agent.config, memory's by memory.config; their ConfigErrors
come out as this module's ConfigError with the same text. Never reads os.environ itself.
Part of bot/.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agent.config import AgentSettings, load_agent_settings
from agent.errors import ConfigError as AgentConfigError
from bot.errors import ConfigError
from memory.config import MemorySettings, load_memory_settings
from memory.errors import ConfigError as MemoryConfigError

__all__ = ["ConfigError", "Settings", "load_settings"]

log = logging.getLogger(__name__)

DISCORD_DEFAULT_API_BASE_URL = "https://discord.com/api/v10"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_SNOWFLAKE = re.compile(r"^[0-9]{1,20}$")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the bot needs; ``agent`` and ``memory`` are the packages' own settings."""

    agent: AgentSettings
    memory: MemorySettings
    discord_token: str | None = field(default=None, repr=False)
    dev_guild_id: str | None = None
    discord_api_base_url: str = DISCORD_DEFAULT_API_BASE_URL
    max_concurrent_turns: int = 4
    max_context_tokens: int = 6000
    buffer_window: int = 40
    user_cooldown_s: float = 3.0
    buffer_all_messages: bool = False
    allowed_guild_ids: frozenset[str] = frozenset()
    allowed_channel_ids: frozenset[str] = frozenset()
    allowed_role_ids: frozenset[str] = frozenset()
    blocked_user_ids: frozenset[str] = frozenset()
    allow_dms: bool = True
    attachment_max_bytes: int = 100_000
    log_level: str = "INFO"
    shard_count: int | None = None
    shard_ids: tuple[int, ...] | None = None
    turn_timeout_s: float = 180.0
    shutdown_timeout_s: float = 60.0

    @property
    def has_discord_token(self) -> bool:
        return bool(self.discord_token)


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def _int(env: Mapping[str, str], name: str, default: int | None, *, low: int,
         high: int | None = None) -> int | None:
    raw = _get(env, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} is not a whole number: {raw!r}") from None
    if value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"between {low} and {high}"
        raise ConfigError(f"{name} must be {bounds}: {raw!r}")
    return value


def _float(env: Mapping[str, str], name: str, default: float, *, low: float,
           positive: bool = False) -> float:
    raw = _get(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} is not a number: {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(f"{name} is not a finite number: {raw!r}")
    if value < low or (positive and value <= 0):
        raise ConfigError(f"{name} must be {'> 0' if positive else f'>= {low:g}'}: {raw!r}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(env, name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ConfigError(f"{name} must be true or false: {raw!r}")


def _snowflake(env: Mapping[str, str], name: str) -> str | None:
    raw = _get(env, name)
    if raw is None:
        return None
    if not _SNOWFLAKE.match(raw):
        raise ConfigError(f"{name} is not a Discord id (digits only): {raw!r}")
    return raw


def _snowflakes(env: Mapping[str, str], name: str) -> frozenset[str]:
    raw = _get(env, name)
    if raw is None:
        return frozenset()
    ids = [part.strip() for part in raw.split(",") if part.strip()]
    for part in ids:
        if not _SNOWFLAKE.match(part):
            raise ConfigError(f"{name} must be comma-separated Discord ids (digits only): {part!r}")
    return frozenset(ids)


def _url(env: Mapping[str, str], name: str, default: str) -> str:
    raw = _get(env, name)
    if raw is None:
        return default
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{name} is not a valid http(s) URL: {raw!r}")
    return raw.rstrip("/")


def _token(env: Mapping[str, str], name: str) -> str | None:
    raw = _get(env, name)
    if raw is None:
        return None
    if any(ch.isspace() for ch in raw) or not raw.isprintable():
        raise ConfigError(f"{name} contains spaces or control characters (value not shown)")
    return raw


def _log_level(env: Mapping[str, str]) -> str:
    raw = _get(env, "LOG_LEVEL")
    if raw is None:
        return "INFO"
    if raw.upper() not in LOG_LEVELS:
        raise ConfigError(f"LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}: {raw!r}")
    return raw.upper()


def _shards(env: Mapping[str, str]) -> tuple[int | None, tuple[int, ...] | None]:
    count = _int(env, "SHARD_COUNT", None, low=1)
    raw = _get(env, "SHARD_IDS")
    if raw is None:
        return count, None
    if count is None:
        raise ConfigError("SHARD_IDS needs SHARD_COUNT to be set")
    ids: list[int] = []
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        if not part.isdigit():
            raise ConfigError(f"SHARD_IDS must be comma-separated whole numbers: {part!r}")
        value = int(part)
        if value >= count:
            raise ConfigError(f"SHARD_IDS has {value}, but shard ids run from 0 to SHARD_COUNT-1 ({count - 1})")
        if value not in ids:
            ids.append(value)
    if not ids:
        raise ConfigError(f"SHARD_IDS lists no shard ids: {raw!r}")
    return count, tuple(sorted(ids))


def load_settings(env: Mapping[str, str]) -> Settings:
    """Build Settings from ``env``; raise ConfigError (one line naming the variable)."""
    try:
        agent = load_agent_settings(env)
    except AgentConfigError as exc:
        raise ConfigError(str(exc)) from None
    try:
        memory = load_memory_settings(env)
    except MemoryConfigError as exc:
        raise ConfigError(str(exc)) from None
    shard_count, shard_ids = _shards(env)
    settings = Settings(
        agent=agent,
        memory=memory,
        discord_token=_token(env, "DISCORD_TOKEN"),
        dev_guild_id=_snowflake(env, "DEV_GUILD_ID"),
        discord_api_base_url=_url(env, "DISCORD_API_BASE_URL", DISCORD_DEFAULT_API_BASE_URL),
        max_concurrent_turns=_int(env, "MAX_CONCURRENT_TURNS", 4, low=1, high=1000),
        max_context_tokens=_int(env, "MAX_CONTEXT_TOKENS", 6000, low=1000, high=2_000_000),
        buffer_window=_int(env, "BUFFER_WINDOW", 40, low=0, high=10_000),
        user_cooldown_s=_float(env, "USER_COOLDOWN_S", 3.0, low=0.0),
        buffer_all_messages=_bool(env, "BUFFER_ALL_MESSAGES", False),
        allowed_guild_ids=_snowflakes(env, "ALLOWED_GUILD_IDS"),
        allowed_channel_ids=_snowflakes(env, "ALLOWED_CHANNEL_IDS"),
        allowed_role_ids=_snowflakes(env, "ALLOWED_ROLE_IDS"),
        blocked_user_ids=_snowflakes(env, "BLOCKED_USER_IDS"),
        allow_dms=_bool(env, "ALLOW_DMS", True),
        attachment_max_bytes=_int(env, "ATTACHMENT_MAX_BYTES", 100_000, low=0, high=25_000_000),
        log_level=_log_level(env),
        shard_count=shard_count,
        shard_ids=shard_ids,
        turn_timeout_s=_float(env, "TURN_TIMEOUT_S", 180.0, low=0.0, positive=True),
        shutdown_timeout_s=_float(env, "SHUTDOWN_TIMEOUT_S", 60.0, low=0.0),
    )
    log.debug("bot settings: %r", settings)
    return settings
