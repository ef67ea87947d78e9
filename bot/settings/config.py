"""All settings of the bot: the agent's, memory's, and the bot's own, from one env mapping.

Bot variables (empty values count as unset):
    DISCORD_TOKEN          bot token (unset: `python -m bot` runs the console chat); never shown
    DEV_GUILD_ID           guild to sync slash commands to at once (a snowflake)
    DISCORD_API_BASE_URL   Discord REST base URL (a relay, a proxy, the test server); unset,
                           discord.py's own defaults stand untouched
    MAX_CONCURRENT_TURNS   turns running at once over all channels (default 4)
    MAX_CONTEXT_TOKENS     what is sent to the model fits this estimate (default 6000)
    BUFFER_WINDOW          channel messages read as history (default 40)
    USER_COOLDOWN_S        seconds between two turns of one person (default 3; 0 = off)
    BUFFER_ALL_MESSAGES    keep other chatter of a channel as context (default false)
    MESSAGE_CONTENT_INTENT ask for the privileged Message Content intent (free-response
                           channels need it; default false, true with BUFFER_ALL_MESSAGES)
    ADMIN_USER_IDS         the operator's people: /settings works for them in every server
    LLM_MODELS             models servers may choose with /settings (bot.settings.model_catalog)
    ALLOWED_GUILD_IDS, ALLOWED_CHANNEL_IDS, ALLOWED_ROLE_IDS, BLOCKED_USER_IDS
                           comma-separated snowflakes (empty = no restriction / nobody blocked)
    ALLOW_DMS              answer in direct messages (default true)
    ATTACHMENT_MAX_BYTES   largest text attachment read into a question (default 100000)
    LOG_LEVEL              DEBUG, INFO (default), WARNING, ERROR, CRITICAL
    SHARD_COUNT            total shards (unset = let Discord decide / one process)
    SHARD_IDS              comma-separated shard ids this process runs (needs SHARD_COUNT)
    TURN_TIMEOUT_S         a whole turn's time limit in seconds (default 180)
    SHUTDOWN_TIMEOUT_S     on SIGTERM/SIGINT, seconds running turns get to finish (default 60)
    MCP_CONFIG             a JSON file of MCP servers ({"mcpServers": {...}}; unset: none)
    LLM_VISION, IMAGE_MAX_BYTES, IMAGE_MAX_COUNT, USER_DAILY_TOKENS, GUILD_DAILY_TOKENS
                           images and daily token budgets: see bot.settings.features
    DEFAULT_TIMEZONE, REMINDERS_MAX_PENDING, REMINDERS_MIN_REPEAT_S
                           reminders: see bot.settings.reminders

MCP_CONFIG is read here, once: what is wrong inside the file (bad JSON, an unknown key, an unset
${VAR}) does not stop start-up; it is kept in ``Settings.mcp.problems``, logged at start-up and
shown by `python -m bot check`, and the bot runs without those servers.

The agent's variables are read by agent.config, memory's by memory.config, the bot's own with
the shared envsettings readers (why those and not pydantic: see its docstring); their errors
all come out as this module's ConfigError with the same text. Never reads os.environ itself.
Part of bot/.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from agent.config import AgentSettings, load_agent_settings
from agent.errors import ConfigError as AgentConfigError
from agent.tools.mcp.config import McpConfig, read_mcp_config
from bot.errors import ConfigError
from bot.settings.model_catalog import ModelCatalog, ModelEntry, parse_models
from bot.settings.features import FeatureSettings, load_feature_settings
from bot.settings.reminders import ReminderSettings, load_reminder_settings
from envsettings import (
    SettingError,
    read_bool,
    read_choice,
    read_float,
    read_int,
    read_secret,
    read_str,
    read_url,
)
from memory.config import MemorySettings, load_memory_settings
from memory.errors import ConfigError as MemoryConfigError

__all__ = ["ConfigError", "Settings", "load_settings"]

log = logging.getLogger(__name__)

DISCORD_DEFAULT_API_BASE_URL = "https://discord.com/api/v10"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_SNOWFLAKE = re.compile(r"^[0-9]{1,20}$")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the bot needs; ``agent`` and ``memory`` are the packages' own settings."""

    agent: AgentSettings
    memory: MemorySettings
    discord_token: str | None = field(default=None, repr=False)
    dev_guild_id: str | None = None
    discord_api_base_url: str | None = None
    max_concurrent_turns: int = 4
    max_context_tokens: int = 6000
    buffer_window: int = 40
    user_cooldown_s: float = 3.0
    buffer_all_messages: bool = False
    message_content_intent: bool = False
    admin_user_ids: frozenset[str] = frozenset()
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
    mcp: McpConfig = field(default_factory=McpConfig)
    models: ModelCatalog = field(default_factory=lambda: ModelCatalog(ModelEntry('', None, None, False)))
    features: FeatureSettings = field(default_factory=FeatureSettings)  # images, budgets (bot.settings.features)
    reminders: ReminderSettings = field(default_factory=ReminderSettings)  # bot.settings.reminders

    @property
    def has_discord_token(self) -> bool:
        return bool(self.discord_token)

    @property
    def discord_api(self) -> str:
        """The Discord REST base URL in use: DISCORD_API_BASE_URL, or Discord's own."""
        return self.discord_api_base_url or DISCORD_DEFAULT_API_BASE_URL


