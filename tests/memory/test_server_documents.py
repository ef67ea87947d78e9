"""A server's documents on a real SQLite file and embedded Chroma folder with the real local
embedder: added, searched with title and section, kept apart per server, limited, removed,
exported, consistent when adds, searches and removes race, and searched off the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from memory.documents import DocumentLimits, DocumentRefused, ServerDocuments, open_server_documents
from memory.documents import store as store_module
from memory.documents.index import PassageIndex
from memory.semantic.embeddings import LocalEmbedder
from memory.stores.database import Database
from tests.memory.pdf_builder import pdf_bytes

GUILD = "900000000000000001"
OTHER = "900000000000000002"
ADMIN = "100000000000000001"

RULES = b"""# Server rules

## 1. Be kind
No insults or harassment of any member.

## 2. Stay on topic
Use the right channel for each subject.

## 3. No spam
Advertising other servers or products is not allowed anywhere.
"""

FAQ = b"""# FAQ

## Voice chat
Voice channels open at 18:00 UTC every day and close at midnight.

## Roles
Ask a moderator in #help to get the artist role.
"""


async def _open(db: Database, tmp_path: Path, embedder: LocalEmbedder, **limits: int) -> ServerDocuments:
    docs = await asyncio.to_thread(open_server_documents, db, embedder, path=tmp_path / "documents",
                                   limits=DocumentLimits(**limits))
    await docs.load()
    return docs


@asynccontextmanager
async def _limited(db: Database, tmp_path: Path, embedder: LocalEmbedder, **limits: int) -> AsyncIterator[ServerDocuments]:
    """A store with these limits, closed afterwards."""
    store = await _open(db, tmp_path, embedder, **limits)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def docs(db: Database, tmp_path: Path, local_embedder: LocalEmbedder) -> AsyncIterator[ServerDocuments]:
    store = await _open(db, tmp_path, local_embedder)
    yield store
    await store.close()


async def test_a_search_returns_the_passage_with_its_title_and_section(docs: ServerDocuments) -> None:
    await docs.add(GUILD, title="Server rules", source="rules.md", kind="markdown", data=RULES, added_by=ADMIN)
    await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    hits = await docs.search(GUILD, "can I advertise my own server here?", k=5)
    assert (hits[0].title, hits[0].section) == ("Server rules", "Server rules > 3. No spam")
    assert "Advertising" in hits[0].text
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_another_servers_search_finds_nothing(docs: ServerDocuments) -> None:
    await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    assert docs.has_documents(GUILD)
    assert not docs.has_documents(OTHER)
    assert not docs.has_documents(None)
    assert await docs.search(OTHER, "when does voice chat open?") == []
    assert await docs.list(OTHER) == []
    assert await docs.export(OTHER) == []


async def test_a_server_knows_it_has_documents_after_a_restart(db: Database, tmp_path: Path,
                                                               local_embedder: LocalEmbedder) -> None:
    first = await _open(db, tmp_path, local_embedder)
    await first.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    await first.close()
    again = await _open(db, tmp_path, local_embedder)
    try:
        assert again.has_documents(GUILD)
        hits = await again.search(GUILD, "voice channel opening time")
        assert hits[0].section == "FAQ > Voice chat"
    finally:
        await again.close()


async def test_a_removed_document_is_no_longer_found(docs: ServerDocuments) -> None:
    rules = await docs.add(GUILD, title="Server rules", source="rules.md", kind="markdown", data=RULES,
                           added_by=ADMIN)
    await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    assert (await docs.remove(GUILD, rules.id)) == rules
    assert [d.title for d in await docs.list(GUILD)] == ["FAQ"]
    assert all(h.title == "FAQ" for h in await docs.search(GUILD, "advertising spam rule"))


async def test_a_document_removed_while_the_index_is_built_is_not_found_afterwards(
        docs: ServerDocuments, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = await docs.add(GUILD, title="Server rules", source="rules.md", kind="markdown", data=RULES,
                           added_by=ADMIN)
    await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    reading, go_on = threading.Event(), threading.Event()
    read_vectors = docs._vectors.get().get_with_embeddings

    def held_read(**where: object) -> object:  # the index's vectors, read, then held until the remove is done
        vectors = read_vectors(**where)
        reading.set()
        go_on.wait(30)
        return vectors

    monkeypatch.setattr(docs._vectors.get(), "get_with_embeddings", held_read)
    first = asyncio.create_task(docs.search(GUILD, "advertising spam rule"))
    assert await asyncio.to_thread(reading.wait, 30)
    await docs.remove(GUILD, rules.id)
    go_on.set()
    await first

    assert all(h.title == "FAQ" for h in await docs.search(GUILD, "advertising spam rule"))


async def test_chroma_keeps_the_vectors_and_no_passage_text(docs: ServerDocuments) -> None:
    await docs.add(GUILD, title="Server rules", source="rules.md", kind="markdown", data=RULES, added_by=ADMIN)

    stored = docs._vectors.get().get(where={"guild_id": GUILD})

    assert stored and all(item.text == "" for item in stored)
    assert [h.title for h in await docs.search(GUILD, "advertising spam rule")][:1] == ["Server rules"]


async def test_removing_the_last_document_leaves_the_server_without_documents(docs: ServerDocuments) -> None:
    faq = await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    await docs.remove(GUILD, faq.id)
    assert not docs.has_documents(GUILD)
    assert await docs.search(GUILD, "voice chat") == []


async def test_a_document_cannot_be_removed_from_another_server(docs: ServerDocuments) -> None:
    faq = await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    assert await docs.remove(OTHER, faq.id) is None
    assert [d.id for d in await docs.list(GUILD)] == [faq.id]


async def test_export_holds_each_document_with_its_passages(docs: ServerDocuments) -> None:
    await docs.add(GUILD, title="FAQ", source="https://example.org/faq", kind="markdown", data=FAQ, added_by=ADMIN)
    [exported] = await docs.export(GUILD)
    assert exported["title"] == "FAQ"
    assert exported["source"] == "https://example.org/faq"
    assert exported["added_by"] == ADMIN
    assert [p["section"] for p in exported["passages"]] == ["FAQ > Voice chat", "FAQ > Roles"]


async def test_a_pdf_is_searchable_by_page(docs: ServerDocuments) -> None:
    data = pdf_bytes([["Welcome to the course."], ["The final exam is on June 12 in room B204."]])
    await docs.add(GUILD, title="Course notes", source="notes.pdf", kind="pdf", data=data, added_by=ADMIN)
    hits = await docs.search(GUILD, "when is the final exam?")
    assert (hits[0].title, hits[0].section) == ("Course notes", "page 2")


async def test_a_file_over_the_size_limit_is_refused(db: Database, tmp_path: Path,
                                                     local_embedder: LocalEmbedder) -> None:
    async with _limited(db, tmp_path, local_embedder, max_file_bytes=1000) as docs:
        with pytest.raises(DocumentRefused, match=r"is 5 KB; documents may be at most 1 KB"):
            await docs.add(GUILD, title="Big", source="big.txt", kind="text", data=b"word " * 1000, added_by=ADMIN)
        assert await docs.list(GUILD) == []


async def test_a_server_at_its_document_limit_is_refused_another(db: Database, tmp_path: Path,
                                                                 local_embedder: LocalEmbedder) -> None:
    async with _limited(db, tmp_path, local_embedder, max_documents=1) as docs:
        await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
        with pytest.raises(DocumentRefused, match="remove one first"):
            await docs.add(GUILD, title="Rules", source="rules.md", kind="markdown", data=RULES, added_by=ADMIN)
        await docs.add(OTHER, title="Rules", source="rules.md", kind="markdown", data=RULES, added_by=ADMIN)


async def test_concurrent_adds_never_exceed_the_passage_limit(db: Database, tmp_path: Path,
                                                              local_embedder: LocalEmbedder) -> None:
    async with _limited(db, tmp_path, local_embedder, max_passages=4) as docs:
        results = await asyncio.gather(
            *(docs.add(GUILD, title=f"FAQ {n}", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
              for n in range(4)), return_exceptions=True)
        assert sum(not isinstance(r, Exception) for r in results) == 2
        assert all(isinstance(r, DocumentRefused) for r in results if isinstance(r, Exception))
        assert sum(d.passages for d in await docs.list(GUILD)) == 4


async def test_a_document_with_too_much_text_is_refused(db: Database, tmp_path: Path,
                                                        local_embedder: LocalEmbedder) -> None:
    async with _limited(db, tmp_path, local_embedder, max_document_chars=100) as docs:
        with pytest.raises(DocumentRefused, match="characters of text"):
            await docs.add(GUILD, title="Rules", source="rules.md", kind="markdown", data=RULES, added_by=ADMIN)


async def test_a_blank_title_and_a_hostile_one_are_stored_tidy(docs: ServerDocuments) -> None:
    blank = await docs.add(GUILD, title="   ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    hostile = await docs.add(GUILD, title="Rules\n\n" + "x" * 500 + "\ud800", source="r.md", kind="markdown",
                             data=RULES, added_by=ADMIN)
    assert blank.title == "Untitled"
    assert "\n" not in hostile.title and len(hostile.title) <= 100


async def test_an_empty_query_finds_nothing(docs: ServerDocuments) -> None:
    await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    assert await docs.search(GUILD, "   ") == []


async def test_a_search_ranks_in_a_worker_thread_while_the_event_loop_goes_on(
        docs: ServerDocuments, monkeypatch: pytest.MonkeyPatch) -> None:
    await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)
    await docs.search(GUILD, "voice chat")  # the index is built
    ranking, go_on = threading.Event(), threading.Event()
    released: list[bool] = []
    rank = PassageIndex.search

    def held(self: PassageIndex, *args: object, **kwargs: object) -> object:  # waits for the loop to let it go
        ranking.set()
        released.append(go_on.wait(10))
        return rank(self, *args, **kwargs)

    monkeypatch.setattr(PassageIndex, "search", held)
    search = asyncio.create_task(docs.search(GUILD, "when does voice chat open?"))
    await asyncio.to_thread(ranking.wait, 10)
    go_on.set()  # reached only while the ranking waits: it does not hold the event loop

    hits = await search
    assert released == [True]
    assert hits[0].section == "FAQ > Voice chat"


async def test_an_index_read_in_several_pages_holds_every_passage(
        docs: ServerDocuments, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "READ_PAGE", 2)
    await docs.add(GUILD, title="Server rules", source="rules.md", kind="markdown", data=RULES, added_by=ADMIN)
    await docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN)

    hits = await docs.search(GUILD, "voice channel rules roles spam", k=10, mode="dense")

    assert sorted(h.section for h in hits) == ["FAQ > Roles", "FAQ > Voice chat", "Server rules > 1. Be kind",
                                               "Server rules > 2. Stay on topic", "Server rules > 3. No spam"]


async def test_a_search_while_a_document_is_added_sees_the_server_before_or_after_it(
        docs: ServerDocuments) -> None:
    await docs.add(GUILD, title="Server rules", source="rules.md", kind="markdown", data=RULES, added_by=ADMIN)
    adding = asyncio.create_task(
        docs.add(GUILD, title="FAQ", source="faq.md", kind="markdown", data=FAQ, added_by=ADMIN))
    during = await asyncio.gather(*(docs.search(GUILD, "when does voice chat open?", k=10) for _ in range(3)))
    await adding

    for hits in during:
        assert {h.title for h in hits} in ({"Server rules"}, {"Server rules", "FAQ"})
        assert len(hits) in (3, 5)  # every passage of the documents it saw, none half-added
    after = await docs.search(GUILD, "when does voice chat open?")
    assert (after[0].title, after[0].section) == ("FAQ", "FAQ > Voice chat")
