"""estimate_tokens: an approximate, high-leaning count; truncate_to_tokens: a visible cut."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.tokens import estimate_tokens, truncate_to_tokens


def test_empty_text_is_zero_tokens() -> None:
    assert estimate_tokens("") == 0


def test_ascii_text_counts_about_four_characters_per_token() -> None:
    assert estimate_tokens("x" * 400) == 100
    assert estimate_tokens("abcde") == 2


def test_never_fewer_tokens_than_words() -> None:
    assert estimate_tokens("a b c d e f g h") == 8


def test_non_ascii_characters_count_one_token_each() -> None:
    assert estimate_tokens("日本語のテキスト") == 8
    assert estimate_tokens("\u200b\u200b") == 2


def test_whitespace_only_text_is_at_least_one_token() -> None:
    assert estimate_tokens("   \n\t") == 2
    assert estimate_tokens(" ") == 1


def test_english_prose_is_near_a_real_tokenizer_count() -> None:
    # "The quick brown fox jumps over the lazy dog." is 10 tokens in cl100k_base.
    assert 9 <= estimate_tokens("The quick brown fox jumps over the lazy dog.") <= 13


def test_text_that_fits_is_returned_unchanged() -> None:
    assert truncate_to_tokens("short text", 100) == "short text"


def test_a_cut_keeps_the_start_and_says_it_was_cut() -> None:
    text = "word " * 1000
    cut = truncate_to_tokens(text, 50)
    assert cut is not None
    assert cut.startswith("word word")
    assert "truncated" in cut
    assert f"of {len(text)} characters kept" in cut
    assert estimate_tokens(cut) <= 50


def test_a_budget_too_small_for_the_marker_gives_none() -> None:
    assert truncate_to_tokens("x" * 1000, 2) is None


@given(st.text(max_size=2000), st.integers(min_value=0, max_value=600))
def test_a_cut_never_exceeds_the_budget(text: str, budget: int) -> None:
    cut = truncate_to_tokens(text, budget)
    assert cut is None or estimate_tokens(cut) <= budget


@given(st.text(max_size=500), st.text(max_size=500))
def test_the_estimate_never_shrinks_when_text_is_appended(a: str, b: str) -> None:
    assert estimate_tokens(a + b) >= estimate_tokens(a)
