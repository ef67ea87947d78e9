"""The backup commands deploy/README.md gives, run as written (the service user's sudo and the
real paths swapped for a temporary folder): each copies a live WAL-mode database, including
rows still only in its write-ahead log, into a whole, readable file."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.conftest import DEPLOY_README, NAME
from tests.needs import require_tool


def readme_command(marker: str) -> str:
    """The first ```sh block after ``marker`` in deploy/README.md, as one shell command."""
    text = DEPLOY_README.read_text(encoding="utf-8")
    start = text.index(marker)
    match = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    assert match, f"no sh block after {marker!r}"
    return match.group(1)


def localized(command: str, data: Path) -> str:
    return (command.replace(f"sudo -u {NAME} ", "")
            .replace(f"/opt/{NAME}/bin/python", sys.executable)
            .replace(f"/var/lib/{NAME}", str(data)))


@pytest.fixture
def live_database(tmp_path: Path):
    """A WAL database with 500 rows, the last 200 committed but not yet checkpointed, and its
    writer still connected (as while the bot runs)."""
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    db.execute("pragma journal_mode=wal")
    db.execute("pragma wal_autocheckpoint=0")
    db.execute("create table buffer(n integer, content text)")
    db.executemany("insert into buffer values (?, ?)", ((n, "x" * 100) for n in range(300)))
    db.commit()
    db.execute("pragma wal_checkpoint(truncate)")
    db.executemany("insert into buffer values (?, ?)", ((n, "y" * 100) for n in range(300, 500)))
    db.commit()
    assert (tmp_path / "bot.sqlite3-wal").stat().st_size > 0
    yield tmp_path
    db.close()


def assert_whole_copy(path: Path) -> None:
    copy = sqlite3.connect(path)
    try:
        assert copy.execute("pragma integrity_check").fetchone() == ("ok",)
        assert copy.execute("select count(*), max(n) from buffer").fetchone() == (500, 499)
    finally:
        copy.close()


@pytest.mark.needs("sqlite3")
def test_the_sqlite3_cli_backup_copies_a_live_database(live_database: Path) -> None:
    require_tool("sqlite3")
    command = localized(readme_command("**SQLite, while the bot runs**"), live_database)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    backups = list(live_database.glob("backup-*.sqlite3"))
    assert len(backups) == 1
    assert_whole_copy(backups[0])


def test_the_python_backup_copies_a_live_database(live_database: Path) -> None:
    command = localized(readme_command("with Python's `sqlite3.Connection.backup`"), live_database)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert_whole_copy(live_database / "backup.sqlite3")
