"""The console chat shows the answer as the model writes it, and only once."""

from __future__ import annotations

import asyncio
import io

from rich.console import Console

from bot.console.chat import ConsoleChat
from bot.process.runtime import Runtime
from tests.fakes.openai_server import FakeOpenAI


async def test_the_answer_streams_on_its_line_before_the_model_finishes_and_is_not_repeated(
        runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply(chunks=["Final Answer: ", "seventeen ", "times ", "twenty-three ", "is 391."], pause_after=3)
    out = io.StringIO()
    lines = iter(["what is 17 times 23?\n", "/quit\n"])
    chat = ConsoleChat(runtime, Console(file=out, width=200, highlight=False, color_system=None),
                       readline=lambda: next(lines, ""))
    running = asyncio.create_task(chat.run())
    await asyncio.wait_for(fake.paused.wait(), 10)
    await asyncio.sleep(0.1)
    # The banner names the data folder, whose temporary path may hold any digits: look after the prompt.
    shown = out.getvalue().partition("you>")[2]
    assert "answer: seventeen" in shown  # shown while the model is still writing
    assert "391" not in shown
    fake.resume()
    assert await asyncio.wait_for(running, 10) == 0
    text = out.getvalue()
    assert text.count("seventeen times twenty-three is 391.") == 1
    assert text.index("answer: seventeen") < text.index("answered after 1 step(s)")
