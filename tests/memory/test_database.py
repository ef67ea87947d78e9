"""Database: opening, pragmas, migrations and versions, transactions, close, backup."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database
from memory.errors import SchemaVersionError, StoreUnavailable
from memory.stores.migrations import MIGRATIONS, SCHEMA_VERSION

INSERT = (
    "INSERT INTO buffer_messages (channel_id, author_id, author_name, role, content, created_at_us)"
    " VALUES ('1', '2', 'Ann', 'user', ?, 0)"
)


async def contents(db: Database) -> list[str]:
    return [row["content"] for row in await db.fetchall("SELECT content FROM buffer_messages ORDER BY id")]


# --- opening -------------------------------------------------------------------------------


async def test_open_as_context_manager_creates_folders_and_file(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "bot.sqlite3"
    async with Database.open(path) as db:
        assert db.path == path
        assert await db.schema_version() == SCHEMA_VERSION
    assert path.is_file()
    assert db.closed


async def test_open_by_await_then_close(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "bot.sqlite3")
    try:
        assert await db.schema_version() == SCHEMA_VERSION
    finally:
        await db.close()
    assert db.closed


async def test_connection_uses_wal_normal_sync_busy_timeout_and_foreign_keys(db: Database) -> None:
    assert (await db.fetchone("PRAGMA journal_mode"))[0] == "wal"
    assert (await db.fetchone("PRAGMA synchronous"))[0] == 1  # NORMAL
    assert (await db.fetchone("PRAGMA busy_timeout"))[0] == 10_000
    assert (await db.fetchone("PRAGMA foreign_keys"))[0] == 1


async def test_a_fresh_file_is_sound(db: Database) -> None:
    assert await db.integrity_check() == []


async def test_a_directory_as_path_is_refused_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "bot.sqlite3"
    folder.mkdir()
    with pytest.raises(StoreUnavailable, match="is a directory") as info:
        await Database.open(folder)
    assert str(folder) in str(info.value)


async def test_a_parent_that_is_a_file_is_refused_naming_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the folder should be")
    path = blocker / "bot.sqlite3"
    with pytest.raises(StoreUnavailable) as info:
        await Database.open(path)
    assert str(path) in str(info.value)


async def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    garbage = b"this is not a database, just bytes " * 200
    path.write_bytes(garbage)
    with pytest.raises(StoreUnavailable) as info:
        await Database.open(path)
    assert str(path) in str(info.value)
    assert path.read_bytes() == garbage


OPEN_AND_REPORT = """
import asyncio, sys
from memory import Database, StoreUnavailable

async def main():
    try:
        await Database.open(sys.argv[1])
    except StoreUnavailable as exc:
        print("StoreUnavailable:", exc)
    else:
        print("opened")

