"""Specification of what of a memory item is embedded (memory.validation.indexed_text) and what
is keyword-indexed (memory.semantic.item_text.keyword_text)."""

from __future__ import annotations

from memory.semantic.item_text import keyword_text
from memory.semantic.keyword_index import hidden_terms
from memory.semantic.validation import indexed_text


def test_an_item_with_a_speaker_is_embedded_as_speaker_colon_text() -> None:
    assert indexed_text("I painted a sunrise", {"speaker": "Melanie"}) == "Melanie: I painted a sunrise"


def test_a_blank_or_non_text_speaker_adds_nothing() -> None:
    assert indexed_text("I painted", {"speaker": "  \u200b "}) == "I painted"
    assert indexed_text("I painted", {"speaker": 42}) == "I painted"


def test_the_context_of_a_short_reply_comes_before_the_speaker_and_text() -> None:
    assert indexed_text("Yes!", {"speaker": "Mel", "context": "Did you go?"}) == "Did you go?\nMel: Yes!"


def test_the_turns_before_and_the_dates_are_keyword_indexed_but_not_embedded() -> None:
    meta = {"speaker": "Caroline", "before": "Melanie: How was the group?", "dates": "7 May 2023"}
    assert indexed_text("It was powerful, yesterday", meta) == "Caroline: It was powerful, yesterday"
    assert keyword_text("It was powerful, yesterday", meta) == \
        "Melanie: How was the group?\nCaroline: It was powerful, yesterday (7 May 2023)"


def test_an_item_without_that_metadata_is_keyword_indexed_as_it_is_embedded() -> None:
    assert keyword_text("plain words", {}) == indexed_text("plain words", {}) == "plain words"


def test_an_index_only_contexts_hashed_terms_are_keyword_indexed_after_the_text() -> None:
    meta = {"context_terms_hashed": hidden_terms("the Rex cinema")}
    assert keyword_text("yes, me!", meta) == f"yes, me! {hidden_terms('the Rex cinema')}"


def test_an_index_only_context_is_embedded_before_a_stored_one() -> None:
    assert indexed_text("Yes!", {"index_only_context": "Rex tonight?", "context": "Coming?"}) == \
        "Rex tonight? Coming?\nYes!"
