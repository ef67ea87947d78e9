"""`python -m bot check` exits non-zero when the SQLite file opens but fails
`PRAGMA integrity_check` (an index that no longer matches its table), and names the fix."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memory.stores.database import Database
from tests.bot.test_check import check, check_env, fix_after, line
from tests.fakes.openai_server import FakeOpenAI


async def corrupt_an_index(path: Path) -> None:
    """A migrated file with buffer rows whose time index is pointed at another (empty) index's
    pages: every query still runs, integrity_check reports the rows missing from the index."""
    async with Database.open(path) as db:
        await db.executemany(
            "INSERT INTO buffer_messages (channel_id, author_id, author_name, role, content, created_at_us)"
            " VALUES ('1', '2', 'ann', 'user', ?, ?)", [(f"message {n}", n) for n in range(50)])
    conn = sqlite3.connect(path)
    try:
        roots = dict(conn.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'index'"))
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = 'buffer_messages_time'",
                     (roots["traces_message"],))
        conn.commit()
    finally:
        conn.close()


async def test_a_file_failing_its_integrity_check_fails_the_sqlite_check(fake: FakeOpenAI, tmp_path: Path) -> None:
    data = tmp_path / "data"
    await corrupt_an_index(data / "bot.sqlite3")
    code, out, _ = await check(check_env(fake, data), tmp_path)
    assert code == 1
    assert line(out, "SQLite schema").startswith("fail") and "integrity check" in line(out, "SQLite schema")
    assert "restore the latest backup" in fix_after(out, "SQLite schema")


async def test_a_sound_file_says_its_integrity_is_ok(fake: FakeOpenAI, tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with Database.open(data / "bot.sqlite3"):
        pass
    _, out, _ = await check(check_env(fake, data), tmp_path)
    assert line(out, "SQLite schema").startswith("ok") and "integrity ok" in line(out, "SQLite schema")