def _snowflake(env: Mapping[str, str], name: str) -> str | None:
    raw = read_str(env, name, None)
    if raw is not None and not _SNOWFLAKE.match(raw):
        raise SettingError(name, f"is not a Discord id (digits only): {raw!r}")
    return raw


def _snowflakes(env: Mapping[str, str], name: str) -> frozenset[str]:
    ids = [part.strip() for part in read_str(env, name, "").split(",") if part.strip()]
    for part in ids:
        if not _SNOWFLAKE.match(part):
            raise SettingError(name, f"must be comma-separated Discord ids (digits only): {part!r}")
    return frozenset(ids)


def _shards(env: Mapping[str, str]) -> tuple[int | None, tuple[int, ...] | None]:
    count = read_int(env, "SHARD_COUNT", None, low=1)
    raw = read_str(env, "SHARD_IDS", None)
    if raw is None:
        return count, None
    if count is None:
        raise SettingError("SHARD_IDS", "needs SHARD_COUNT to be set")
    ids: list[int] = []
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        if not part.isdigit():
            raise SettingError("SHARD_IDS", f"must be comma-separated whole numbers: {part!r}")
        value = int(part)
        if value >= count:
            raise SettingError(
                "SHARD_IDS", f"has {value}, but shard ids run from 0 to SHARD_COUNT-1 ({count - 1})"
            )
        if value not in ids:
            ids.append(value)
    if not ids:
        raise SettingError("SHARD_IDS", f"lists no shard ids: {raw!r}")
    return count, tuple(sorted(ids))


def _read(env: Mapping[str, str]) -> Settings:
    agent = load_agent_settings(env)
    memory = load_memory_settings(env)
    shard_count, shard_ids = _shards(env)
    buffer_all = read_bool(env, "BUFFER_ALL_MESSAGES", False)
    features = load_feature_settings(env)
    return Settings(
        agent=agent,
        memory=memory,
        discord_token=read_secret(env, "DISCORD_TOKEN", None),
        dev_guild_id=_snowflake(env, "DEV_GUILD_ID"),
        discord_api_base_url=read_url(env, "DISCORD_API_BASE_URL", None),
        max_concurrent_turns=read_int(env, "MAX_CONCURRENT_TURNS", 4, low=1, high=1000),
        max_context_tokens=read_int(env, "MAX_CONTEXT_TOKENS", 6000, low=1000, high=2_000_000),
        buffer_window=read_int(env, "BUFFER_WINDOW", 40, low=0, high=10_000),
        user_cooldown_s=read_float(env, "USER_COOLDOWN_S", 3.0, low=0.0),
        buffer_all_messages=buffer_all,
        message_content_intent=read_bool(env, "MESSAGE_CONTENT_INTENT", False) or buffer_all,
        admin_user_ids=_snowflakes(env, "ADMIN_USER_IDS"),
        allowed_guild_ids=_snowflakes(env, "ALLOWED_GUILD_IDS"),
        allowed_channel_ids=_snowflakes(env, "ALLOWED_CHANNEL_IDS"),
        allowed_role_ids=_snowflakes(env, "ALLOWED_ROLE_IDS"),
        blocked_user_ids=_snowflakes(env, "BLOCKED_USER_IDS"),
        allow_dms=read_bool(env, "ALLOW_DMS", True),
        attachment_max_bytes=read_int(env, "ATTACHMENT_MAX_BYTES", 100_000, low=0, high=25_000_000),
        log_level=read_choice(env, "LOG_LEVEL", LOG_LEVELS, "INFO"),
        shard_count=shard_count,
        shard_ids=shard_ids,
        turn_timeout_s=read_float(env, "TURN_TIMEOUT_S", 180.0, low=0.0, positive=True),
        shutdown_timeout_s=read_float(env, "SHUTDOWN_TIMEOUT_S", 60.0, low=0.0),
        mcp=read_mcp_config(read_str(env, "MCP_CONFIG", None), env),
        models=parse_models(read_str(env, "LLM_MODELS", None), env, agent.model,
                            default_vision=features.llm_vision),
        features=features,
        reminders=load_reminder_settings(env),
    )


def load_settings(env: Mapping[str, str]) -> Settings:
    """Build Settings from ``env``; raise ConfigError (one line naming the variable)."""
    try:
        settings = _read(env)
    except (AgentConfigError, MemoryConfigError, SettingError) as exc:
        raise ConfigError(str(exc)) from None
    log.debug("bot settings: %r", settings)
    return settings
