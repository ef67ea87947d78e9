"""The SQLite file holding channel buffers and traces: opening, migrating, transactions, backup.

Storage design. One file (DATA_DIR/bot.sqlite3) in WAL mode, so readers never block the
writer and a crash leaves only whole transactions. ``synchronous=NORMAL``: in WAL mode this
still never corrupts the file and loses nothing when the process dies (a commit is in the WAL
before it returns); only a power cut or OS crash can drop the last few commits, which for a
chat buffer is a fair price for not waiting on an fsync per message. ``busy_timeout`` makes a
second connection (another Database, another process) wait for the write lock instead of
failing with "database is locked"; every write transaction starts with ``BEGIN IMMEDIATE`` so
it takes that lock up front, where the wait applies (a deferred transaction that upgrades
from read to write can fail at once instead). ``secure_delete`` overwrites what a delete
removes (a forget, a prune), so that erased words do not stay in the file's free pages.

One aiosqlite connection per Database, which runs every statement on its own thread; an
asyncio lock serializes transactions and reads so that no task sees another task's
uncommitted rows. ``transaction()`` nests: inside an open transaction of the same task (or of
tasks it spawned, through a context variable) it becomes a SAVEPOINT, so a store method that
opens its own transaction can run inside a caller's transaction (buffer + trace atomically).
Child tasks gathered inside a transaction take turns: each statement or nested block holds
the lock of the level it runs in, so one child's statements never land in another's
savepoint. A task that outlives the transaction it was started in goes back to the
Database's lock.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Generator, Iterable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import aiosqlite

from memory.errors import SchemaVersionError, StoreUnavailable
from memory.stores.migrations import MIGRATIONS, MIGRATIONS_TABLE, SCHEMA_VERSION
from memory.tokens import estimate_tokens

__all__ = ["Database", "DatabaseOpener"]

log = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_S = 10.0


class _Level:
    """One open transaction or savepoint level of a Database, as seen by a context.

    Tasks started inside a transaction inherit the context; ``open`` turns false when the level
    ends, so such a task that outlives it goes back to taking the lock.
    """

    __slots__ = ("db", "lock", "open")

    def __init__(self, db: Database) -> None:
        self.db = db
        self.open = True
        self.lock = asyncio.Lock()  # taken by each statement or nested block run at this level


# The transaction levels entered in the current context, outermost first.
_levels: ContextVar[tuple[_Level, ...]] = ContextVar("memory_transaction_levels", default=())


def epoch_us(when: datetime) -> int:
    """Microseconds since the epoch for an aware datetime (naive ones are refused)."""
    if not isinstance(when, datetime):
        raise TypeError(f"expected a datetime, got {type(when).__name__}")
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"datetime must be timezone-aware (UTC): {when.isoformat()}")
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_epoch_us(us: int) -> datetime:
    """The aware UTC datetime for microseconds since the epoch."""
    seconds, micros = divmod(us, 1_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros)


def storable_text(text: str) -> str:
    """``text`` with lone surrogates (invalid in UTF-8, e.g. from a JSON "\\ud800") replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def require_id(name: str, value: object, *, optional: bool = False) -> None:
    """An id to store must be a non-blank str (None allowed when `optional`); else TypeError
    or ValueError naming the field."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} must not be empty")


def _file_place(path: Path, what: str) -> None:
    """Create the folder of the file `path` (the database or a backup); StoreUnavailable naming
    it when that fails or when `path` is a directory."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailable(f"cannot create the folder of the {what} {str(path)!r}: {exc}") from exc
    if path.is_dir():
        raise StoreUnavailable(f"the {what} path {str(path)!r} is a directory, not a file")


def _probe(path: Path, busy_timeout_s: float) -> None:
    conn = sqlite3.connect(path, timeout=busy_timeout_s)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    finally:
        conn.close()


async def _enter_wal(conn: aiosqlite.Connection, busy_timeout_s: float) -> str:
    """Switch to WAL and return the journal mode now in force.

    SQLite does not call the busy handler for a journal-mode change, so when two processes
    open a fresh file at once the second gets "database is locked" at once; it retries here,
    within the busy timeout, instead of failing the open.
    """
    deadline = time.monotonic() + busy_timeout_s
    delay = 0.005
    while True:
        try:
            rows = await conn.execute_fetchall("PRAGMA journal_mode = WAL")
            return str(next(iter(rows))[0]).lower()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)

