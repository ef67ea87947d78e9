"""What the semantic memory accepts: user ids, scopes, texts and metadata, checked and normalised.

Every public method of `memory.semantic.UserMemory` checks its arguments here first, so the
rules hold alike everywhere (see that module's docstring for the rules themselves). Also
decides what of an item is embedded and keyword-indexed (`indexed_text`): its text, after the
item's `context` (and `index_only_context`) metadata when there is one.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

__all__ = [
    "HIDDEN_TERMS_KEY",
    "INDEX_ONLY_KEY",
    "MAX_TEXT_CHARS",
    "check_metadata",
    "check_scope",
    "check_text",
    "check_user",
    "indexed_text",
    "scope_for",
    "visible",
]

MAX_TEXT_CHARS = 8_000
MAX_USER_ID_CHARS = 128
MAX_METADATA_KEYS = 32
MAX_METADATA_TEXT = 2_000
RESERVED_KEYS = frozenset({"user_id", "scope", "truncated_from"})
CONTEXT_KEY = "context"
# Text an item is embedded and keyword-indexed by but does not keep (UserMemory._prepare):
# another person's words, say. It is taken out of the metadata before anything is stored.
INDEX_ONLY_KEY = "index_only_context"
# What the memory keeps instead: its terms' hashes (memory.semantic.keyword_index.hidden_terms).
HIDDEN_TERMS_KEY = "context_terms_hashed"
SPEAKER_KEY = "speaker"
_SCOPE = re.compile(r"^(?:|dm|guild:[^\s]{1,64})$")


def scope_for(guild_id: str | None) -> str:
    """The scope of a place: "guild:<id>" for a guild, "dm" for direct messages (None)."""
    if guild_id is None:
        return "dm"
    if not isinstance(guild_id, str):
        raise TypeError(f"guild_id must be a str or None, not {type(guild_id).__name__}")
    if not guild_id.strip() or any(ch.isspace() for ch in guild_id):
        raise ValueError(f"guild_id must be a non-empty id without spaces: {guild_id!r}")
    return f"guild:{guild_id}"


def check_user(user_id: str) -> str:
    if not isinstance(user_id, str):
        raise TypeError(f"user_id must be a str, not {type(user_id).__name__}")
    if not user_id.strip():
        raise ValueError("user_id must not be empty")
    if len(user_id) > MAX_USER_ID_CHARS:
        raise ValueError(f"user_id is longer than {MAX_USER_ID_CHARS} characters")
    if any(unicodedata.category(ch) == "Cc" for ch in user_id):
        raise ValueError(f"user_id contains control characters: {user_id!r}")
    return user_id


def check_scope(scope: str | None) -> str | None:
    if scope is None:
        return None
    if not isinstance(scope, str):
        raise TypeError(f"scope must be a str or None, not {type(scope).__name__}")
    if not _SCOPE.match(scope):
        raise ValueError(f"scope must be 'dm', 'guild:<id>' or '' (unscoped), not {scope!r}; use scope_for()")
    return scope


def visible(text: str) -> str:
    """Text without invisible format characters (zero-width, bidi controls), spaces collapsed."""
    if text.isascii():  # no format characters, nothing to compose
        return " ".join(text.split())
    text = unicodedata.normalize("NFC", text)
    return " ".join("".join(ch for ch in text if unicodedata.category(ch) != "Cf").split())


def _truncate(text: str) -> tuple[str, int | None]:
    if len(text) <= MAX_TEXT_CHARS:
        return text, None
    cut = text[:MAX_TEXT_CHARS]
    space = cut.rfind(" ", MAX_TEXT_CHARS - 200)
    return (cut[:space] if space > 0 else cut).rstrip(), len(text)


def check_text(text: str) -> tuple[str, int | None]:
    """(stored text, original length if truncated); ValueError if blank."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    stored, original = _truncate(text)
    if not visible(stored):
        raise ValueError("text is empty or only whitespace / invisible characters; nothing stored")
    return stored, original


def indexed_text(text: str, metadata: Mapping[str, Any]) -> str:
    """What an item is embedded by (and, with more, keyword-indexed by: `memory.semantic.item_text`):
    its visible text, "<speaker>: " before it when its `speaker` metadata is a str, after its
    context and a newline when it has one: its `index_only_context` and its `context` metadata
    (strs, e.g. the turn before a short reply), in that order."""
    body = visible(text)
    speaker = metadata.get(SPEAKER_KEY)
    if isinstance(speaker, str) and (who := visible(speaker).strip()):
        body = f"{who}: {body}"
    contexts = (metadata.get(INDEX_ONLY_KEY), metadata.get(CONTEXT_KEY))
    if before := " ".join(seen for c in contexts if isinstance(c, str) and (seen := visible(c))):
        return f"{before}\n{body}"
    return body


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, str | int | float | bool]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping, not {type(metadata).__name__}")
    if len(metadata) > MAX_METADATA_KEYS:
        raise ValueError(f"metadata has more than {MAX_METADATA_KEYS} keys")
    out: dict[str, str | int | float | bool] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"metadata keys must be non-empty strings: {key!r}")
        if key in RESERVED_KEYS:
            raise ValueError(f"metadata key {key!r} is reserved (set by the memory itself)")
        if value is None:
            continue
        if isinstance(value, (bool, int, str)):
            if isinstance(value, str) and len(value) > MAX_METADATA_TEXT:
                raise ValueError(f"metadata[{key!r}] is longer than {MAX_METADATA_TEXT} characters")
            out[key] = value
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"metadata[{key!r}] must be a finite number, not {value!r}")
            out[key] = value
        elif isinstance(value, (datetime, date)):
            out[key] = value.isoformat()
        elif isinstance(value, (Mapping, list, tuple, set, frozenset)):
            raise ValueError(
                f"metadata[{key!r}] is a nested {type(value).__name__}; values must be str, int, float or bool"
            )
        else:
            raise ValueError(
                f"metadata[{key!r}] is a {type(value).__name__}; values must be str, int, float or bool"
            )
    for key in (CONTEXT_KEY, INDEX_ONLY_KEY):
        if key in out and not isinstance(out[key], str):
            raise ValueError(f"metadata[{key!r}] must be a str (the text indexed before the item's own)")
    return out
