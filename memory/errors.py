"""Errors raised by memory/: one root, translated at the storage boundary.

    MemoryStoreError
     +-- ConfigError          a MEMORY setting is missing or invalid (names the variable)
     +-- SchemaVersionError   the SQLite file was written by a newer version of this code
     +-- StoreUnavailable     a store cannot be opened or reached (names the path or host:port)

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

__all__ = ["ConfigError", "MemoryStoreError", "SchemaVersionError", "StoreUnavailable"]


class MemoryStoreError(Exception):
    """Base for everything memory/ raises on purpose."""


class ConfigError(MemoryStoreError):
    """A memory setting is invalid; the message names the variable (never a secret's value)."""


class SchemaVersionError(MemoryStoreError):
    """The database schema is newer than this code understands.

    ``found`` is the version in the file, ``supported`` the newest this code knows.
    """

    def __init__(self, message: str, *, found: int | None = None, supported: int | None = None) -> None:
        super().__init__(message)
        self.found = found
        self.supported = supported


class StoreUnavailable(MemoryStoreError):
    """A store cannot be opened or reached; the message names the path or host:port."""
