"""Server mode: the semantic memory against a REAL `chroma run` server on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.config import load_memory_settings
from memory.embeddings import LocalEmbedder
from memory.errors import StoreUnavailable
from memory.semantic import UserMemory, open_user_memory, scope_for
from tests.fakes.chroma_server import ChromaServer, free_port

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


async def test_two_processes_share_one_server(chroma_server: ChromaServer, local_embedder: LocalEmbedder) -> None:
    settings = load_memory_settings({"CHROMA_HOST": chroma_server.host, "CHROMA_PORT": str(chroma_server.port)})
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


async def test_another_processs_writes_reach_keyword_search_after_the_cache_ttl(
        chroma_server: ChromaServer, local_embedder: LocalEmbedder) -> None:
    options = dict(host=chroma_server.host, port=chroma_server.port, embedder=local_embedder,
                   collection="ttl-memory", search_mode="keyword")
    writer = open_user_memory(**options)
    reader = open_user_memory(**options, cache_ttl_s=0.0)
    try:
        await writer.add(ALICE, "I brew kombucha at home", scope="dm")
        assert len(await reader.search(ALICE, "kombucha", scope="dm")) == 1

        await writer.add(ALICE, "my kombucha scoby died", scope="dm")

        assert len(await reader.search(ALICE, "kombucha", scope="dm")) == 2
    finally:
        await writer.close()
        await reader.close()


def test_a_server_that_is_down_at_start_up_is_unavailable_naming_host_and_port(
        local_embedder: LocalEmbedder) -> None:
    port = free_port()

    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}"):
        open_user_memory(host="127.0.0.1", port=port, embedder=local_embedder)


async def test_a_search_of_a_cached_user_is_answered_while_the_server_is_away(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    server = ChromaServer(tmp_path / "away").start()
    mem = open_user_memory(host=server.host, port=server.port, embedder=local_embedder)
    try:
        await mem.add(ALICE, "I keep bees on the roof", scope=GUILD)
        assert len(await mem.search(ALICE, "bees", scope=GUILD)) == 1

        server.kill()

        assert [h.text for h in await mem.search(ALICE, "bees", scope=GUILD)] == ["I keep bees on the roof"]
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
