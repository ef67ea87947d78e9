"""Embedded Chroma in a worker process (memory.semantic.chroma_process): the same memory, and a worker
that dies fails one call with a clear error and is replaced."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from memory.semantic.chroma_backend import ChromaStore
from memory.semantic.embeddings import LocalEmbedder
from memory.errors import ConfigError, StoreUnavailable
from memory.semantic import open_user_memory, scope_for

pytestmark = pytest.mark.slow  # starts processes or loads the model: handed out first (tests/conftest.py)

ALICE = "111111111111111111"
GUILD = scope_for("900000000000000000")


async def test_a_memory_whose_chroma_runs_in_a_worker_process_keeps_the_contract(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "chroma"
    async with open_user_memory(str(path), embedder=local_embedder, chroma_process=True) as mem:
        assert mem._store.pid not in (None, os.getpid())
        await mem.add_many([(ALICE, "my cat Miso hates the vacuum", None, GUILD),
                            (ALICE, "I sail to Oslo every summer", None, "dm")])
        assert [h.text for h in await mem.search(ALICE, "cat", scope=GUILD)] == ["my cat Miso hates the vacuum"]
        assert await mem.forget(ALICE, "dm") == 1
    async with open_user_memory(str(path), embedder=local_embedder) as plain:  # the same folder, in process
        assert [h.text for h in await plain.list(ALICE)] == ["my cat Miso hates the vacuum"]


async def test_a_worker_dying_mid_call_fails_that_call_with_a_store_error_and_the_next_recovers(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "chroma"), embedder=local_embedder, chroma_process=True) as mem:
        await mem.add(ALICE, "I am learning the cello", scope=GUILD)
        pid = mem._store.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # the worker hangs in the middle of the next call ...
        search = asyncio.create_task(mem.search(ALICE, "cello"))
        await asyncio.sleep(0.5)
        os.kill(pid, signal.SIGKILL)  # ... and then dies

        with pytest.raises(StoreUnavailable, match=r"worker process of Chroma folder .* exited \(code -9\)"):
            await search
        assert [h.text for h in await mem.search(ALICE, "cello")] == ["I am learning the cello"]
        assert mem._store.pid not in (None, pid)


def test_an_error_raised_in_the_worker_reaches_the_caller_as_itself(tmp_path: Path,
                                                                    local_embedder: LocalEmbedder) -> None:
    ChromaStore.open(path=tmp_path / "c", host=None, port=None, collection="user_memory",
                     embedder_name="another-model", dimension=3)

    with pytest.raises(ConfigError, match="EMBEDDING_MODEL"):
        open_user_memory(str(tmp_path / "c"), embedder=local_embedder, chroma_process=True)


def test_the_worker_runs_at_a_lower_priority_than_this_process(tmp_path: Path) -> None:
    from memory.semantic.chroma_process import CHILD_NICENESS, ChromaProcess

    store = ChromaProcess.open(path=tmp_path / "c", host=None, port=None, collection="user_memory",
                               embedder_name="m", dimension=3)
    try:
        assert store.pid is not None
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, store.pid) == min(19, ours + CHILD_NICENESS)
    finally:
        store.close()


