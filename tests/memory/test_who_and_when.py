"""Specification of the memory's write-time metadata at search time: who said an item
(`speaker`), the turns just before it (`before`, keyword-indexed) and the dates it names
(`dates`), through `open_user_memory`'s add and search."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memory.semantic import ranking
from memory.semantic.embeddings import LocalEmbedder
from memory.semantic import open_user_memory

USER = "conversation-1"
FILLER = ("We adopted a puppy", "The weather was nice and sunny", "I made pasta for dinner", "My car broke down again")


async def test_a_question_naming_a_person_finds_what_that_person_said(tmp_path: Path,
                                                                      local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "m"), embedder=local_embedder) as mem:
        for text in FILLER:
            await mem.add(USER, text, {"speaker": "Caroline"}, "dm")
        await mem.add(USER, "I painted a lake at sunrise", {"speaker": "Caroline"}, "dm")
        await mem.add(USER, "I painted a lake at sunrise, look", {"speaker": "Melanie"}, "dm")

        hits = await mem.search(USER, "What did Melanie paint?", k=2, scope="dm")

    # without the speaker, Caroline's shorter sentence matches the question better
    assert [h.metadata["speaker"] for h in hits] == ["Melanie", "Caroline"]


async def test_an_answer_is_found_by_words_of_the_turn_before_it(tmp_path: Path,
                                                                 local_embedder: LocalEmbedder) -> None:
    async with open_user_memory(str(tmp_path / "m"), embedder=local_embedder, search_mode="keyword") as mem:
        await mem.add(USER, "It was so powerful, I cried", {"before": "Melanie: How was the support group?"}, "dm")
        await mem.add(USER, "The weather was nice", None, "dm")

        hits = await mem.search(USER, "support group", scope="dm")

    assert [h.text for h in hits] == ["It was so powerful, I cried"]
    assert "before" in hits[0].metadata  # kept, not shown as the text


@pytest.mark.parametrize(("dated_bonus", "first"), [(ranking.DEFAULT_CONFIG.dated_bonus, "7 May 2023"), (0.0, None)])
async def test_a_question_asking_when_prefers_an_item_that_names_a_date(tmp_path: Path, local_embedder: LocalEmbedder,
                                                                        dated_bonus: float, first: str | None) -> None:
    config = replace(ranking.DEFAULT_CONFIG, dated_bonus=dated_bonus)
    async with open_user_memory(str(tmp_path / "m"), embedder=local_embedder, ranking_config=config) as mem:
        for text in FILLER:
            await mem.add(USER, text, {"speaker": "Caroline"}, "dm")
        await mem.add(USER, "I went to the support group", {"speaker": "Caroline"}, "dm")
        await mem.add(USER, "I went to the support group", {"speaker": "Caroline", "dates": "7 May 2023"}, "dm")

        when = await mem.search(USER, "When did Caroline go to the support group?", k=2, scope="dm")

    # the dates, keyword-indexed, make the dated item's text longer: only the bonus lifts it
    assert [h.metadata.get("dates") for h in when] == [first, "7 May 2023" if first is None else None]
