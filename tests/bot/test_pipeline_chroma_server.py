"""A Chroma server that goes away: turns are answered without memory (saying so), their memory
writes are kept and made once the server is back; nothing is half written (real `chroma run`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bot.errors import with_memory_notice
from bot.process.runtime import Runtime
from bot.turn_store.reconcile import write_deferred
from tests.bot.conftest import ALICE, BOB, ask, system_text
from tests.fakes.chroma_server import ChromaServer
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts a Chroma server: handed out first (tests/conftest.py)

CHANNEL = "300000000000000001"  # ask()'s default channel


async def test_a_chroma_server_that_dies_answers_without_memory_and_writes_once_it_is_back(
    make_runtime: Callable[..., Runtime], fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.reply("Final Answer: Noted, Miso.").reply("Final Answer: Noted, Oslo.")
    fake.reply("Final Answer: Miso").reply("Final Answer: Oslo")
    server = ChromaServer(tmp_path / "chroma-server").start()
    try:
        async with make_runtime(CHROMA_HOST=server.host, CHROMA_PORT=str(server.port)) as rt:
            first = await rt.pipeline.handle(ask("My cat is called Miso."))
            server.stop()
            bobs = await rt.pipeline.handle(ask("I moved to Oslo last week.", user=BOB, name="Bob"))
            # Alice's items were read before the server stopped: her recall is served from them
            alices = await rt.pipeline.handle(ask("What is my cat called?"))

            assert first.ok and first.text == "Noted, Miso."
            assert bobs.ok and bobs.text == with_memory_notice("Noted, Oslo.")
            assert alices.ok and alices.text == "Miso"
            assert "My cat is called Miso." in system_text(fake.requests[2])
            assert [m.content for m in await rt.buffer.recent(CHANNEL)] == [
                "My cat is called Miso.", "Noted, Miso.", "I moved to Oslo last week.", "Noted, Oslo.",
                "What is my cat called?", "Miso"]
            deferred = await rt.writes.unsettled()
            assert {w.trace_id for w in deferred} == {bobs.trace_id, alices.trace_id}
            assert all(w.deferred is not None for w in deferred)
            assert await write_deferred(rt.writes, rt.user_memory) == 0  # still down: kept

            server.start()  # same port, same folder
            assert await write_deferred(rt.writes, rt.user_memory) == 4
            assert await rt.writes.unsettled() == []
            for user, turns in ((ALICE, (first, alices)), (BOB, (bobs,))):
                items = await rt.user_memory.list(user)
                assert sorted((h.metadata["trace_id"], h.metadata["kind"]) for h in items) == sorted(
                    (t.trace_id, kind) for t in turns for kind in ("exchange", "reply"))
            again = await rt.pipeline.handle(ask("Where do I live now?", user=BOB, name="Bob"))
            assert again.text == "Oslo" and "I moved to Oslo last week." in system_text(fake.requests[-1])
            assert await rt.db.integrity_check() == []
    finally:
        server.stop()


async def test_a_deferred_write_keeps_no_words_of_the_other_person_a_short_reply_answered(
    make_runtime: Callable[..., Runtime], fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.reply("Final Answer: Kiwi is a lovely name for a parrot.").reply("Final Answer: Lovely!")
    server = ChromaServer(tmp_path / "chroma-server").start()
    try:
        async with make_runtime(CHROMA_HOST=server.host, CHROMA_PORT=str(server.port)) as rt:
            await rt.pipeline.handle(ask("I adopted a parrot named Kiwi", user=BOB, name="Bob"))
            server.stop()
            alices = await rt.pipeline.handle(ask("me too!"))  # her short reply to what Bob was told

            [write] = await rt.writes.unsettled()
            assert write.trace_id == alices.trace_id and write.deferred is not None
            rows = await rt.db.fetchall("SELECT deferred_json FROM memory_writes")
            assert "me too!" in rows[0][0]
            assert "Kiwi" not in rows[0][0] and "adopted" not in rows[0][0]

            server.start()
            assert await write_deferred(rt.writes, rt.user_memory) == 2
            [said] = [h for h in await rt.user_memory.list(ALICE) if h.metadata["kind"] == "exchange"]
            assert said.text == "me too!" and "Kiwi" not in str(said.metadata)
    finally:
        server.stop()
