"""An index-only context: text an item is found by (embedded and keyword-indexed) that the
memory never keeps, such as another person's message before a short reply. Checked in the
files: the Chroma folder is read afresh and scanned byte by byte afterwards."""

from __future__ import annotations

from pathlib import Path

import chromadb
import pytest
from chromadb.api.shared_system_client import SharedSystemClient

from memory.semantic import open_user_memory
from memory.semantic.embeddings import LocalEmbedder
from memory.semantic.keyword_index import hidden_terms
from tests.memory.fixtures_semantic import RecordingEmbedder

ALICE = "111111111111111111"
OTHERS = "Is anyone going to see Dune at the Rex cinema tonight?"
WORDS = (b"Rex", b"cinema", b"Dune")


async def _store_short_reply(folder: Path, embedder, **options) -> str:
    async with open_user_memory(str(folder), embedder=embedder, **options) as mem:
        item = await mem.add(ALICE, "yes, me!", {"kind": "exchange", "index_only_context": OTHERS}, "dm")
        await mem.add(ALICE, "I repaired the kitchen sink", {"kind": "exchange"}, "dm")
    return item


async def test_it_is_embedded_before_the_items_text(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    recorder = RecordingEmbedder(local_embedder)
    await _store_short_reply(tmp_path / "c", recorder)

    assert recorder.texts[0] == f"{OTHERS}\nyes, me!"


async def test_neither_the_document_nor_the_metadata_nor_any_file_keeps_it(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    item = await _store_short_reply(tmp_path / "c", local_embedder)

    SharedSystemClient.clear_system_cache()
    chroma = chromadb.PersistentClient(path=str(tmp_path / "c"))
    stored = {i: (doc, meta) for c in chroma.list_collections()
              for got in [chroma.get_collection(c.name).get(include=["documents", "metadatas"])]
              for i, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True)}
    doc, meta = stored[item]
    assert doc == "yes, me!"
    assert "index_only_context" not in meta and meta["context_terms_hashed"] == hidden_terms(OTHERS)
    assert not any(word.decode() in repr(stored) for word in WORDS)
    del chroma
    SharedSystemClient.clear_system_cache()
    for path in (tmp_path / "c").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not [w for w in WORDS if w in data], path


async def test_a_keyword_search_finds_the_item_by_it_also_after_a_cold_load(
        tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    item = await _store_short_reply(tmp_path / "c", local_embedder, search_mode="keyword")

    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder, search_mode="keyword") as mem:
        hits = await mem.search(ALICE, "the Rex cinema", scope="dm")

    assert [h.id for h in hits] == [item]


async def test_the_export_shows_the_persons_words_and_none_of_it(tmp_path: Path,
                                                                 local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder) as mem:
        await mem.add(ALICE, "yes, me!", {"index_only_context": OTHERS}, "dm")
        [exported] = await mem.export(ALICE)

    assert exported["text"] == "yes, me!"
    assert not any(word.decode() in repr(exported) for word in WORDS)


async def test_an_index_only_context_that_is_not_text_is_refused(tmp_path: Path,
                                                                 local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "c"), embedder=local_embedder) as mem:
        with pytest.raises(ValueError, match="index_only_context"):
            await mem.add(ALICE, "yes, me!", {"index_only_context": 42}, "dm")
