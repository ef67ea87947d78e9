"""The bot's secrets at start-up: read them (systemd credentials or the environment), then keep
them from every other process of the same user.

- `seal_process` makes this process non-dumpable (prctl PR_SET_DUMPABLE 0): other processes of
  the same user (an MCP stdio server the bot started, say) can then neither read
  /proc/<pid>/environ, which keeps the environment the process was started with whatever
  os.environ says later, nor its memory, nor attach a debugger to it.
- `read_credentials` reads $CREDENTIALS_DIRECTORY (systemd's LoadCredential=/SetCredential=):
  one file per secret, named after the variable it sets (DISCORD_TOKEN, OPENAI_API_KEY, ...).
  A credential wins over the same variable in the environment (`with_credentials`).
- `drop_secrets` removes the secrets from os.environ once the settings hold them, so that the
  children started afterwards (the Chroma worker, the embedding exporter, MCP servers) do not
  inherit them.

Part of bot/process/: imports only bot.settings.config and bot.errors.
"""

from __future__ import annotations

import ctypes
import re
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from bot.settings.config import Settings
from bot.errors import ConfigError

__all__ = ["ALWAYS_SECRET", "drop_secrets", "read_credentials", "seal_process", "secret_names",
           "with_credentials"]

# The variables that always hold secrets; LLM_MODELS' api_key_env names, the variables MCP
# entries put into headers or a server's env, and every credential are added (secret_names).
ALWAYS_SECRET = ("DISCORD_TOKEN", "OPENAI_API_KEY", "EMBEDDING_API_KEY", "CHROMA_AUTH_TOKEN")
CREDENTIAL_MAX_BYTES = 64 * 1024  # a token or a key; anything larger is not one
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PR_SET_DUMPABLE = 4  # <linux/prctl.h>


def seal_process() -> bool:
    """Make this process non-dumpable; False where that is not possible (not Linux, or refused).

    Through ctypes: the prctl packages on PyPI (python-prctl, pyprctl) are unmaintained since
    2020-2021, and this is one call of the C library already loaded."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def read_credentials(directory: str | None) -> dict[str, str]:
    """The secrets in ``directory`` ($CREDENTIALS_DIRECTORY; None or "": none), by file name,
    each without its trailing line break. ConfigError (one line naming the file) when a
    file is not named like a variable, is too large or cannot be read."""
    if not directory:
        return {}
    folder = Path(directory)
    try:
        files = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise ConfigError(f"CREDENTIALS_DIRECTORY {directory} cannot be read: {exc.strerror or exc}") from None
    found: dict[str, str] = {}
    for path in files:
        if not _NAME.match(path.name):
            raise ConfigError(f"credential {path.name!r} is not a variable name: name each credential "
                              "after the setting it holds (e.g. LoadCredential=DISCORD_TOKEN:...)")
        try:
            if path.stat().st_size > CREDENTIAL_MAX_BYTES:
                raise ConfigError(f"credential {path.name} is over {CREDENTIAL_MAX_BYTES // 1024} KiB: "
                                  "not a token or a key")
            raw = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"credential {path.name} cannot be read: {exc.strerror or exc}") from None
        try:
            found[path.name] = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            raise ConfigError(f"credential {path.name} is not UTF-8 text") from None
    return found


def with_credentials(environ: Mapping[str, str], credentials: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The settings' mapping: ``environ`` with ``credentials`` over it (a credential wins; an
    empty one counts as unset, as an empty variable does), and the names set both ways, for
    one warning line."""
    given = {name: value for name, value in credentials.items() if value.strip()}
    both = sorted(name for name in given if (environ.get(name) or "").strip())
    return {**environ, **given}, both


def secret_names(settings: Settings, credentials: Mapping[str, str]) -> set[str]:
    """The variables that hold secrets under ``settings``: see ALWAYS_SECRET."""
    names = set(ALWAYS_SECRET) | set(credentials)
    names.update(entry.api_key_env for entry in settings.models.entries.values() if entry.api_key_env)
    for server in settings.mcp.servers:
        names.update(server.secret_vars)
    return names


def drop_secrets(environ: MutableMapping[str, str], names: set[str]) -> list[str]:
    """Remove ``names`` from ``environ`` (os.environ: unsetenv too); the names removed."""
    dropped = sorted(name for name in names if name in environ)
    for name in dropped:
        del environ[name]
    return dropped