asyncio.run(main())
"""


def open_without_file_privileges(path: Path) -> subprocess.CompletedProcess[str]:
    """Open ``path`` in a child process that file permissions apply to (as root: without
    CAP_DAC_OVERRIDE, through util-linux setpriv)."""
    command = [sys.executable, "-c", OPEN_AND_REPORT, str(path)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "running as root: util-linux setpriv is needed to drop file privileges"
        command = [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--", *command]
    repo = Path(__file__).resolve().parents[2]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=60)


async def test_a_folder_without_write_permission_is_refused_naming_the_path(tmp_path: Path) -> None:
    folder = tmp_path / "readonly"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = open_without_file_privileges(folder / "bot.sqlite3")
    finally:
        folder.chmod(0o755)
    assert result.stdout.startswith("StoreUnavailable:"), result.stdout + result.stderr
    assert str(folder / "bot.sqlite3") in result.stdout
    assert result.stderr == ""


async def test_a_read_only_file_is_refused_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    async with Database.open(path):
        pass
    path.chmod(0o444)
    try:
        result = open_without_file_privileges(path)
    finally:
        path.chmod(0o644)
    assert result.stdout.startswith("StoreUnavailable:"), result.stdout + result.stderr
    assert str(path) in result.stdout


# --- migrations ----------------------------------------------------------------------------


async def test_a_new_file_records_each_migration_once(db: Database) -> None:
    rows = await db.fetchall("SELECT version, name FROM schema_migrations ORDER BY version")
    assert [(r["version"], r["name"]) for r in rows] == [(m.version, m.name) for m in MIGRATIONS]


async def test_reopening_applies_nothing_again(db_path: Path) -> None:
    for _ in range(3):
        async with Database.open(db_path) as db:
            rows = await db.fetchall("SELECT version FROM schema_migrations")
            assert len(rows) == len(MIGRATIONS)


def make_version_1_file(path: Path) -> None:
    """A file as version 1 of this code left it (DDL copied here on purpose, not imported)."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
                                        applied_at TEXT NOT NULL);
        CREATE TABLE buffer_messages (
            id INTEGER PRIMARY KEY, channel_id TEXT NOT NULL, guild_id TEXT,
            author_id TEXT NOT NULL, author_name TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'other')),
            content TEXT NOT NULL, created_at_us INTEGER NOT NULL, message_id TEXT);
        CREATE INDEX buffer_messages_channel_time ON buffer_messages (channel_id, created_at_us, id);
        CREATE INDEX buffer_messages_time ON buffer_messages (created_at_us);
        CREATE UNIQUE INDEX buffer_messages_discord_id ON buffer_messages (channel_id, message_id)
            WHERE message_id IS NOT NULL;
        INSERT INTO schema_migrations VALUES (1, 'm001_channel_buffer', '2026-01-01T00:00:00+00:00');
        INSERT INTO buffer_messages (channel_id, guild_id, author_id, author_name, role, content,
                                    created_at_us, message_id)
        VALUES ('100', '900', '42', 'Ann', 'user', 'said before the upgrade', 1767225600000000, '555');
        PRAGMA user_version = 1;
        """
    )
    conn.close()


async def test_a_version_1_file_is_upgraded_in_place_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    make_version_1_file(path)
    async with Database.open(path) as db:
        assert await db.schema_version() == SCHEMA_VERSION
        versions = [r["version"] for r in await db.fetchall("SELECT version FROM schema_migrations")]
        assert versions == [m.version for m in MIGRATIONS]
        assert await db.fetchone("SELECT name FROM sqlite_master WHERE name = 'traces'") is not None
        kept = await ChannelBuffer(db).recent("100")
    assert [(m.content, m.message_id) for m in kept] == [("said before the upgrade", "555")]


async def test_a_file_from_a_newer_version_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(SchemaVersionError) as info:
        await Database.open(path)
    message = str(info.value)
    assert "99" in message and f"version {SCHEMA_VERSION}" in message and str(path) in message
    assert (info.value.found, info.value.supported) == (99, SCHEMA_VERSION)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 99
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    finally:
        conn.close()


async def test_two_databases_opening_a_new_file_at_once_migrate_it_once(db_path: Path) -> None:
    first, second = await asyncio.gather(Database.open(db_path), Database.open(db_path))
    try:
        rows = await first.fetchall("SELECT version FROM schema_migrations")
        assert len(rows) == len(MIGRATIONS)
        assert await second.schema_version() == SCHEMA_VERSION
    finally:
        await first.close()
        await second.close()


# --- transactions --------------------------------------------------------------------------


async def test_a_transaction_commits_when_its_block_succeeds(db: Database) -> None:
    async with db.transaction():
        await db.execute(INSERT, ("one",))
        await db.execute(INSERT, ("two",))
    assert await contents(db) == ["one", "two"]


async def test_a_transaction_rolls_back_and_reraises_when_its_block_fails(db: Database) -> None:
    with pytest.raises(ZeroDivisionError):
        async with db.transaction():
            await db.execute(INSERT, ("one",))
            1 / 0
    assert await contents(db) == []


async def test_a_failed_nested_block_undoes_only_itself(db: Database) -> None:
    async with db.transaction():
        await db.execute(INSERT, ("outer",))
        with pytest.raises(KeyError):
            async with db.transaction():
                await db.execute(INSERT, ("inner",))
                raise KeyError("inner fails")
        await db.execute(INSERT, ("after",))
    assert await contents(db) == ["outer", "after"]


async def test_a_failed_outer_block_undoes_its_committed_nested_blocks(db: Database) -> None:
    with pytest.raises(RuntimeError):
        async with db.transaction():
            async with db.transaction():
                await db.execute(INSERT, ("inner",))
            raise RuntimeError("outer fails")
    assert await contents(db) == []


async def test_other_tasks_do_not_see_uncommitted_rows(db: Database) -> None:
    inside = asyncio.Event()
    release = asyncio.Event()

    async def writer() -> None:
        async with db.transaction():
            await db.execute(INSERT, ("pending",))
            inside.set()
            await release.wait()

    task = asyncio.create_task(writer())
    await inside.wait()
    try:
        reader = asyncio.create_task(contents(db))
        await asyncio.sleep(0.05)
        assert not reader.done()  # the read waits for the transaction rather than seeing its rows
    finally:
        release.set()
        await task
    assert await reader == ["pending"]


async def test_a_cancelled_transaction_rolls_back_and_the_database_stays_usable(db: Database) -> None:
    inside = asyncio.Event()

    async def writer() -> None:
        async with db.transaction():
            await db.execute(INSERT, ("never committed",))
            inside.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(writer())
    await inside.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await db.execute(INSERT, ("later",))
    assert await contents(db) == ["later"]


async def test_children_gathered_in_a_transaction_keep_their_nested_blocks_apart(db: Database) -> None:
    async def child(name: str, fail: bool) -> None:
        async with db.transaction():
            for i in range(3):
                await db.execute(INSERT, (f"{name}{i}",))
                await asyncio.sleep(0)
            if fail:
                raise LookupError(name)

    async def plain(name: str) -> None:
        for i in range(3):
            await db.execute(INSERT, (f"{name}{i}",))
            await asyncio.sleep(0)

    async with db.transaction():
        results = await asyncio.gather(
            child("a", False), child("b", True), plain("p"), child("c", False), return_exceptions=True
        )
    assert [type(r) for r in results] == [type(None), LookupError, type(None), type(None)]
    assert sorted(await contents(db)) == ["a0", "a1", "a2", "c0", "c1", "c2", "p0", "p1", "p2"]


async def test_a_task_started_in_a_transaction_that_outlives_it_waits_its_turn(db: Database) -> None:
    go = asyncio.Event()

    async def late_write() -> None:
        await go.wait()
        await db.execute(INSERT, ("late",))

    async with db.transaction():
        await db.execute(INSERT, ("first",))
        late = asyncio.create_task(late_write())

    with pytest.raises(RuntimeError):
        async with db.transaction():
            await db.execute(INSERT, ("rolled back",))
            go.set()
            await asyncio.sleep(0.05)  # the late task runs now; it must not join this transaction
            raise RuntimeError("undo this block")
    await late
    assert await contents(db) == ["first", "late"]


async def test_a_second_process_sees_only_committed_work(db: Database) -> None:
    async with db.transaction():
        await db.execute(INSERT, ("pending",))
        other = sqlite3.connect(db.path)
        try:
            assert other.execute("SELECT count(*) FROM buffer_messages").fetchone()[0] == 0
        finally:
            other.close()
    other = sqlite3.connect(db.path)
    try:
        assert other.execute("SELECT count(*) FROM buffer_messages").fetchone()[0] == 1
    finally:
        other.close()


async def test_a_storage_failure_in_use_is_store_unavailable_naming_the_path(
    db: Database, make_message: Callable[..., BufferedMessage]
) -> None:
    other = sqlite3.connect(db.path)
    other.execute("DROP TABLE buffer_messages")  # the file damaged from outside
    other.commit()
    other.close()
    buffer = ChannelBuffer(db)
    with pytest.raises(StoreUnavailable) as info:
        await buffer.append(make_message(0))
    assert str(db.path) in str(info.value)
    with pytest.raises(StoreUnavailable):
        await buffer.recent("100")
    async with db.transaction():  # the connection is still usable for what remains
        await db.execute("CREATE TABLE scratch (x)")


# --- close ---------------------------------------------------------------------------------


async def test_close_waits_for_a_running_transaction(db_path: Path) -> None:
    db = await Database.open(db_path)
    inside = asyncio.Event()
    release = asyncio.Event()

    async def writer() -> None:
        async with db.transaction():
            await db.execute(INSERT, ("finished before close",))
            inside.set()
            await release.wait()

    task = asyncio.create_task(writer())
    await inside.wait()
    closing = asyncio.create_task(db.close())
    try:
        await asyncio.sleep(0.05)
        assert not closing.done()
    finally:
        release.set()
        await task
        await closing
    async with Database.open(db_path) as again:
        assert await contents(again) == ["finished before close"]


async def test_closing_twice_is_harmless(db_path: Path) -> None:
    db = await Database.open(db_path)
    await db.close()
    await db.close()
    assert db.closed


async def test_using_a_closed_database_raises_store_unavailable(db_path: Path) -> None:
    db = await Database.open(db_path)
    await db.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        await db.execute(INSERT, ("x",))
    with pytest.raises(StoreUnavailable, match="closed"):
        await db.fetchall("SELECT 1")


async def test_close_inside_its_own_transaction_is_an_error(db: Database) -> None:
    with pytest.raises(RuntimeError, match="inside a transaction"):
        async with db.transaction():
            await db.close()


async def test_rows_survive_close_and_reopen(db_path: Path, make_message: Callable[..., BufferedMessage]) -> None:
    async with Database.open(db_path) as db:
        await ChannelBuffer(db).append_many([make_message(i) for i in range(5)])
    async with Database.open(db_path) as db:
        assert [m.content for m in await ChannelBuffer(db).recent("100")] == [f"message {i}" for i in range(5)]


# --- backup --------------------------------------------------------------------------------


async def test_backup_copies_committed_rows_to_a_database_that_opens(db: Database, tmp_path: Path) -> None:
    await db.execute(INSERT, ("kept in the backup",))
    dest = await db.backup(tmp_path / "backups" / "bot-backup.sqlite3")
    assert dest == tmp_path / "backups" / "bot-backup.sqlite3"
    assert not dest.with_name(dest.name + ".partial").exists()
    async with Database.open(dest) as copy:
        assert await contents(copy) == ["kept in the backup"]
        assert await copy.integrity_check() == []


async def test_backup_replaces_an_older_backup(db: Database, tmp_path: Path) -> None:
    dest = tmp_path / "backup.sqlite3"
    await db.execute(INSERT, ("first",))
    await db.backup(dest)
    await db.execute(INSERT, ("second",))
    await db.backup(dest)
    async with Database.open(dest) as copy:
        assert await contents(copy) == ["first", "second"]


async def test_backup_while_other_tasks_write_is_consistent(db: Database, tmp_path: Path) -> None:
    async def write(n: int) -> None:
        for i in range(20):
            await db.execute(INSERT, (f"w{n}-{i}",))

    writers = [asyncio.create_task(write(n)) for n in range(5)]
    await asyncio.sleep(0)
    dest = await db.backup(tmp_path / "backup.sqlite3")
    await asyncio.gather(*writers)
    async with Database.open(dest) as copy:
        assert await copy.integrity_check() == []
        assert len(await contents(copy)) <= 100
    assert len(await contents(db)) == 100


async def test_backup_onto_the_database_itself_is_refused(db: Database) -> None:
    with pytest.raises(ValueError, match="itself"):
        await db.backup(db.path)


async def test_backup_onto_a_directory_is_refused_naming_it(db: Database, tmp_path: Path) -> None:
    folder = tmp_path / "somewhere"
    folder.mkdir()
    with pytest.raises(StoreUnavailable) as info:
        await db.backup(folder)
    assert str(folder) in str(info.value)


async def test_backup_inside_a_transaction_is_an_error(db: Database, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="uncommitted"):
        async with db.transaction():
            await db.backup(tmp_path / "backup.sqlite3")
