"""LiveReply's own rules, against an in-memory target (the Discord flows: test_live_replies.py)."""

from __future__ import annotations

import asyncio

from agent.events import AnswerDelta, ToolStarted
from bot.discord_app.live_reply import LiveReply, ReplyTarget


class Note:
    """A sent message in memory; ``fail_edits`` makes that many edits raise."""

    def __init__(self, board: Board, text: str) -> None:
        self.board, self.content, self.deleted = board, text, False

    async def edit(self, *, content: str) -> None:
        self.board.edit_attempts += 1
        if self.board.fail_edits:
            self.board.fail_edits -= 1
            raise ConnectionError("503 from the edit")
        self.content = content

    async def delete(self) -> None:
        self.deleted = True


class Board:
    """A target keeping its messages in a list."""

    def __init__(self, fail_edits: int = 0) -> None:
        self.notes: list[Note] = []
        self.fail_edits = fail_edits
        self.edit_attempts = 0

    async def first(self, text: str) -> Note:
        return await self.more(text)

    async def more(self, text: str) -> Note:
        self.notes.append(Note(self, text))
        return self.notes[-1]

    def move_in(self) -> float | None:
        return None

    def fallback(self) -> ReplyTarget[Note]:
        return self

    def shown(self) -> list[str]:
        return [n.content for n in self.notes if not n.deleted]


async def test_a_preview_that_turns_into_a_tool_call_gives_way_to_the_status_line() -> None:
    board = Board()
    reply = LiveReply(board, interval_s=0.01)
    reply.feed(AnswerDelta(1, "Let me check"))
    reply.feed(ToolStarted(1, "", "calculator", {}))
    await asyncio.sleep(0.05)
    assert board.shown() == ["calling calculator…"]
    await reply.finish("42")
    assert board.shown() == ["42"]


async def test_failing_edits_are_tried_again_an_interval_later_and_the_last_one_still_lands() -> None:
    board = Board(fail_edits=1000)
    reply = LiveReply(board, interval_s=0.05, show_status=False)
    reply.feed(AnswerDelta(1, "a"))
    await asyncio.sleep(0.08)  # the first message is sent
    for ch in "bcdefgh":
        reply.feed(AnswerDelta(1, ch))
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)
    assert board.edit_attempts <= 6  # about one per interval, never one per delta
    [note] = await reply.finish("abcdefgh")  # the final edit fails too: sent anew, the stub deleted
    assert note.content == "abcdefgh" and board.shown() == ["abcdefgh"]


async def test_parts_the_preview_had_beyond_the_final_answer_are_deleted() -> None:
    board = Board()
    reply = LiveReply(board, interval_s=0.01, show_status=False)
    reply.feed(AnswerDelta(1, "x " * 1500))  # a 3,000-character preview: two messages
    await asyncio.sleep(0.1)
    assert len(board.shown()) == 2
    messages = await reply.finish("short after all")
    assert board.shown() == ["short after all"] and [m.content for m in messages] == ["short after all"]


async def test_an_empty_final_answer_still_shows_one_message() -> None:
    board = Board()
    [note] = await LiveReply(board, interval_s=0.01).finish("   ")
    assert note.content.strip() and board.shown() == [note.content]
