"""The operator's model catalogue (LLM_MODELS): which models a server may choose, and where
each one is served.

LLM_MODELS is a JSON array; each entry is an object

    {"name": "gpt-4o-mini", "base_url": "https://api.openai.com/v1",
     "api_key_env": "OPENAI_API_KEY", "vision": true}

with ``name`` required, ``base_url`` (default OPENAI_BASE_URL), ``api_key_env`` (the NAME of
an environment variable holding the key) and ``vision`` (the model reads images; default
false) optional. Without ``api_key_env`` an entry is sent OPENAI_API_KEY only when it is served
where that key belongs (no ``base_url``, or one at OPENAI_BASE_URL's scheme, host and port);
an entry served elsewhere is sent no key at all (`ModelCatalog.key_for`). The default model (LLM_MODEL) is always allowed
and served at OPENAI_BASE_URL with OPENAI_API_KEY; an entry of the same name gives only its
vision flag (LLM_VISION=true says the same without an entry). A bad entry stops
start-up with one line naming the entry; a key's value is read once here and never shown.

Part of bot/: plain data; imports only the shared envsettings readers.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from envsettings import SettingError

__all__ = ["ModelCatalog", "ModelEntry", "model_for_turn", "parse_models"]

_KEYS = frozenset({"name", "base_url", "api_key_env", "vision"})
NAME_MAX_CHARS = 100


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One model a turn may use. ``base_url`` None: OPENAI_BASE_URL; ``api_key_env`` None:
    OPENAI_API_KEY."""

    name: str
    base_url: str | None
    api_key_env: str | None
    vision: bool


@dataclass(frozen=True, slots=True)
class ModelCatalog:
    """The default entry and the operator's other entries, by name."""

    default: ModelEntry
    entries: Mapping[str, ModelEntry] = field(default_factory=dict)
    _keys: Mapping[str, str] = field(default_factory=dict, repr=False)  # api_key_env -> value

    def names(self) -> list[str]:
        """Every model a server may choose, the default first."""
        return [self.default.name, *(n for n in self.entries if n != self.default.name)]

    def get(self, name: str) -> ModelEntry | None:
        if name == self.default.name:
            return self.default
        return self.entries.get(name)

    def key_for(self, entry: ModelEntry, default_base_url: str, default_key: str) -> str:
        """The key sent with ``entry``'s requests ("" for none): its api_key_env's value, else
        ``default_key`` (OPENAI_API_KEY) when the entry is served at ``default_base_url``'s
        origin, else none: a key is never sent to a host it was not given for."""
        if entry.api_key_env is not None:
            return self._keys.get(entry.api_key_env, "")
        if entry.base_url is None or _origin(entry.base_url) == _origin(default_base_url):
            return default_key
        return ""


def _has_valid_port(url: str) -> bool:
    try:
        urlsplit(url).port
    except ValueError:  # not a number, or out of range
        return False
    return True


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port filled in for http and https."""
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)


def model_for_turn(catalog: ModelCatalog, chosen: str | None) -> ModelEntry:
    """The entry a turn uses: the place's chosen model when the catalogue still has it (an
    entry removed by the operator falls back), else the default."""
    if chosen is not None and (entry := catalog.get(chosen)) is not None:
        return entry
    return catalog.default


def _entry(raw: object, index: int, env: Mapping[str, str]) -> tuple[ModelEntry, str | None]:
    where = f"entry {index + 1}"
    if not isinstance(raw, dict):
        raise SettingError("LLM_MODELS", f"{where} is not an object: {json.dumps(raw)[:80]}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX_CHARS:
        raise SettingError("LLM_MODELS", f"{where} needs a \"name\" (a string of 1 to {NAME_MAX_CHARS} characters)")
    name = name.strip()
    where = f"entry {index + 1} ({name!r})"
    if unknown := sorted(set(raw) - _KEYS):
        raise SettingError("LLM_MODELS", f"{where} has unknown key(s) {', '.join(unknown)}; "
                                         f"allowed: {', '.join(sorted(_KEYS))}")
    base_url = raw.get("base_url")
    if base_url is not None:
        parts = urlsplit(base_url) if isinstance(base_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not _has_valid_port(base_url):
            raise SettingError("LLM_MODELS", f"{where}: base_url is not a valid http(s) URL")
        base_url = base_url.rstrip("/")
    key_env = raw.get("api_key_env")
    key: str | None = None
    if key_env is not None:
        if not isinstance(key_env, str) or not key_env.strip():
            raise SettingError("LLM_MODELS", f"{where}: api_key_env must name an environment variable")
        key = (env.get(key_env) or "").strip()
        if not key:
            raise SettingError("LLM_MODELS", f"{where}: api_key_env names {key_env}, which is not set")
    vision = raw.get("vision", False)
    if not isinstance(vision, bool):
        raise SettingError("LLM_MODELS", f"{where}: vision must be true or false")
    return ModelEntry(name, base_url, key_env, vision), key


def parse_models(raw: str | None, env: Mapping[str, str], default_model: str,
                 default_vision: bool = False) -> ModelCatalog:
    """The catalogue of LLM_MODELS (None or blank: the default model alone); SettingError
    naming the bad entry. ``default_vision`` (LLM_VISION) marks the default model as seeing."""
    fallback = ModelEntry(default_model, None, None, default_vision)
    if raw is None or not raw.strip():
        return ModelCatalog(default=fallback)
    try:
        items = json.loads(raw)
    except ValueError as exc:
        raise SettingError("LLM_MODELS", f"is not valid JSON: {exc}") from None
    if not isinstance(items, list):
        raise SettingError("LLM_MODELS", "must be a JSON array of model entries")
    entries: dict[str, ModelEntry] = {}
    keys: dict[str, str] = {}
    for index, item in enumerate(items):
        entry, key = _entry(item, index, env)
        if entry.name in entries:
            raise SettingError("LLM_MODELS", f"entry {index + 1} ({entry.name!r}) repeats a name")
        entries[entry.name] = entry
        if key is not None and entry.api_key_env is not None:
            keys[entry.api_key_env] = key
    default = entries.get(default_model, fallback)
    if default_vision and not default.vision:
        default = entries[default_model] = dataclasses.replace(default, vision=True)
    if default.base_url is not None or default.api_key_env is not None:
        raise SettingError("LLM_MODELS", f"entry {list(entries).index(default.name) + 1} "
                                         f"({default.name!r}) is LLM_MODEL, served at OPENAI_BASE_URL "
                                         "with OPENAI_API_KEY: give it only name and vision")
    return ModelCatalog(default=default, entries=entries, _keys=keys)
