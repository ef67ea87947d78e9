"""The reply protocols on hostile replies: a megabyte of blanks before (or instead of) the answer
is read and streamed in one pass. A pattern that backtracks over the blanks, or a head stripped
again at every piece, takes minutes here and fails on the suite's timeout."""

from __future__ import annotations

import pytest

from agent.llm import Completion, Delta
from agent.protocols import AnswerStream, NativeProtocol, TextProtocol
from agent.tools.registry import ToolRegistry

MEGABYTE = 1_000_000


def streamed(stream: AnswerStream, content: str, piece: int) -> str:
    said = [stream.feed(Delta(content=content[i:i + piece])) for i in range(0, len(content), piece)]
    return "".join(said) + stream.finish()


@pytest.mark.parametrize(
    "content",
    [" " * MEGABYTE + "hi", "\n" * MEGABYTE + "hi", " \t" * (MEGABYTE // 2) + "Final Answer: hi",
     "**Final Answer:**" + " " * MEGABYTE + "hi"],
    ids=["spaces", "newlines", "blanks-then-label", "label-then-blanks"],
)
def test_a_native_reply_of_a_megabyte_of_blanks_and_an_answer_is_read_as_the_answer(content: str) -> None:
    assert NativeProtocol().read(Completion(content=content), ToolRegistry()).answer == "hi"


@pytest.mark.parametrize("piece", [4, 8_192])
def test_a_native_stream_opening_with_a_megabyte_of_blanks_streams_the_answer(piece: int) -> None:
    content = " " * MEGABYTE + "Final Answer: the answer, after a long silence"
    said = streamed(NativeProtocol().answer_stream(), content, piece)
    assert said.strip() == "the answer, after a long silence"


@pytest.mark.parametrize("piece", [4, MEGABYTE + 1])
def test_a_text_stream_whose_first_line_is_a_megabyte_of_blanks_streams_the_answer(piece: int) -> None:
    content = " " * MEGABYTE + "\nFinal Answer: hi"
    assert streamed(TextProtocol().answer_stream(), content, piece).strip() == "hi"
