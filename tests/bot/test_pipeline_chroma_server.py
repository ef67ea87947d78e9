"""A turn against a Chroma server that goes away mid-run fails cleanly and loses nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.errors import sentence_for
from bot.runtime import Runtime
from tests.bot.conftest import ALICE, ask
from tests.fakes.chroma_server import ChromaServer
from tests.fakes.openai_server import FakeOpenAI

CHANNEL = "300000000000000001"  # ask()'s default channel


async def test_a_chroma_server_that_dies_mid_run_fails_the_turn_and_keeps_earlier_turns(
    make_runtime: Callable[..., Runtime], fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.reply("Final Answer: Noted, Miso.")
    fake.reply("Final Answer: never stored")
    with ChromaServer(tmp_path / "chroma-server") as server:
        async with make_runtime(CHROMA_HOST=server.host, CHROMA_PORT=str(server.port)) as rt:
            first = await rt.pipeline.handle(ask("My cat is called Miso."))
            assert first.ok
            server.kill()
            second = await rt.pipeline.handle(ask("What is my cat called?"))

            assert not second.ok and second.error_kind == "memory_unavailable"
            assert second.text == sentence_for("memory_unavailable")
            buffer = await rt.buffer.recent(CHANNEL)
            assert [m.content for m in buffer] == ["My cat is called Miso.", "Noted, Miso."]
            last = await rt.traces.last_for(ALICE, CHANNEL)  # the first turn's, not the failed one's
            assert last is not None and last.trace_id == first.trace_id
            assert await rt.db.integrity_check() == []
