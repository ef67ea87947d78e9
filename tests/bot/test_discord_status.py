"""The /ask status line: which agent events show what."""

from __future__ import annotations

from agent.events import FinalAnswer, ModelCalled, Nudge, RunEnded, ToolFinished, ToolStarted, Usage
from bot.discord_app.status import status_line


def test_a_tool_call_shows_its_name_while_running_and_once_done() -> None:
    assert status_line(ToolStarted(step=1, thought="", tool="calculator", args={})) == "calling calculator…"
    done = ToolFinished(step=1, thought="", tool="calculator", args={}, observation="42", ok=True, elapsed_ms=1.0)
    assert status_line(done) == "calculator done, thinking…"
    assert status_line(Nudge(step=2, problem="format", message="use the format")) == "thinking…"


def test_model_calls_and_the_end_of_the_run_change_nothing() -> None:
    assert status_line(ModelCalled(step=1, elapsed_ms=1.0, usage=Usage(), content="", reasoning=None)) is None
    assert status_line(FinalAnswer(step=1, thought="", answer="42")) is None
    assert status_line(RunEnded(outcome="answered", answer="42", steps=1, usage=Usage(), elapsed_ms=1.0)) is None
