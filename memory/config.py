"""Memory settings, read from a mapping of environment variables passed in by the caller.

Variables (empty values count as unset):
    DATA_DIR               folder holding bot.sqlite3 and chroma/ (default ./data)
    CHROMA_HOST            Chroma server host; unset = embedded PersistentClient under DATA_DIR
    CHROMA_PORT            Chroma server port (default 8000)
    CHROMA_AUTH_TOKEN      the token a Chroma server started with token authentication asks
                           for (sent as "Authorization: Bearer"); never shown
    CHROMA_PROCESS         "true" (default): the embedded Chroma runs in a child process, whose
                           work cannot hold this process's GIL (memory.semantic.chroma_process); "false":
                           in this process's threads (starts seconds sooner). Unused with a server
    MEMORY_CACHE_MB        megabytes of users' memory items (vectors, texts, keyword index)
                           kept in the bot's process, least recently used evicted (default 512)
    MEMORY_SCOPE           "place" (default: guild items only in that guild, DM items only in
                           DMs) or "global" (a user's items are found everywhere)
    EMBEDDING_BACKEND      "local" (default, offline all-MiniLM-L6-v2) or "openai"
    EMBEDDING_MODEL        model name (default all-MiniLM-L6-v2, bundled / text-embedding-3-small); local:
                           any sentence-transformers model name or folder
    EMBEDDING_BASE_URL     OpenAI-compatible endpoint (default OPENAI_BASE_URL, else OpenAI's)
    EMBEDDING_API_KEY      its key (default OPENAI_API_KEY); never shown in errors or repr
    BUFFER_RETENTION_DAYS  days of channel history kept on disk (default 90; 0 = keep forever)

Values are parsed by the shared envsettings readers (why those and not pydantic: see its
docstring); their SettingError becomes this package's ConfigError.
Never reads os.environ itself. Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from envsettings import SettingError, read_bool, read_choice, read_int, read_secret, read_str, read_url
from memory.errors import ConfigError

__all__ = ["OP_TIMEOUT_S", "MemorySettings", "load_memory_settings"]

log = logging.getLogger(__name__)

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_DEFAULT_MODEL = "all-MiniLM-L6-v2"
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"

SQLITE_FILENAME = "bot.sqlite3"
CHROMA_DIRNAME = "chroma"
# The semantic memory's limit on one store call (open_user_memory's op_timeout_s, as the bot
# opens it): a call given up then has landed, or never will, soon after.
OP_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """Where memory lives and how it embeds; every field has a usable default."""

    data_dir: Path = Path("data")
    chroma_host: str | None = None
    chroma_port: int = 8000
    chroma_auth_token: str = field(default="", repr=False)
    chroma_process: bool = True
    memory_cache_mb: int = 512
    memory_scope: Literal["place", "global"] = "place"
    embedding_backend: Literal["local", "openai"] = "local"
    embedding_model: str = LOCAL_DEFAULT_MODEL
    embedding_base_url: str = OPENAI_DEFAULT_BASE_URL
    embedding_api_key: str = field(default="", repr=False)
    buffer_retention_days: int = 90
    trace_retention_days: int = 30

    @property
    def memory_cache_bytes(self) -> int:
        """MEMORY_CACHE_MB in bytes: the bound of the users' items held in the process."""
        return self.memory_cache_mb * 2**20

    @property
    def sqlite_path(self) -> Path:
        """The SQLite file for channel buffers and traces: DATA_DIR/bot.sqlite3."""
        return Path(self.data_dir) / SQLITE_FILENAME

    @property
    def chroma_path(self) -> Path:
        """The embedded Chroma folder: DATA_DIR/chroma."""
        return Path(self.data_dir) / CHROMA_DIRNAME


def _host(env: Mapping[str, str], name: str) -> str | None:
    raw = read_str(env, name, None)
    if raw is not None and ("://" in raw or "/" in raw or any(ch.isspace() for ch in raw)):
        raise SettingError(name, f"must be a host name or address, not a URL or path: {raw!r}")
    return raw


def _token(env: Mapping[str, str], name: str) -> str:
    """A token as Chroma accepts it: printable ASCII without spaces (chromadb refuses others)."""
    raw = read_secret(env, name, "")
    if raw and not all(33 <= ord(ch) <= 126 for ch in raw):
        raise SettingError(name, "must be ASCII letters, digits and punctuation only")
    return raw


def _read(env: Mapping[str, str]) -> MemorySettings:
    data_dir = Path(read_str(env, "DATA_DIR", "data")).expanduser()
    if data_dir.exists() and not data_dir.is_dir():
        raise SettingError("DATA_DIR", f"is not a directory: {str(data_dir)!r}")

    backend = read_choice(env, "EMBEDDING_BACKEND", ("local", "openai"), "local")
    default_model = LOCAL_DEFAULT_MODEL if backend == "local" else OPENAI_DEFAULT_MODEL
    base_url = read_url(
        env, "EMBEDDING_BASE_URL", read_url(env, "OPENAI_BASE_URL", OPENAI_DEFAULT_BASE_URL)
    )
    api_key = read_secret(env, "EMBEDDING_API_KEY", None) or read_secret(env, "OPENAI_API_KEY", "")
    if backend == "openai" and not api_key and urlsplit(base_url).hostname == "api.openai.com":
        raise SettingError(
            "EMBEDDING_API_KEY",
            f"(or OPENAI_API_KEY) is required when EMBEDDING_BACKEND=openai uses {base_url}",
        )
    return MemorySettings(
        data_dir=data_dir,
        chroma_host=_host(env, "CHROMA_HOST"),
        chroma_port=read_int(env, "CHROMA_PORT", 8000, low=1, high=65535),
        chroma_auth_token=_token(env, "CHROMA_AUTH_TOKEN"),
        chroma_process=read_bool(env, "CHROMA_PROCESS", True),
        memory_cache_mb=read_int(env, "MEMORY_CACHE_MB", 512, low=1),
        memory_scope=read_choice(env, "MEMORY_SCOPE", ("place", "global"), "place"),  # type: ignore[arg-type]
        embedding_backend=backend,  # type: ignore[arg-type]
        embedding_model=read_str(env, "EMBEDDING_MODEL", default_model),
        embedding_base_url=base_url,
        embedding_api_key=api_key,
        buffer_retention_days=read_int(env, "BUFFER_RETENTION_DAYS", 90, low=0),
        trace_retention_days=read_int(env, "TRACE_RETENTION_DAYS", 30, low=0),
    )


def load_memory_settings(env: Mapping[str, str]) -> MemorySettings:
    """Build MemorySettings from ``env``; raise ConfigError naming the bad variable."""
    try:
        settings = _read(env)
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
    log.debug("memory settings: %r", settings)
    return settings
