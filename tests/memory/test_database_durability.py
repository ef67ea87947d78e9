"""Durability across processes: a writer killed with SIGKILL mid-loop leaves a sound file of
whole rows and whole transactions, and two processes writing at once lose nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database

from tests.memory.conftest import T0

REPO = Path(__file__).resolve().parents[2]

# Writes forever: single appends of numbered rows, and every 5th turn a batch of 10 rows plus a
# trace in one transaction. Row content is derived from its number so a reader can check it.
KILLED_WRITER = """
import asyncio, sys
from datetime import datetime, timedelta, timezone
from memory import BufferedMessage, ChannelBuffer, Database, TraceRecord, TraceStore

def content(i):
    return f"row {i} " + "abcdefgh" * (i % 300) + f" end {i}"

async def main(path):
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    async with Database.open(path) as db:
        buffer, traces = ChannelBuffer(db), TraceStore(db)
        i = 0
        while True:
            if i % 5 == 4:
                async with db.transaction():
                    await buffer.append_many([
                        BufferedMessage("batch", None, "7", "w", "user", f"batch {i} item {k}", t0)
                        for k in range(10)
                    ])
                    await traces.save(TraceRecord(f"t{i}", "batch", None, "7", "q", [{"type": "x"}],
                                                  "answered", "a", 1, 1, 1, 1.0, t0))
            else:
                await buffer.append(BufferedMessage("single", None, "7", "w", "user", content(i),
                                                    t0 + timedelta(microseconds=i)))
            if i == 20:
                print("writing", flush=True)
            i += 1

asyncio.run(main(sys.argv[1]))
"""

# Appends N numbered rows to its own channel, as a second bot process would, once told to go.
SECOND_PROCESS = """
import asyncio, sys
from datetime import datetime, timezone
from memory import BufferedMessage, ChannelBuffer, Database

async def main(path, n):
    async with Database.open(path) as db:
        buffer = ChannelBuffer(db)
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(n):
            await buffer.append(BufferedMessage("other-process", "1", "8", "p", "user", f"p{i}",
                                                datetime.now(timezone.utc)))
            await asyncio.sleep(0.001)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def start(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def count_rows(path: Path) -> int:
    conn = sqlite3.connect(path, timeout=10)
    try:
        return conn.execute("SELECT count(*) FROM buffer_messages").fetchone()[0]
    except sqlite3.OperationalError:  # the writer has not created the table yet
        return 0
    finally:
        conn.close()


def expected_content(i: int) -> str:
    return f"row {i} " + "abcdefgh" * (i % 300) + f" end {i}"


async def test_a_writer_killed_mid_write_leaves_whole_rows_and_transactions(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    writer = start(KILLED_WRITER, str(db_path))
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "writing", writer.stderr.read() if writer.stderr else ""
        while count_rows(db_path) < 400:
            time.sleep(0.02)
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL

    async with Database.open(db_path) as db:
        assert await db.integrity_check() == []
        singles = await db.fetchall("SELECT content FROM buffer_messages WHERE channel_id = 'single' ORDER BY id")
        numbers = [int(row["content"].split()[1]) for row in singles]
        assert [row["content"] for row in singles] == [expected_content(i) for i in numbers]
        assert numbers == [i for i in range(max(numbers) + 1) if i % 5 != 4]  # no gap, no torn row

        batches = await db.fetchall(
            "SELECT substr(content, 1, instr(content, ' item') - 1) AS batch, count(*) AS n"
            " FROM buffer_messages WHERE channel_id = 'batch' GROUP BY batch"
        )
        assert batches and all(row["n"] == 10 for row in batches)
        trace_ids = {row["trace_id"] for row in await db.fetchall("SELECT trace_id FROM traces")}
        assert trace_ids == {f"t{row['batch'].split()[1]}" for row in batches}

        await ChannelBuffer(db).append(
            BufferedMessage("single", None, "7", "w", "user", "after the crash", T0)
        )
    async with Database.open(db_path) as db:
        assert (await db.fetchone("SELECT count(*) FROM buffer_messages WHERE content = 'after the crash'"))[0] == 1


async def test_two_processes_writing_at_once_lose_nothing(db_path: Path) -> None:
    per_process = 400
    async with Database.open(db_path) as db:
        other = start(SECOND_PROCESS, str(db_path), str(per_process))
        assert other.stdout is not None
        assert other.stdout.readline().strip() == "ready"
        buffer = ChannelBuffer(db)

        async def write(n: int) -> None:
            for i in range(n, per_process, 4):
                await buffer.append(BufferedMessage("this-process", "1", "9", "q", "user", f"q{i}", T0))
                await asyncio.sleep(0.004)

        assert other.stdin is not None
        other.stdin.write("go\n")
        other.stdin.flush()

        await asyncio.gather(*(write(n) for n in range(4)))
        _, errors = await asyncio.to_thread(other.communicate, timeout=120)
        assert other.returncode == 0, errors
        assert "locked" not in errors
        counts = {
            row["channel_id"]: row["n"]
            for row in await db.fetchall("SELECT channel_id, count(*) AS n FROM buffer_messages GROUP BY channel_id")
        }
        assert counts == {"this-process": per_process, "other-process": per_process}
