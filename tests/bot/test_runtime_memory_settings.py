"""The runtime's memory settings: with CHROMA_PROCESS (the default) the embedded Chroma runs in
a worker process, a child of the bot's process, so that its adds and reads cannot hold the
bot's GIL (the memory works the same, and the worker is gone when the runtime closes); the
servers' documents' Chroma folder runs in a worker of its own likewise;
MEMORY_CACHE_MB bounds the people's items the process keeps."""

from __future__ import annotations

import os
from pathlib import Path

from bot.settings.config import load_settings
from bot.process.runtime import Runtime
from tests.bot.conftest import GUILD, ask
from tests.fakes.openai_server import FakeOpenAI


def _children() -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            found |= {int(pid) for pid in (task / "children").read_text().split()}
        except (FileNotFoundError, ProcessLookupError):  # the thread ended since the listing
            continue
    return found


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


async def test_the_embedded_memory_runs_in_a_worker_process_and_remembers(
        env: dict[str, str], fake: FakeOpenAI) -> None:
    before = _children()
    fake.reply("Final Answer: noted").reply("Final Answer: you like tea")
    async with Runtime(load_settings({**env, "CHROMA_PROCESS": "true"})) as rt:
        workers = {pid for pid in _children() - before if "spawn_main" in _command(pid)}
        assert workers == {rt.user_memory._store.pid}  # the memory's Chroma worker, spawned by this process
        assert not rt.documents._vectors.is_open  # the documents' starts with their first use
        await rt.services.documents.add_file(GUILD, "200000000000000009", filename="tea.md", media_type="text/markdown",
                                             data=b"# Tea\n\nGreen tea is steeped at 80 degrees.\n", title=None)
        workers = {pid for pid in _children() - before if "spawn_main" in _command(pid)}
        assert workers == {rt.user_memory._store.pid, rt.documents._vectors.get().pid}
        await rt.pipeline.handle(ask("I like tea"))
        await rt.pipeline.handle(ask("what do I like?"))
        hits = await rt.user_memory.search(ask("x").user_id, "tea", scope=None)
    assert any("tea" in hit.text for hit in hits)
    assert "I like tea" in str(fake.requests[-1])  # recalled into the second turn's prompt
    assert not any(_command(pid) and "spawn_main" in _command(pid) for pid in workers)  # closed with it


async def test_memory_cache_mb_bounds_the_items_the_process_keeps(env: dict[str, str], fake: FakeOpenAI) -> None:
    async with Runtime(load_settings({**env, "MEMORY_CACHE_MB": "3"})) as rt:
        assert rt.user_memory._copies._cache.max_bytes == 3 * 2**20  # the LRU of people's items (memory.semantic.caches)
