"""bot.knowledge.summary.kept: which of a channel's newest messages stay verbatim (the rest is
folded into the running summary): within the window, within the token budget, pairs whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.knowledge.summary import kept
from bot.turn.context_budget import message_tokens
from memory.stores.buffer import MessageSize
from memory.tokens import estimate_tokens

T0 = datetime(2026, 12, 3, tzinfo=UTC)


TEXT = "word " * 20


def _message(second: int, text: str = TEXT) -> MessageSize:
    return MessageSize(created_at=T0 + timedelta(seconds=second), tokens=estimate_tokens(text))


def test_the_newest_messages_that_fit_the_budget_are_kept() -> None:
    messages = [_message(n) for n in range(10)]
    each = message_tokens(TEXT)
    assert kept(messages, window=40, token_budget=3 * each) == 3
    assert kept(messages, window=40, token_budget=10_000) == 10


def test_no_more_than_the_window_is_kept() -> None:
    assert kept([_message(n) for n in range(10)], window=4, token_budget=10_000) == 4
    assert kept([_message(n) for n in range(10)], window=0, token_budget=10_000) == 0


def test_a_question_and_its_answer_are_kept_or_folded_together() -> None:
    messages = [_message(0), _message(1), _message(1), _message(2), _message(2)]  # questions, each with its answer
    each = message_tokens(TEXT)
    assert kept(messages, window=40, token_budget=3 * each) == 2  # the third would split the pair at second 1


def test_one_huge_message_keeps_nothing_and_an_empty_channel_keeps_nothing() -> None:
    assert kept([_message(0, "x " * 100_000)], window=40, token_budget=100) == 0
    assert kept([], window=40, token_budget=100) == 0
