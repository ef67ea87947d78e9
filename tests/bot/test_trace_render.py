"""A stored trace renders as one Discord message per step plus a summary line."""

from __future__ import annotations

from bot.discord_app.replies import DISCORD_MESSAGE_LIMIT
from bot.discord_app.trace_render import render_steps, render_summary

EVENTS = [
    {"type": "model_called", "step": 1, "elapsed_ms": 12.0, "usage": {}, "content": "..."},
    {"type": "tool_started", "step": 1, "thought": "I need math", "tool": "calculator", "args": {"expression": "2+2"}},
    {"type": "tool_finished", "step": 1, "thought": "I need math", "tool": "calculator",
     "args": {"expression": "2+2"}, "observation": "4", "ok": True, "elapsed_ms": 3.5},
    {"type": "nudge", "step": 2, "problem": "no Action or Final Answer found", "message": "..."},
    {"type": "final_answer", "step": 3, "thought": "done", "answer": "It is 4."},
    {"type": "run_ended", "outcome": "answered", "answer": "It is 4.", "steps": 3, "usage": {}, "elapsed_ms": 50},
]


def test_each_step_becomes_one_message_in_order() -> None:
    messages = render_steps(EVENTS)
    assert len(messages) == 3
    assert messages[0].startswith("**Step 1** · `calculator` · ok")
    assert "2+2" in messages[0] and "Observation:\n```\n4\n```" in messages[0]
    assert "> I need math" in messages[0]
    assert "not usable" in messages[1]
    assert messages[2].startswith("**Step 3** · final answer") and "It is 4." in messages[2]


def test_a_recall_memory_step_shows_its_input_and_time_but_not_the_memories_it_found() -> None:
    event = dict(EVENTS[2], tool="recall_memory", args={"query": "favourite colour"},
                 observation="- (2026-11-02) my favourite colour is teal")
    (message,) = render_steps([event])
    assert message.startswith("**Step 1** · `recall_memory` · ok · 0.00 s")
    assert "favourite colour" in message and "teal" not in message
    assert "Observation: (the asker's memories: not shown here)" in message


def test_long_observations_are_cut_with_a_visible_note() -> None:
    event = dict(EVENTS[2], observation="x" * 10_000, args={"q": "y" * 5_000})
    (message,) = render_steps([event])
    assert len(message) <= DISCORD_MESSAGE_LIMIT
    assert "more characters]" in message


def test_backticks_in_observations_cannot_close_the_code_block() -> None:
    event = dict(EVENTS[2], observation="```\n@everyone injected")
    (message,) = render_steps([event])
    assert message.count("```") == 4


def test_unknown_or_malformed_events_are_skipped() -> None:
    assert render_steps([{"type": "from_the_future"}, {"no": "type"}]) == []
    (message,) = render_steps([{"type": "tool_finished"}])
    assert "`?`" in message


def test_summary_line_counts_steps_tokens_and_time() -> None:
    line = render_summary(steps=3, prompt_tokens=1200, completion_tokens=34, elapsed_ms=4200, outcome="answered")
    assert line == "**Summary** · 3 steps · 1,234 tokens (1,200 in, 34 out) · 4.20 s · answered"
