"""Specification of the memory's write-time metadata at search time: who said an item
(`speaker`), the turns just before it (`before`, keyword-indexed) and the dates it names
(`dates`), through `open_user_memory`'s add and search."""

from __future__ import annotations

from pathlib import Path

from memory.embeddings import LocalEmbedder
from memory.semantic import open_user_memory

USER = "conversation-1"


async def test_a_question_naming_a_person_finds_what_that_person_said(tmp_path: Path,
                                                                      local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "m"), embedder=local_embedder) as mem:
        await mem.add(USER, "I painted a lake at sunrise last week", {"speaker": "Caroline"}, "dm")
        await mem.add(USER, "I painted a lake at sunrise", {"speaker": "Melanie"}, "dm")
        await mem.add(USER, "We adopted a puppy", {"speaker": "Caroline"}, "dm")

        hits = await mem.search(USER, "What did Melanie paint?", k=2, scope="dm")

    assert hits[0].metadata["speaker"] == "Melanie"
    assert hits[0].text == "I painted a lake at sunrise"


async def test_an_answer_is_found_by_words_of_the_turn_before_it(tmp_path: Path,
                                                                 local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "m"), embedder=local_embedder, search_mode="keyword") as mem:
        await mem.add(USER, "It was so powerful, I cried", {"before": "Melanie: How was the support group?"}, "dm")
        await mem.add(USER, "The weather was nice", None, "dm")

        hits = await mem.search(USER, "support group", scope="dm")

    assert [h.text for h in hits] == ["It was so powerful, I cried"]
    assert "before" in hits[0].metadata  # kept, not shown as the text


async def test_a_question_asking_when_prefers_an_item_that_names_a_date(tmp_path: Path,
                                                                        local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "m"), embedder=local_embedder) as mem:
        await mem.add(USER, "Caroline loves the support group", {"speaker": "Melanie"}, "dm")
        await mem.add(USER, "I went to the support group yesterday", {"speaker": "Caroline", "dates": "7 May 2023"}, "dm")

        when = await mem.search(USER, "When did Caroline go to the support group?", k=1, scope="dm")

    assert when[0].metadata["dates"] == "7 May 2023"
