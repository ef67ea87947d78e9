"""A channel's running summary on a real Runtime against the loopback FakeOpenAI: what left the
context is folded by the model after a turn (never on its path) and the next prompts carry the
summary, then the recent messages; /reset clears it; a fold made from messages removed
meanwhile is not kept."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.knowledge.summary import FOLD_INSTRUCTIONS, SUMMARY_HEADER
from bot.process.runtime import Runtime
from memory.stores.buffer import BufferedMessage
from memory.tokens import estimate_tokens
from tests.bot.conftest import BOB, GUILD, ask, buffered, request_text
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # a real runtime per test: handed out first (tests/conftest.py)

CHANNEL = "300000000000000001"
FILLER = "Here is a long remark about the weather and the match schedule, nothing more. " * 5


def _is_fold(request: dict[str, Any]) -> bool:
    return request["messages"][0]["content"] == FOLD_INSTRUCTIONS


def _extractive(request: dict[str, Any]) -> str:
    """A stand-in summariser: the quoted lines that hold a digit, after the summary so far."""
    if not _is_fold(request):
        return "Final Answer: ok"
    lines = [line[2:] for line in request["messages"][1]["content"].splitlines() if line.startswith("> ")]
    return "\n".join(line for line in lines if any(ch.isdigit() for ch in line.split(": ", 1)[-1])) or "chatter"


async def _talk(rt: Runtime, texts: list[str], *, first_by_bob: bool = False) -> None:
    """Alice says each text in turn (the first one said by Bob: so Alice's own memory cannot
    hold it), each fold finished before the next turn."""
    for n, text in enumerate(texts):
        who = {"user": BOB, "name": "Bob"} if first_by_bob and n == 0 else {}
        result = await rt.pipeline.handle(ask(text, channel=CHANNEL, **who))
        assert result.ok, result.text
        await rt.pipeline.summaries.wait_idle()


def _last_turn(fake: FakeOpenAI) -> dict[str, Any]:
    return [r for r in fake.requests if not _is_fold(r)][-1]


async def test_a_fact_said_far_outside_the_window_reaches_the_prompt_through_the_summary(
        make_runtime, fake: FakeOpenAI) -> None:
    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        await _talk(rt, ["the team locker code is 4711", *[FILLER] * 12], first_by_bob=True)
        await _talk(rt, ["what is the team locker code?"])
        prompt = _last_turn(fake)["messages"]
        assert not any("> the team locker code is 4711" in m["content"] and SUMMARY_HEADER not in m["content"]
                       for m in prompt)  # Bob's message itself is out of the window
        summary = next(m["content"] for m in prompt if SUMMARY_HEADER in m["content"])
        assert "(user 200000000000000002): the team locker code is 4711" in summary
        assert prompt.index(next(m for m in prompt if SUMMARY_HEADER in m["content"])) == 1  # right after system
        assert any(_is_fold(r) for r in fake.requests)


async def test_without_the_summary_the_same_fact_is_dropped(make_runtime, fake: FakeOpenAI) -> None:
    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="0") as rt:
        await _talk(rt, ["the team locker code is 4711", *[FILLER] * 12, "what is the team locker code?"],
                    first_by_bob=True)
        assert "4711" not in request_text(_last_turn(fake))
        assert not any(_is_fold(r) for r in fake.requests)


async def test_the_model_folds_once_per_summary_every_messages(make_runtime, fake: FakeOpenAI) -> None:
    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="6") as rt:
        await _talk(rt, [FILLER] * 16)
        folds = [r for r in fake.requests if _is_fold(r)]
        new_lines = [f["messages"][1]["content"].split("The new messages", 1)[1].count("\n> [") for f in folds]
        stored = await rt.pipeline.summaries.current(CHANNEL)
        assert stored is not None
        assert 1 <= len(folds) <= 32 // 6  # 16 turns stored 32 messages
        assert all(count >= 6 for count in new_lines)
        assert stored.folded == sum(new_lines)


async def test_the_fold_runs_after_the_turn_not_on_its_path(make_runtime, fake: FakeOpenAI) -> None:
    gate = asyncio.Event()

    async def held(request: dict[str, Any]) -> str:
        if _is_fold(request):
            await gate.wait()
        return _extractive(request)

    fake.responder = held
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="2") as rt:
        for _ in range(12):
            assert (await rt.pipeline.handle(ask(FILLER, channel=CHANNEL))).ok  # answered while a fold waits
        assert any(_is_fold(r) for r in fake.requests)
        assert await rt.pipeline.summaries.current(CHANNEL) is None
        gate.set()
        await rt.pipeline.summaries.wait_idle()
        assert await rt.pipeline.summaries.current(CHANNEL) is not None


async def test_reset_clears_the_summary_and_a_fold_of_reset_messages_is_not_kept(
        make_runtime, fake: FakeOpenAI) -> None:
    gate = asyncio.Event()

    async def held(request: dict[str, Any]) -> str:
        if _is_fold(request) and not gate.is_set():
            await gate.wait()
        return _extractive(request)

    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        await _talk(rt, ["the team locker code is 4711", *[FILLER] * 10], first_by_bob=True)
        assert await rt.pipeline.summaries.current(CHANNEL) is not None
        await rt.services.channels.reset_channel(CHANNEL)
        assert await rt.pipeline.summaries.current(CHANNEL) is None

        fake.responder = held
        for _ in range(10):
            assert (await rt.pipeline.handle(ask(FILLER, channel=CHANNEL))).ok
        await rt.services.channels.reset_channel(CHANNEL)  # while a fold of those messages waits
        gate.set()
        await rt.pipeline.summaries.wait_idle()
        assert await rt.pipeline.summaries.current(CHANNEL) is None
        await _talk(rt, ["hello again"])
        assert SUMMARY_HEADER not in request_text(_last_turn(fake))


async def test_a_fold_check_with_every_unsummarised_message_still_kept_reads_no_messages(
        make_runtime, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        await _talk(rt, ["short remark"] * 5)  # 10 messages past SUMMARY_EVERY, all within the kept window
        reads: list[str] = []
        real = rt.buffer.recent

        async def counted(channel_id: str, **options: Any) -> list[BufferedMessage]:
            reads.append(channel_id)
            return await real(channel_id, **options)

        monkeypatch.setattr(rt.buffer, "recent", counted)
        assert not await rt.pipeline.summaries.fold(CHANNEL)
        assert reads == []
        assert not any(_is_fold(r) for r in fake.requests)


async def test_a_fold_check_that_folds_nothing_reads_no_forget_mark(
        make_runtime, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        await _talk(rt, ["short remark"] * 5)  # past SUMMARY_EVERY, all within the kept window
        summaries = rt.pipeline.summaries
        marks = 0
        real_mark = summaries._store.forget_mark

        async def counted_mark() -> int:
            nonlocal marks
            marks += 1
            return await real_mark()

        monkeypatch.setattr(summaries._store, "forget_mark", counted_mark)
        assert not await summaries.fold(CHANNEL)
        assert marks == 0  # decided from counts and sizes alone: one query fewer on every turn


async def test_the_first_fold_of_a_busy_channel_folds_only_the_newest_messages_that_fit_the_budget(
        make_runtime, fake: FakeOpenAI) -> None:
    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        start = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
        await rt.buffer.append_many([buffered(BOB, "user", f"{n}: {FILLER}", start + timedelta(seconds=n), name="Bob",
                                              channel=CHANNEL) for n in range(300)])
        assert await rt.pipeline.summaries.fold(CHANNEL)
        [fold] = [r for r in fake.requests if _is_fold(r)]
        new_messages = fold["messages"][1]["content"].split("The new messages", 1)[1]
        assert estimate_tokens(new_messages) <= rt.pipeline.history_token_budget
        stored = await rt.pipeline.summaries.current(CHANNEL)
        assert stored is not None and f"): {(stored.through - start).seconds}: Here is" in new_messages


async def test_a_first_fold_racing_a_forget_of_one_of_its_authors_is_not_stored(
        make_runtime, fake: FakeOpenAI) -> None:
    folding, release = asyncio.Event(), asyncio.Event()

    async def held(request: dict[str, Any]) -> str:
        if _is_fold(request):
            folding.set()
            await release.wait()
        return _extractive(request)

    fake.responder = held
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        for n, text in enumerate(["the team locker code is 4711", *[FILLER] * 12]):
            who = {"user": BOB, "name": "Bob"} if n == 0 else {}
            assert (await rt.pipeline.handle(ask(text, channel=CHANNEL, **who))).ok
            if folding.is_set():
                break
        await folding.wait()  # the channel's first fold has read Bob's words and waits for the model
        assert await rt.pipeline.summaries.current(CHANNEL) is None
        forgotten = await rt.services.memory.memory_forget(BOB, GUILD)
        assert forgotten.messages == 1
        release.set()
        await rt.pipeline.summaries.wait_idle()
        assert await rt.pipeline.summaries.current(CHANNEL) is None


async def test_the_forgets_reply_says_that_the_channel_summaries_holding_the_persons_words_were_erased(
        make_runtime, fake: FakeOpenAI) -> None:
    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        await _talk(rt, ["the team locker code is 4711", *[FILLER] * 10], first_by_bob=True)
        assert await rt.pipeline.summaries.current(CHANNEL) is not None
        forgotten = await rt.services.memory.memory_forget(BOB, GUILD)
        assert forgotten.summaries == 1
        assert "1 channel summary(ies) that may have held your words" in forgotten.summary()
        assert await rt.pipeline.summaries.current(CHANNEL) is None


async def test_a_private_turn_which_adds_nothing_to_the_buffer_checks_for_no_fold(
        make_runtime, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.responder = _extractive
    async with make_runtime(MAX_CONTEXT_TOKENS="2500", SUMMARY_EVERY="4") as rt:
        checked: list[str] = []
        real = rt.buffer.count

        async def counted(channel_id: str, **options: Any) -> int:
            checked.append(channel_id)
            return await real(channel_id, **options)

        monkeypatch.setattr(rt.buffer, "count", counted)
        assert (await rt.pipeline.handle(ask("just between us", channel=CHANNEL, private=True))).ok
        await rt.pipeline.summaries.wait_idle()
        assert checked == []
        assert (await rt.pipeline.handle(ask("said aloud", channel=CHANNEL))).ok
        await rt.pipeline.summaries.wait_idle()
        assert checked == [CHANNEL]
