"""Server mode: the semantic memory against a REAL `chroma run` server on loopback."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memory.config import load_memory_settings
from memory.semantic.embeddings import LocalEmbedder
from memory.errors import StoreUnavailable
from memory.semantic import UserMemory, open_user_memory, scope_for
from tests.fakes.chroma_server import ChromaServer, free_port

pytestmark = pytest.mark.slow  # starts processes or loads the model: handed out first (tests/conftest.py)

ALICE = "111111111111111111"
BOB = "222222222222222222"
GUILD = scope_for("900000000000000000")


@pytest.fixture
async def server_memory(chroma_server: ChromaServer, local_embedder: LocalEmbedder,
                        request: pytest.FixtureRequest) -> AsyncIterator[UserMemory]:
    """A memory on the shared server, in a collection of its own (one per test)."""
    collection = "t-" + request.node.name.replace("_", "-")[:50]
    mem = open_user_memory(host=chroma_server.host, port=chroma_server.port, embedder=local_embedder,
                           collection=collection)
    yield mem
    await mem.close()


async def test_server_mode_adds_searches_and_forgets(server_memory: UserMemory) -> None:
    await server_memory.add(ALICE, "I am training for the Berlin marathon", {"channel_id": "3"}, GUILD)
    await server_memory.add(ALICE, "My daughter starts school in September", None, "dm")

    hits = await server_memory.search(ALICE, "what race am I preparing for?", scope=GUILD)

    assert [h.text for h in hits] == ["I am training for the Berlin marathon"]
    assert hits[0].metadata["channel_id"] == "3"
    assert await server_memory.forget(ALICE) == 2
    assert await server_memory.list(ALICE) == []


async def test_server_mode_keeps_users_apart(server_memory: UserMemory) -> None:
    await server_memory.add(ALICE, "My locker code is 4412", scope=GUILD)
    await server_memory.add(BOB, "My locker code is 9031", scope=GUILD)

    assert [h.text for h in await server_memory.search(BOB, "locker code", k=10)] == ["My locker code is 9031"]


async def test_two_processes_share_one_server(chroma_server: ChromaServer, local_embedder: LocalEmbedder,
                                             tmp_path: Path) -> None:
    settings = load_memory_settings({"CHROMA_HOST": chroma_server.host, "CHROMA_PORT": str(chroma_server.port),
                                     "DATA_DIR": str(tmp_path / "data")})
    writer = open_user_memory(settings=settings, embedder=local_embedder, collection="shared-memory")
    reader = open_user_memory(settings=settings, embedder=local_embedder, collection="shared-memory")
    try:
        assert f"{chroma_server.host}:{chroma_server.port}" in reader.where
        await writer.add(ALICE, "I switched from Vim to Helix", scope="dm")

        assert [h.text for h in await reader.search(ALICE, "text editor", scope="dm")] == [
            "I switched from Vim to Helix"]
    finally:
        await writer.close()
        await reader.close()


class Peer:
    """Another OS process with its own UserMemory on the same server (tests.memory.memory_peer)."""

    def __init__(self, server: ChromaServer) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.memory.memory_peer", server.host, str(server.port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
        assert self.ask_line() == "ready"

    def ask_line(self) -> object:
        assert self.proc.stdout is not None
        answer = json.loads(self.proc.stdout.readline())
        assert "error" not in answer, answer
        return answer["ok"]

    async def ask(self, op: str, collection: str, user: str, text: str = "", scope: str | None = None) -> object:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, "collection": collection, "user": user, "text": text,
                                          "scope": scope}) + "\n")
        self.proc.stdin.flush()
        return await asyncio.to_thread(self.ask_line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def peer(chroma_server: ChromaServer) -> Iterator[Peer]:
    other = Peer(chroma_server)
    yield other
    other.close()


@pytest.fixture
async def here(chroma_server: ChromaServer, local_embedder: LocalEmbedder,
               request: pytest.FixtureRequest) -> AsyncIterator[UserMemory]:
    """This process's memory on the server, in the test's own collection."""
    mem = open_user_memory(host=chroma_server.host, port=chroma_server.port, embedder=local_embedder,
                           collection=_collection(request))
    yield mem
    await mem.close()


def _collection(request: pytest.FixtureRequest) -> str:
    return "p-" + request.node.name.replace("_", "-")[:50].rstrip("-")


async def test_an_item_another_process_adds_is_found_by_the_next_search_at_once(
        here: UserMemory, peer: Peer, request: pytest.FixtureRequest) -> None:
    await here.add(ALICE, "I grow tomatoes on the balcony", scope="dm")
    assert len(await here.search(ALICE, "vegetables I grow", scope="dm")) == 1  # Alice is now cached here

    await peer.ask("add", _collection(request), ALICE, "I switched from Vim to Helix", "dm")

    assert "I switched from Vim to Helix" in [h.text for h in await here.search(ALICE, "text editor", scope="dm")]


async def test_a_forget_in_another_process_is_honoured_by_the_next_search_at_once(
        here: UserMemory, peer: Peer, request: pytest.FixtureRequest) -> None:
    await here.add(ALICE, "my locker code is 4412", scope=GUILD)
    await here.add(ALICE, "a secret diary entry", scope="dm")
    await here.add(BOB, "my locker code is 9031", scope=GUILD)
    assert len(await here.search(ALICE, "locker code", k=10)) == 2

    assert await peer.ask("forget", _collection(request), ALICE, scope=GUILD) == 1

    assert [h.text for h in await here.search(ALICE, "locker code", k=10)] == ["a secret diary entry"]
    assert [h.text for h in await here.search(BOB, "locker code", k=10)] == ["my locker code is 9031"]


async def test_a_delete_in_another_process_is_honoured_by_the_next_list_at_once(
        here: UserMemory, peer: Peer, request: pytest.FixtureRequest) -> None:
    kept = await here.add(ALICE, "kombucha with ginger", scope="dm")
    gone = await here.add(ALICE, "kombucha with lemon", scope="dm")
    assert len(await here.list(ALICE)) == 2

    assert await peer.ask("delete", _collection(request), ALICE, gone) is True

    assert [h.id for h in await here.list(ALICE)] == [kept]
    assert [h.id for h in await here.search(ALICE, "kombucha lemon", k=10)] == [kept]


async def test_this_processs_writes_reach_a_peer_that_had_the_user_cached_at_once(
        here: UserMemory, peer: Peer, request: pytest.FixtureRequest) -> None:
    collection = _collection(request)
    first = await here.add(ALICE, "I brew kombucha at home", scope="dm")
    assert await peer.ask("search", collection, ALICE, "kombucha", "dm") == ["I brew kombucha at home"]

    await here.add(ALICE, "my kombucha scoby died", scope="dm")
    await here.delete(ALICE, first)

    assert await peer.ask("list", collection, ALICE, scope="dm") == ["my kombucha scoby died"]


async def test_writes_of_both_processes_interleaved_leave_both_with_every_item(
        here: UserMemory, peer: Peer, request: pytest.FixtureRequest) -> None:
    collection = _collection(request)
    await here.search(ALICE, "hives", scope="dm")  # cached (empty) in both
    await peer.ask("search", collection, ALICE, "hives", "dm")

    for n in range(4):
        await asyncio.gather(here.add(ALICE, f"hive {n} from here", scope="dm"),
                             peer.ask("add", collection, ALICE, f"hive {n} from the peer", "dm"))

    expected = sorted([f"hive {n} from here" for n in range(4)] + [f"hive {n} from the peer" for n in range(4)])
    assert sorted(h.text for h in await here.list(ALICE, "dm")) == expected
    assert sorted(await peer.ask("list", collection, ALICE, scope="dm")) == expected  # type: ignore[arg-type]


async def test_a_delete_by_one_memory_object_is_honoured_by_another_on_the_server(
        chroma_server: ChromaServer, local_embedder: LocalEmbedder) -> None:
    options = dict(host=chroma_server.host, port=chroma_server.port, embedder=local_embedder,
                   collection="two-objects-delete", search_mode="keyword")
    async with open_user_memory(**options) as writer, open_user_memory(**options) as reader:
        kept = await writer.add(ALICE, "kombucha with ginger", scope="dm")
        gone = await writer.add(ALICE, "kombucha with lemon", scope="dm")
        assert len(await reader.search(ALICE, "kombucha", scope="dm")) == 2

        assert await writer.delete(ALICE, gone)

        assert [h.id for h in await reader.search(ALICE, "kombucha", scope="dm")] == [kept]


def test_a_server_that_is_down_at_start_up_is_unavailable_naming_host_and_port(
        local_embedder: LocalEmbedder) -> None:
    port = free_port()

    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}"):
        open_user_memory(host="127.0.0.1", port=port, embedder=local_embedder)


async def test_a_search_of_a_cached_user_is_answered_while_the_server_is_away(
        tmp_path: Path, local_embedder: LocalEmbedder, caplog: pytest.LogCaptureFixture) -> None:
    server = ChromaServer(tmp_path / "away").start()
    mem = open_user_memory(host=server.host, port=server.port, embedder=local_embedder)
    try:
        await mem.add(ALICE, "I keep bees on the roof", scope=GUILD)
        assert len(await mem.search(ALICE, "bees", scope=GUILD)) == 1

        server.kill()

        with caplog.at_level(logging.WARNING, logger="memory.semantic.copies"):
            assert [h.text for h in await mem.search(ALICE, "bees", scope=GUILD)] == ["I keep bees on the roof"]
        [warning] = [r for r in caplog.records if r.name == "memory.semantic.copies"]
        assert "answered from this process's copy" in warning.getMessage() and server.host in warning.getMessage()
    finally:
        await mem.close()
        server.stop()


async def test_a_server_that_dies_mid_run_fails_each_call_cleanly(tmp_path: Path,
                                                                  local_embedder: LocalEmbedder) -> None:
    server = ChromaServer(tmp_path / "doomed").start()
    mem = open_user_memory(host=server.host, port=server.port, embedder=local_embedder)
    try:
        await mem.add(ALICE, "I keep bees on the roof", scope=GUILD)
        await mem.add(BOB, "I keep goats", scope=GUILD)
        assert len(await mem.search(ALICE, "bees", scope=GUILD)) == 1

        server.kill()

        where = f"{server.host}:{server.port}"
        with pytest.raises(StoreUnavailable, match=where):
            await mem.search(BOB, "goats", scope=GUILD)
        with pytest.raises(StoreUnavailable, match=where):
            await mem.add(ALICE, "and a hive in the garden", scope=GUILD)
        with pytest.raises(StoreUnavailable, match=where):
            await mem.forget(ALICE)
        with pytest.raises(StoreUnavailable, match=where):
            await mem.list(ALICE)  # the failed writes dropped Alice's cached items
    finally:
        await mem.close()
        server.stop()


async def test_the_same_memory_works_again_once_the_server_is_back(tmp_path: Path,
                                                                   local_embedder: LocalEmbedder) -> None:
    server = ChromaServer(tmp_path / "flaky").start()
    mem = open_user_memory(host=server.host, port=server.port, embedder=local_embedder)
    try:
        await mem.add(ALICE, "I volunteer at the animal shelter", scope="dm")
        server.kill()
        with pytest.raises(StoreUnavailable):
            await mem.add(ALICE, "lost while the server is down", scope="dm")

        server.start()

        await mem.add(ALICE, "I adopted a greyhound from the shelter", scope="dm")
        assert sorted(h.text for h in await mem.list(ALICE)) == [
            "I adopted a greyhound from the shelter", "I volunteer at the animal shelter"]
    finally:
        await mem.close()
        server.stop()


async def test_a_server_that_stops_answering_times_out_instead_of_hanging(tmp_path: Path,
                                                                          local_embedder: LocalEmbedder) -> None:
    server = ChromaServer(tmp_path / "frozen").start()
    mem = open_user_memory(host=server.host, port=server.port, embedder=local_embedder,
                           http_timeout_s=0.5, op_timeout_s=5.0)
    try:
        await mem.add(ALICE, "I collect fountain pens", scope=GUILD)
        server.pause()

        with pytest.raises(StoreUnavailable, match=f"{server.host}:{server.port}"):
            await asyncio.wait_for(mem.search(ALICE, "pens", scope=GUILD), 20)
    finally:
        server.resume()
        await mem.close()
        server.stop()


async def test_items_written_before_a_server_restart_are_found_after_it(tmp_path: Path,
                                                                        local_embedder: LocalEmbedder) -> None:
    server = ChromaServer(tmp_path / "restarted").start()
    try:
        async with open_user_memory(host=server.host, port=server.port, embedder=local_embedder) as mem:
            await mem.add(ALICE, "My car is a green Škoda", scope="dm")
        server.stop()
        server.start()
        async with open_user_memory(host=server.host, port=server.port, embedder=local_embedder) as mem:
            assert [h.text for h in await mem.search(ALICE, "what car do I drive", scope="dm")] == [
                "My car is a green Škoda"]
    finally:
        server.stop()


async def test_a_server_snapshot_is_trusted_until_a_peer_process_writes(
        chroma_server: ChromaServer, local_embedder: LocalEmbedder, peer: Peer, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    collection = _collection(request)
    options = dict(host=chroma_server.host, port=chroma_server.port, embedder=local_embedder, collection=collection,
                   snapshot_dir=tmp_path / "snapshots", snapshot_after=1)
    async with open_user_memory(**options) as mem:
        await mem.add_many([(ALICE, f"my hive number {n} is on the roof", None, "dm") for n in range(5)])
        await mem.search(ALICE, "hive", scope="dm")
    async with open_user_memory(**options) as mem:  # nothing written since: the version is current
        assert len(await mem.search(ALICE, "hive", k=10, scope="dm")) == 5
        assert mem.last_load is not None and mem.last_load.route == "version"

    await peer.ask("add", collection, ALICE, "a swarm left hive number 2", "dm")
    async with open_user_memory(**options) as mem:
        texts = [h.text for h in await mem.search(ALICE, "swarm hive", k=10, scope="dm")]
        assert mem.last_load is not None and mem.last_load.route == "ids"
    assert "a swarm left hive number 2" in texts and len(texts) == 6


async def test_a_server_snapshot_is_checked_against_an_add_another_writer_made_while_this_one_had_the_user(
        chroma_server: ChromaServer, local_embedder: LocalEmbedder, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    options = dict(host=chroma_server.host, port=chroma_server.port, embedder=local_embedder,
                   collection=_collection(request), snapshot_dir=tmp_path / "snapshots", snapshot_after=1)
    async with open_user_memory(**options) as first:
        await first.add(ALICE, "my hive is on the roof", scope="dm")
        await first.search(ALICE, "hive", scope="dm")  # cached here, and not searched again
        async with open_user_memory(**options) as other:
            await other.add(ALICE, "a swarm left the hive", scope="dm")
        await first.add(ALICE, "the hive got a new queen", scope="dm")
    # closing `first` wrote a snapshot of what it had cached, which lacks the other's item
    async with open_user_memory(**options) as later:
        texts = {h.text for h in await later.search(ALICE, "hive", k=10, scope="dm")}
        assert later.last_load is not None and later.last_load.route == "ids"
    assert texts == {"my hive is on the roof", "a swarm left the hive", "the hive got a new queen"}
