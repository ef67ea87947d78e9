"""Splitting answers into Discord-sized parts without breaking code blocks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.discord_app.replies import DISCORD_MESSAGE_LIMIT, split_message


def fence_lines(part: str) -> int:
    return sum(1 for line in part.split("\n") if line.strip().startswith("```"))


def test_short_text_is_one_part_unchanged() -> None:
    assert split_message("hello\nworld") == ["hello\nworld"]


def test_whitespace_only_text_gives_no_parts() -> None:
    assert split_message("  \n\t ") == []


def test_long_text_splits_on_line_boundaries_in_order() -> None:
    lines = [f"line {i:04d} " + "x" * 80 for i in range(60)]
    parts = split_message("\n".join(lines))
    assert len(parts) > 1
    assert all(len(p) <= DISCORD_MESSAGE_LIMIT for p in parts)
    assert "\n".join(parts).split("\n") == lines


def test_code_block_spanning_a_break_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"print({i})  # " + "y" * 60 for i in range(80))
    text = "Here is the script:\n```python\n" + code + "\n```\nDone."
    parts = split_message(text)
    assert len(parts) >= 2
    for part in parts:
        assert len(part) <= DISCORD_MESSAGE_LIMIT
        assert fence_lines(part) % 2 == 0
    assert parts[0].endswith("\n```")
    assert parts[1].startswith("```python\n")
    assert parts[-1].endswith("Done.")


def test_five_thousand_character_answer_arrives_as_ordered_parts() -> None:
    text = "".join(f"Paragraph {i}: " + "word " * 40 + "\n" for i in range(24))
    assert 4900 < len(text) < 5400
    parts = split_message(text)
    assert 3 <= len(parts) <= 4
    rebuilt = " ".join(parts)
    positions = [rebuilt.index(f"Paragraph {i}:") for i in range(24)]
    assert positions == sorted(positions)


def test_a_single_line_longer_than_the_limit_is_cut_at_spaces() -> None:
    text = " ".join(["token"] * 1000)
    parts = split_message(text)
    assert all(len(p) <= DISCORD_MESSAGE_LIMIT for p in parts)
    assert " ".join(parts).split() == text.split()


def test_a_line_without_spaces_is_cut_hard() -> None:
    text = "z" * 4500
    parts = split_message(text)
    assert all(len(p) <= DISCORD_MESSAGE_LIMIT for p in parts)
    assert "".join(parts) == text


def test_hostile_fence_language_tag_is_not_repeated_in_full() -> None:
    text = "```" + "a" * 3000 + "\n" + "code line\n" * 400 + "```"
    parts = split_message(text)
    assert all(len(p) <= DISCORD_MESSAGE_LIMIT for p in parts)
    assert all(fence_lines(p) % 2 == 0 for p in parts)


def test_limit_below_minimum_is_refused() -> None:
    try:
        split_message("x", limit=10)
    except ValueError as exc:
        assert "at least 64" in str(exc)
    else:
        raise AssertionError("expected ValueError")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab `\n\u200b\u202e")), max_size=6000))
def test_any_text_gives_parts_within_limit_with_balanced_fences(text: str) -> None:
    parts = split_message(text, limit=200)
    assert all(len(p) <= 200 for p in parts)
    assert all(fence_lines(p) % 2 == 0 for p in parts)
    original = [c for c in text if not c.isspace() and c != "`"]
    rebuilt = [c for c in "".join(parts) if not c.isspace() and c != "`"]
    assert rebuilt == original
