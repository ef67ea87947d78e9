"""The /ask status line: which agent events show what, and dropping the pending text at the end."""

from __future__ import annotations

import asyncio

from agent.events import FinalAnswer, ModelCalled, Nudge, RunEnded, ToolFinished, ToolStarted, Usage
from bot.discord_app.status import ThrottledStatus, status_line


def test_a_tool_call_shows_its_name_while_running_and_once_done() -> None:
    assert status_line(ToolStarted(step=1, thought="", tool="calculator", args={})) == "calling calculator…"
    done = ToolFinished(step=1, thought="", tool="calculator", args={}, observation="42", ok=True, elapsed_ms=1.0)
    assert status_line(done) == "calculator done, thinking…"
    assert status_line(Nudge(step=2, problem="format", message="use the format")) == "thinking…"


def test_model_calls_and_the_end_of_the_run_change_nothing() -> None:
    assert status_line(ModelCalled(step=1, elapsed_ms=1.0, usage=Usage(), content="", reasoning=None)) is None
    assert status_line(FinalAnswer(step=1, thought="", answer="42")) is None
    assert status_line(RunEnded(outcome="answered", answer="42", steps=1, usage=Usage(), elapsed_ms=1.0)) is None


async def test_closing_without_flush_drops_the_pending_text() -> None:
    edits: list[str] = []

    async def edit(text: str) -> None:
        edits.append(text)

    status = ThrottledStatus(edit, interval_s=60)
    status.update("calling calculator…")
    await asyncio.sleep(0)  # the first edit goes out at once
    status.update("calculator done, thinking…")
    await status.close(flush=False)
    assert edits == ["calling calculator…"]


async def test_closing_waits_for_an_edit_under_way() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    async def slow_edit(text: str) -> None:
        started.set()
        await release.wait()
        finished.append(text)

    status = ThrottledStatus(slow_edit, interval_s=60)
    status.update("calling weather…")
    await started.wait()
    closing = asyncio.create_task(status.close(flush=False))
    await asyncio.sleep(0)
    assert not closing.done()
    release.set()
    await closing
    assert finished == ["calling weather…"]
