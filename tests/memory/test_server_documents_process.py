"""A server's documents whose embedded Chroma folder runs in a child process of its own
(memory.semantic.chroma_process, as with CHROMA_PROCESS): the same store, kept across a
restart in this process, and consistent when adds, searches and removes race."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from memory.documents import ServerDocuments, open_server_documents
from memory.documents.store import VectorsOnFirstUse
from memory.errors import StoreUnavailable
from memory.semantic.embeddings import LocalEmbedder
from memory.stores.database import Database
from tests.memory.test_server_documents import ADMIN, FAQ, GUILD, OTHER, RULES

pytestmark = pytest.mark.slow  # starts a Chroma child process and loads the model: handed out first


async def _open(db: Database, tmp_path: Path, embedder: LocalEmbedder, *, chroma_process: bool) -> ServerDocuments:
    docs = await asyncio.to_thread(open_server_documents, db, embedder, path=tmp_path / "documents",
                                   chroma_process=chroma_process)
    await docs.load()
    return docs


async def test_documents_in_a_chroma_child_process_are_added_searched_and_kept_in_the_folder(
        db: Database, tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    docs = await _open(db, tmp_path, local_embedder, chroma_process=True)
    try:
        assert docs._vectors.get().pid not in (None, os.getpid())
        await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
        hits = await docs.search(GUILD, "when does voice chat open?")
        assert (hits[0].title, hits[0].section) == ("FAQ", "FAQ > Voice chat")
        assert await docs.search(OTHER, "when does voice chat open?") == []
    finally:
        await docs.close()
    again = await _open(db, tmp_path, local_embedder, chroma_process=False)  # the same folder, in this process
    try:
        assert (await again.search(GUILD, "voice channel opening time"))[0].section == "FAQ > Voice chat"
    finally:
        await again.close()


async def test_adds_searches_and_a_remove_racing_through_the_child_leave_the_server_consistent(
        db: Database, tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    docs = await _open(db, tmp_path, local_embedder, chroma_process=True)
    try:
        rules = await docs.add(GUILD, title="Server rules", source="rules.md", kind="markdown", data=RULES,
                               added_by=ADMIN)
        raced = await asyncio.gather(
            docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN),
            docs.search(GUILD, "advertising spam rule", k=10),
            docs.remove(GUILD, rules.id),
            docs.search(GUILD, "when does voice chat open?", k=10))

        for hits in (raced[1], raced[3]):  # each saw the server before, between or after the changes
            assert len(hits) in (0, 2, 3, 5)  # 0: the remove ran before the FAQ's add
        assert [d.title for d in await docs.list(GUILD)] == ["FAQ"]
        after = await docs.search(GUILD, "advertising spam rule", k=10)
        assert {h.title for h in after} == {"FAQ"} and len(after) == 2
    finally:
        await docs.close()


def test_closed_vectors_start_no_child_for_a_late_call() -> None:
    opened: list[int] = []
    vectors = VectorsOnFirstUse(lambda: opened.append(1))  # type: ignore[arg-type, func-returns-value]

    vectors.close()

    with pytest.raises(StoreUnavailable):
        vectors.get()
    assert opened == []