class DatabaseOpener:
    """What ``Database.open`` returns: await it, or use it with ``async with``."""

    def __init__(self, path: Path, busy_timeout_s: float) -> None:
        self._path = path
        self._busy_timeout_s = busy_timeout_s
        self._db: Database | None = None

    def __await__(self) -> Generator[Any, None, Database]:
        return Database._connect(self._path, self._busy_timeout_s).__await__()

    async def __aenter__(self) -> Database:
        self._db = await Database._connect(self._path, self._busy_timeout_s)
        return self._db

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._db is not None:
            await self._db.close()


class Database:
    """One SQLite file, migrated to the current schema, with serialized transactions."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        """Use ``Database.open(path)``; this wraps an already configured connection."""
        self._conn = conn
        self._path = path
        self._lock = asyncio.Lock()
        self._closed = False
        self._savepoints = 0

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> DatabaseOpener:
        """Open (creating folders and file as needed) and migrate the database at ``path``.

        Raises StoreUnavailable naming the path when it cannot be opened or written, and
        SchemaVersionError when the file was written by a newer schema.
        """
        return DatabaseOpener(Path(path), busy_timeout_s)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return f"<Database {str(self._path)!r}{' closed' if self._closed else ''}>"

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @classmethod
    async def _connect(cls, path: Path, busy_timeout_s: float) -> Database:
        _file_place(path, "database")
        try:
            # A plain probe first: an unopenable path or a file that is not SQLite fails here,
            # before aiosqlite starts its worker thread.
            await asyncio.to_thread(_probe, path, busy_timeout_s)
            conn = await aiosqlite.connect(path, timeout=busy_timeout_s, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open the database {str(path)!r}: {exc}") from exc
        try:
            conn.row_factory = sqlite3.Row
            await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            mode = await _enter_wal(conn, busy_timeout_s)
            if mode != "wal":
                raise StoreUnavailable(f"the database {str(path)!r} cannot use WAL mode (journal_mode={mode})")
            await conn.execute("PRAGMA synchronous = NORMAL")
            await conn.execute("PRAGMA foreign_keys = ON")
            await conn.execute("PRAGMA secure_delete = ON")  # a deleted row's words are zeroed, not left in free pages
            # the stores measure text in SQL with the same estimate as in Python (memory.stores.buffer.sizes)
            await conn.create_function("estimate_tokens", 1, estimate_tokens, deterministic=True)
            db = cls(conn, path)
            await db._migrate()
        except BaseException as exc:
            await conn.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreUnavailable(f"cannot use the database {str(path)!r}: {exc}") from exc
            raise
        log.debug("opened %s (schema version %d)", path, SCHEMA_VERSION)
        return db

    async def _migrate(self) -> None:
        async with self.transaction():  # BEGIN IMMEDIATE: a second opener waits, then sees our work
            found = await self._user_version()
            if found > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"the database {str(self._path)!r} has schema version {found}, newer than version "
                    f"{SCHEMA_VERSION} that this code supports; run the newer code or restore a backup",
                    found=found,
                    supported=SCHEMA_VERSION,
                )
            pending = [m for m in MIGRATIONS if m.version > found]
            # Written even when current: a file that cannot be written fails here, at open.
            await self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if not pending:
                return
            await self._conn.execute(MIGRATIONS_TABLE)
            now = datetime.now(UTC).isoformat()
            for migration in pending:
                for statement in migration.statements:
                    await self._conn.execute(statement)
                await self._conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, now),
                )
                log.info("database %s: applied migration %s", self._path, migration.name)

    async def _user_version(self) -> int:
        rows = await self._conn.execute_fetchall("PRAGMA user_version")
        return int(next(iter(rows))[0])

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable(f"the database {str(self._path)!r} is closed")

    def _innermost(self) -> _Level | None:
        """The innermost open transaction level of this Database in the current context."""
        mine = [level for level in _levels.get() if level.db is self]
        if not mine or not mine[0].open:
            return None
        return [level for level in mine if level.open][-1]

    def _in_transaction(self) -> bool:
        return self._innermost() is not None

    def _translate(self, exc: sqlite3.Error) -> StoreUnavailable | None:
        """The StoreUnavailable for a storage failure; None for errors of the caller's making
        (constraint violations, misuse), which pass through as sqlite3's own."""
        if isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError:
            return StoreUnavailable(f"database {str(self._path)!r}: {exc}")
        return None

    @asynccontextmanager
    async def _translated(self) -> AsyncIterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            translated = self._translate(exc)
            if translated is None:
                raise
            raise translated from exc

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Exclusive use of the connection for one statement (or one nested block): the
        innermost open level's lock inside a transaction, else the Database's own lock."""
        level = self._innermost()
        if level is not None:
            async with level.lock, self._translated():
                yield
            return
        async with self._lock, self._translated():
            self._check_open()
            yield

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """Commit what runs inside on success, roll it back on any exception.

        Nested use (the same task, or tasks started inside) is a SAVEPOINT: an inner failure
        that the caller catches undoes only the inner block.
        """
        parent = self._innermost()
        if parent is not None:
            async with parent.lock, self._translated():
                async with self._savepoint():
                    yield
            return
        async with self._lock, self._translated():
            self._check_open()
            level = _Level(self)
            token = _levels.set((*_levels.get(), level))
            try:
                try:
                    await self._conn.execute("BEGIN IMMEDIATE")
                    yield
                    await self._conn.commit()
                except BaseException:
                    await self._conn.rollback()
                    raise
            finally:
                level.open = False
                _levels.reset(token)

    @asynccontextmanager
    async def _savepoint(self) -> AsyncIterator[None]:
        self._savepoints += 1
        name = f"sp{self._savepoints}"
        await self._conn.execute(f"SAVEPOINT {name}")
        level = _Level(self)
        token = _levels.set((*_levels.get(), level))
        try:
            try:
                yield
            except BaseException:
                await self._conn.execute(f"ROLLBACK TO {name}")
                raise
            finally:
                await self._conn.execute(f"RELEASE {name}")
        finally:
            level.open = False
            _levels.reset(token)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one writing statement (in the open transaction, or its own); rows changed."""
        if self._in_transaction():
            async with self._turn():
                cursor = await self._conn.execute(sql, params)
                return cursor.rowcount
        async with self.transaction():
            cursor = await self._conn.execute(sql, params)
            return cursor.rowcount

    async def delete_in_batches(self, sql: str, cutoff: int, batch: int) -> int:
        """Run a DELETE taking (cutoff, batch) until it deletes fewer than ``batch`` rows, each
        run its own transaction, so a large delete never holds the write lock for long (inside
        a caller's transaction it is all one); returns the rows deleted."""
        total = 0
        while True:
            deleted = await self.execute(sql, (cutoff, batch))
            total += deleted
            if deleted < batch:
                return total

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        """Run one writing statement per row, all or none (a savepoint inside a transaction)."""
        async with self.transaction():
            cursor = await self._conn.executemany(sql, rows)
            return cursor.rowcount

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of one query, never seeing another task's uncommitted writes."""
        async with self._turn():
            return list(await self._conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """The first row of one query, or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def schema_version(self) -> int:
        """The schema version recorded in the file (PRAGMA user_version)."""
        row = await self.fetchone("PRAGMA user_version")
        assert row is not None
        return int(row[0])

    async def integrity_check(self) -> list[str]:
        """Problems found by PRAGMA integrity_check; an empty list means the file is sound."""
        rows = await self.fetchall("PRAGMA integrity_check")
        problems = [str(row[0]) for row in rows]
        return [] if problems == ["ok"] else problems

    async def backup(self, dest_path: str | os.PathLike[str]) -> Path:
        """Copy the database, consistently and while in use, to ``dest_path`` (replaced if present).

        Uses SQLite's online backup API; the copy is written beside the destination and renamed
        into place, so a failed backup never leaves a half-written file under that name.
        """
        dest = Path(dest_path)
        if dest.resolve() == self._path.resolve():
            raise ValueError(f"the backup destination is the database itself: {str(dest)!r}")
        if self._in_transaction():
            raise RuntimeError("backup() inside a transaction would copy uncommitted rows")
        _file_place(dest, "backup")
        partial = dest.with_name(dest.name + ".partial")
        partial.unlink(missing_ok=True)
        try:
            target = sqlite3.connect(partial, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot write the backup {str(dest)!r}: {exc}") from exc
        try:
            async with self._lock:
                self._check_open()
                await self._conn.backup(target)
            target.close()
            os.replace(partial, dest)
        except BaseException as exc:
            target.close()
            partial.unlink(missing_ok=True)
            if isinstance(exc, sqlite3.Error | OSError):
                raise StoreUnavailable(f"cannot write the backup {str(dest)!r}: {exc}") from exc
            raise
        log.info("backed up %s to %s", self._path, dest)
        return dest

    async def close(self) -> None:
        """Wait for the running transaction, then close; closing twice is harmless."""
        if self._closed:
            return
        if self._in_transaction():
            raise RuntimeError("close() inside a transaction of the same database")
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                await self._conn.execute("PRAGMA optimize")
            except sqlite3.Error as exc:
                log.warning("database %s: PRAGMA optimize failed: %s", self._path, exc)
            await self._conn.close()
        log.debug("closed %s", self._path)
