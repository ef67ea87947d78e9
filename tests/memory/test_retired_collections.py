"""Opening a store that an older version wrote deletes the change feed's and the write tokens'
sibling collections (`<collection>__changes`, `<collection>__tokens`: records holding plain user
ids, which a forget does not reach) and touches nothing else: the items, the version records,
and other collections' siblings stay as they were.

The old collections are written with real chromadb the way those versions wrote them
(memory/semantic/change_feed.py and write_tokens.py before c2e25e6): placeholder vectors of one
dimension, the user id in each record's metadata.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings

from memory.semantic import open_user_memory, scope_for
from memory.semantic.embeddings import LocalEmbedder
from memory.semantic.versions import VERSION_SUFFIX

ALICE = "111111111111111111"
GUILD = scope_for("900000000000000000")


def client_of(path: Path) -> Any:
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def contents(client: Any, name: str) -> dict[str, Any]:
    got = client.get_collection(name).get(include=["documents", "metadatas"])
    return {"ids": sorted(got["ids"]), "rows": sorted(zip(got["ids"], got["documents"],
                                                          [sorted(m.items()) for m in got["metadatas"]], strict=True))}


def write_as_older_versions(client: Any, collection: str, item_ids: list[str]) -> None:
    """A change record of each operation and a write token's mark and token, for ALICE."""
    feed = client.get_or_create_collection(name=collection + "__changes", embedding_function=None,
                                           metadata={"purpose": "log of " + collection})
    for op in ("add", "delete", "forget"):
        feed.add(ids=[uuid.uuid4().hex], embeddings=[[0.0]], documents=[" ".join(item_ids)],
                 metadatas=[{"user_id": ALICE, "op": op, "origin": uuid.uuid4().hex, "at": 1_780_000_000.0,
                             "scope": GUILD, "all_scopes": False}])
    tokens = client.get_or_create_collection(name=collection + "__tokens", embedding_function=None,
                                             metadata={"purpose": "log of " + collection})
    tokens.upsert(ids=["m:" + uuid.uuid4().hex, "t:" + uuid.uuid4().hex[:40]], embeddings=[[0.0], [0.0]],
                  documents=["", ""],
                  metadatas=[{"user_id": ALICE, "kind": "mark", "at": "1780000000.0"},
                             {"user_id": ALICE, "kind": "token", "token": uuid.uuid4().hex, "at": "1780000000.0"}])


@pytest.mark.parametrize("chroma_process", [False, True], ids=["in-process", "chroma-child"])
async def test_opening_deletes_the_change_feed_and_write_token_collections_and_nothing_else(
        tmp_path: Path, local_embedder: LocalEmbedder, caplog: pytest.LogCaptureFixture, chroma_process: bool) -> None:
    path = tmp_path / "chroma"
    async with open_user_memory(str(path), embedder=local_embedder, snapshots=False) as mem:
        item_ids = await mem.add_many([(ALICE, f"I keep bees number {n} on the roof", None, GUILD) for n in range(3)])
    client = client_of(path)
    write_as_older_versions(client, "user_memory", item_ids)
    write_as_older_versions(client, "other_memory", item_ids)  # another collection's: not this store's to delete
    kept = ["user_memory", "user_memory" + VERSION_SUFFIX, "other_memory__changes", "other_memory__tokens"]
    before = {name: contents(client, name) for name in kept}
    client.close()

    with caplog.at_level(logging.INFO, logger="memory.semantic.user_memory"):  # logged here, not in a child
        async with open_user_memory(str(path), embedder=local_embedder, snapshots=False,
                                    chroma_process=chroma_process) as mem:
            found = await mem.search(ALICE, "bees on the roof", k=10)

    client = client_of(path)
    assert sorted(c.name for c in client.list_collections()) == sorted(kept)
    assert {name: contents(client, name) for name in kept} == before
    client.close()
    assert sorted(hit.id for hit in found) == sorted(item_ids)
    deleted = [r.getMessage() for r in caplog.records if "deleted the unused collection" in r.getMessage()]
    assert len(deleted) == 2
    assert "'user_memory__changes'" in deleted[0] and "'user_memory__tokens'" in deleted[1]


async def test_opening_a_store_without_old_collections_deletes_nothing_and_logs_nothing(
        tmp_path: Path, local_embedder: LocalEmbedder, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "chroma"
    async with open_user_memory(str(path), embedder=local_embedder, snapshots=False) as mem:
        await mem.add(ALICE, "I keep bees on the roof", scope=GUILD)
    with caplog.at_level(logging.INFO, logger="memory.semantic.user_memory"):
        async with open_user_memory(str(path), embedder=local_embedder, snapshots=False) as mem:
            assert [hit.text for hit in await mem.list(ALICE)] == ["I keep bees on the roof"]

    client = client_of(path)
    assert sorted(c.name for c in client.list_collections()) == ["user_memory", "user_memory" + VERSION_SUFFIX]
    client.close()
    assert not [r for r in caplog.records if "deleted the unused collection" in r.getMessage()]
