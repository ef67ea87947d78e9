"""A closed memory store releases its files: chromadb keeps an embedded folder's system open in a
process-wide cache until its client closes, and a bot or a test run that opens many stores
would otherwise run out of file descriptors (`ulimit -n 1024`). The Rust bindings close the
folder's SQLite pool a few milliseconds after `close()` returns, so the checks wait for it
(up to RELEASE_WAIT_S; a file still held then fails)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path

from memory.semantic import open_user_memory


RELEASE_WAIT_S = 10.0


class FixedEmbedder:
    name = "fixed-4"
    dimension = 4

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, float(len(t) % 5), 0.0, 1.0] for t in texts]


def files_held_under(folder: Path) -> list[str]:
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)):
            held.append(target)
    return held


async def files_held_once_released(folder: Path) -> list[str]:
    """The files of `folder` this process still holds once they are released or RELEASE_WAIT_S passed."""
    deadline = time.monotonic() + RELEASE_WAIT_S
    while (held := files_held_under(folder)) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return held


async def test_a_closed_store_holds_no_file_of_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "chroma"
    memory = open_user_memory(str(folder), embedder=FixedEmbedder())
    await memory.add("alice", "I keep bees on the roof", scope="dm")
    assert [h.text for h in await memory.search("alice", "bees", scope="dm")] == ["I keep bees on the roof"]
    assert files_held_under(folder)  # open: Chroma's SQLite file at least
    await memory.close()
    assert await files_held_once_released(folder) == []


async def test_many_stores_opened_and_closed_one_after_another_leave_no_handles(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for n in range(12):
        memory = open_user_memory(str(tmp_path / f"chroma-{n}"), embedder=FixedEmbedder())
        await memory.add("alice", f"note {n}", scope="dm")
        await memory.close()
    assert await files_held_once_released(tmp_path) == []
    assert len(os.listdir("/proc/self/fd")) <= before + 4  # threads' eventfds may come and go
