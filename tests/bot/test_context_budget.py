"""bot.turn.context_budget: what is sent to the model fits the budget, in the documented order."""

from __future__ import annotations

import re

from bot.turn.context_budget import MIN_BUDGET_TOKENS, fit_context, message_tokens
from memory.tokens import estimate_tokens


def cut_from(text: str, original: str) -> bool:
    """``text`` is the start of ``original`` followed by the visible truncation marker."""
    found = re.search(r"\n\[\.\.\. truncated: (\d+) of (\d+) characters kept\]\Z", text)
    return (found is not None and int(found[2]) == len(original)
            and original.startswith(text[:int(found[1])]) and found.start() == int(found[1]))


def msg(text: str, role: str = "user") -> dict:
    return {"role": role, "content": text}


def total_cost(b) -> int:
    return (message_tokens(b.question) + sum(message_tokens(m["content"]) for m in b.history)
            + sum(estimate_tokens(m) + 1 for m in b.memories))


def test_everything_fits_so_nothing_changes() -> None:
    history = [msg("hello"), msg("hi there", "assistant")]
    b = fit_context("what is 2+2?", history, ["likes tea"], budget=1000)
    assert b.question == "what is 2+2?"
    assert b.history == history and b.memories == ["likes tea"]
    assert (b.dropped_history, b.dropped_memories, b.cut_messages) == (0, 0, 0)
    assert b.tokens == total_cost(b)


def test_oldest_history_goes_first() -> None:
    history = [msg(f"message number {i} " + "x" * 80) for i in range(10)]
    b = fit_context("q", history, ["memory one"], budget=200)
    assert b.dropped_history > 0 and b.dropped_memories == 0
    assert b.history == history[b.dropped_history:]
    assert b.history[-1] == history[-1]
    assert b.tokens <= 200


def test_least_relevant_memories_go_after_older_history_but_before_the_last_exchange() -> None:
    history = [msg("old " + "y" * 200), msg("last question"), msg("last answer", "assistant")]
    memories = [f"memory {i} " + "m" * 120 for i in range(6)]  # best first
    b = fit_context("q", history, memories, budget=140)
    assert b.history == history[1:] and b.dropped_history == 1
    assert 0 < b.dropped_memories < 6
    assert b.memories == memories[: 6 - b.dropped_memories]
    assert b.tokens <= 140


def test_memories_go_before_the_last_exchange() -> None:
    history = [msg("q " + "y" * 100), msg("a " + "z" * 100, "assistant")]
    memories = ["memory " + "m" * 150]
    b = fit_context("question", history, memories, budget=100)
    assert b.memories == [] and b.dropped_memories == 1
    assert b.history == history and b.tokens <= 100


def test_the_last_exchange_goes_when_nothing_else_is_left() -> None:
    history = [msg("q " + "y" * 172), msg("a " + "z" * 172, "assistant")]
    b = fit_context("question", history, [], budget=100)
    assert b.history == history[1:] and b.dropped_history == 1 and b.tokens <= 100


def test_an_over_long_question_is_cut_with_a_visible_note() -> None:
    question = "z" * 100_000
    b = fit_context(question, [], [], budget=4000)
    assert cut_from(b.question, question)
    assert b.question.startswith("zzzz")
    assert b.cut_messages == 1
    assert message_tokens(b.question) <= 2000
    assert b.tokens <= 4000


def test_one_over_long_history_message_is_cut_not_dropped_when_room_remains() -> None:
    history = [msg("short"), msg("h" * 50_000, "assistant")]
    b = fit_context("q", history, [], budget=3000)
    assert b.dropped_history == 0
    assert cut_from(b.history[1]["content"], history[1]["content"])
    assert b.history[1]["role"] == "assistant"
    assert b.tokens <= 3000


def test_input_history_dicts_are_not_mutated() -> None:
    history = [msg("h" * 50_000)]
    fit_context("q", history, [], budget=500)
    assert len(history[0]["content"]) == 50_000


def test_a_tiny_budget_is_raised_to_the_minimum_and_keeps_a_cut_question() -> None:
    question = "a question " * 200
    b = fit_context(question, [msg("old " * 100)], ["mem " * 100], budget=1)
    assert cut_from(b.question, question) and b.question.startswith("a question")
    assert b.tokens <= MIN_BUDGET_TOKENS


def test_an_over_long_non_ascii_question_is_cut_within_its_half_of_the_budget() -> None:
    question = "日本語のテキスト\u200b" * 5000
    b = fit_context(question, [], [], budget=600)
    assert cut_from(b.question, question) and b.question.startswith("日本語")
    assert message_tokens(b.question) <= 300 and b.tokens <= 600


def test_a_short_question_is_returned_as_it_is() -> None:
    assert fit_context("fine", [], [], budget=MIN_BUDGET_TOKENS).question == "fine"


def test_the_running_summary_comes_first_in_the_history() -> None:
    b = fit_context("q?", [msg("recent"), msg("reply", "assistant")], ["a memory"], budget=1000,
                    summary=msg("SUMMARY: the locker code is 4711"))
    assert [m["content"] for m in b.history] == ["SUMMARY: the locker code is 4711", "recent", "reply"]
    assert b.summary_kept and total_cost(b) <= 1000


def test_the_summary_goes_after_older_history_and_memories_but_before_the_last_exchange() -> None:
    summary = msg("S " * 60)
    last, reply = "last " * 40, "last reply " * 20
    history = [msg("old " * 30), msg("older reply " * 10, "assistant"), msg(last), msg(reply, "assistant")]
    memories = ["memory " * 20]
    wide = fit_context("q?", history, memories, budget=10_000, summary=summary)
    tight = fit_context("q?", history, memories, budget=total_cost(wide) - 1, summary=summary)
    assert tight.summary_kept and tight.dropped_history >= 1
    squeezed = fit_context("q?", history, memories, budget=message_tokens("q?") + message_tokens(last)
                           + message_tokens(reply) + 2, summary=summary)
    assert not squeezed.summary_kept and squeezed.memories == []
    assert [m["content"] for m in squeezed.history] == [last, reply]


def test_a_huge_summary_is_cut_to_a_quarter_of_the_budget() -> None:
    huge = "fact " * 50_000
    b = fit_context("q?", [], [], budget=2000, summary=msg(huge))
    assert b.summary_kept and cut_from(b.history[0]["content"], huge)
    assert estimate_tokens(b.history[0]["content"]) <= 500
