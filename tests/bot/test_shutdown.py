"""Graceful shutdown of the real processes: `python -m bot run` (FakeDiscord + FakeOpenAI) on
SIGTERM and `python -m bot chat` on SIGINT, mid-turn. The process exits 0, the turn's answer
(or the "restarting" sentence) reaches the person, and the SQLite file holds whole turns only.
The second-request path (abandon at once) is checked in-process on a real Runtime."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
from collections.abc import Awaitable
from pathlib import Path

import pytest

from bot.errors import sentence_for
from bot.process.runtime import Runtime
from bot.process.shutdown import StopSignal, serve_until_stopped
from tests.bot.conftest import ask
from tests.bot.test_console import child_env
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts processes or loads the model: handed out first (tests/conftest.py)

EXIT_WAIT_S = 90


def bot_env(fake: FakeOpenAI, data: Path, **extra: str) -> dict[str, str]:
    return {"LLM_MODEL": "fake-model", "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k",
            "LLM_MAX_RETRIES": "0", "LLM_TIMEOUT_S": "60", "DATA_DIR": str(data),
            "EMBEDDING_BACKEND": "openai", "EMBEDDING_BASE_URL": fake.base_url,
            "EMBEDDING_MODEL": "fake-embed", "USER_COOLDOWN_S": "0", **extra}


async def start(args: list[str], env: dict[str, str], cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, cwd=cwd, env=child_env(env),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def wait_for_model_call(fake: FakeOpenAI, proc: asyncio.subprocess.Process) -> None:
    """Until the bot's turn has reached the model (the turn is running)."""
    for _ in range(600):
        if fake.requests:
            return
        if proc.returncode is not None:
            _, err = await proc.communicate()
            raise AssertionError(f"the bot exited early ({proc.returncode}): {err.decode()[-2000:]}")
        await asyncio.sleep(0.1)
    raise AssertionError("the turn never reached the model")


async def wait_for_log(proc: asyncio.subprocess.Process, needle: str) -> list[str]:
    """Read the child's stderr until a line holds ``needle``; the lines read so far."""
    assert proc.stderr is not None
    lines: list[str] = []
    while True:
        raw = await asyncio.wait_for(proc.stderr.readline(), EXIT_WAIT_S)
        if not raw:
            raise AssertionError(f"stderr ended before {needle!r}: {''.join(lines)[-2000:]}")
        lines.append(raw.decode())
        if needle in lines[-1]:
            return lines


async def finish(proc: asyncio.subprocess.Process) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(proc.communicate(), EXIT_WAIT_S)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def stderr_of_a_served_run(dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path) -> str:
    """Start `python -m bot run` against the fakes, wait until it is connected, stop it with
    SIGTERM; its stderr (the exit code must be 0). No bot outlives a failed wait."""
    env = bot_env(fake, tmp_path / "data", DISCORD_TOKEN=dc.token, DISCORD_API_BASE_URL=dc.api_base)
    proc = await start(["run"], env, tmp_path)
    return await sigterm_after(proc, dc.wait_until_connected(timeout=60))


async def sigterm_after(proc: asyncio.subprocess.Process, ready: Awaitable[object]) -> str:
    """Await ``ready``, then stop ``proc`` with SIGTERM; its stderr (the exit code must be 0).
    No bot outlives a failed wait."""
    try:
        await ready
        proc.send_signal(signal.SIGTERM)
        code, _, err = await finish(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert code == 0, err
    return err


def stored(data: Path, channel: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(role, content) of the channel's buffer, (outcome, answer) of its traces; integrity ok."""
    conn = sqlite3.connect(data / "bot.sqlite3")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = conn.execute("SELECT role, content FROM buffer_messages WHERE channel_id = ? ORDER BY id",
                            (channel,)).fetchall()
        traces = conn.execute("SELECT outcome, answer FROM traces WHERE channel_id = ?", (channel,)).fetchall()
    finally:
        conn.close()
    return rows, traces


async def sigterm_mid_turn(dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path, question: str,
                           shutdown_timeout_s: str) -> tuple[asyncio.subprocess.Process, str]:
    """`python -m bot run` in a guild channel; alice mentions it with ``question`` and SIGTERM is
    sent once her turn has reached the model. Returns the process and the channel."""
    guild = dc.add_guild("Guild")
    channel = dc.add_channel(guild, "general")
    alice = dc.add_member(guild, name="alice")
    env = bot_env(fake, tmp_path / "data", DISCORD_TOKEN=dc.token, DISCORD_API_BASE_URL=dc.api_base,
                  SHUTDOWN_TIMEOUT_S=shutdown_timeout_s)
    proc = await start(["run"], env, tmp_path)
    await dc.wait_until_connected(timeout=60)
    await dc.user_says(channel, alice, question, mention_bot=True)
    await wait_for_model_call(fake, proc)
    proc.send_signal(signal.SIGTERM)
    return proc, channel


async def sigint_mid_console_turn(fake: FakeOpenAI, tmp_path: Path, question: str,
                                  shutdown_timeout_s: str) -> asyncio.subprocess.Process:
    """`python -m bot chat` asked ``question``; SIGINT once the turn has reached the model.
    Stdin stays open: the chat waits for more."""
    proc = await start(["chat"], bot_env(fake, tmp_path / "data", SHUTDOWN_TIMEOUT_S=shutdown_timeout_s),
                       tmp_path)
    assert proc.stdin is not None
    proc.stdin.write(question.encode() + b"\n")
    await proc.stdin.drain()
    await wait_for_model_call(fake, proc)
    proc.send_signal(signal.SIGINT)
    return proc


async def test_sigterm_mid_turn_lets_the_turn_finish_stores_it_whole_and_exits_0(
        dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.delay(2.0).reply("Final Answer: the slow answer, delivered")
    proc, channel = await sigterm_mid_turn(dc, fake, tmp_path, "a slow question", "30")
    code, _, err = await finish(proc)
    assert code == 0, err
    assert [m.content for m in dc.bot_messages(channel)] == ["the slow answer, delivered"]
    rows, traces = stored(tmp_path / "data", channel)
    assert rows == [("user", "a slow question"), ("assistant", "the slow answer, delivered")]
    assert traces == [("answered", "the slow answer, delivered")]
    assert "Traceback" not in err


async def test_a_question_arriving_during_the_drain_gets_the_restarting_sentence(
        dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.delay(3.0).reply("Final Answer: the running turn's answer")
    proc, channel = await sigterm_mid_turn(dc, fake, tmp_path, "the first question", "30")
    bob = dc.add_member(dc.guild_of(channel) or "", name="bob")
    await wait_for_log(proc, "no new turns")
    await dc.user_says(channel, bob, "a question during the drain", mention_bot=True)
    code, _, err = await finish(proc)
    assert code == 0, err
    replies = sorted(m.content for m in dc.bot_messages(channel))
    assert replies == sorted([sentence_for("shutting_down"), "the running turn's answer"])
    assert len(fake.requests) == 1
    rows, _ = stored(tmp_path / "data", channel)
    assert rows == [("user", "the first question"), ("assistant", "the running turn's answer")]


async def test_sigterm_with_a_turn_past_the_timeout_says_restarting_and_stores_nothing(
        dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.delay(60.0).reply("Final Answer: never seen")
    proc, channel = await sigterm_mid_turn(dc, fake, tmp_path, "a very slow question", "1")
    code, _, err = await finish(proc)
    assert code == 0, err
    assert [m.content for m in dc.bot_messages(channel)] == [sentence_for("shutting_down")]
    assert stored(tmp_path / "data", channel) == ([], [])
    assert "Traceback" not in err


async def test_sigint_mid_turn_in_the_console_prints_the_answer_and_exits_0(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.delay(2.0).reply("Final Answer: console answer after the signal")
    proc = await sigint_mid_console_turn(fake, tmp_path, "a slow console question", "30")
    code, out, err = await finish(proc)
    assert code == 0, err
    assert "console answer after the signal" in out
    assert "Traceback" not in err
    rows, traces = stored(tmp_path / "data", "console")
    assert rows == [("user", "a slow console question"), ("assistant", "console answer after the signal")]
    assert traces == [("answered", "console answer after the signal")]


async def test_sigint_at_the_console_prompt_with_a_turn_past_the_timeout_says_restarting(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.delay(60.0).reply("Final Answer: never seen")
    proc = await sigint_mid_console_turn(fake, tmp_path, "a very slow console question", "1")
    code, out, err = await finish(proc)
    assert code == 0, err
    assert sentence_for("shutting_down") in " ".join(out.split())
    assert stored(tmp_path / "data", "console") == ([], [])


async def test_a_second_stop_request_abandons_the_running_turn_without_waiting_out_the_timeout(
        runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.delay(60.0).reply("Final Answer: never seen")
    stop = StopSignal()
    results = []

    async def serve() -> None:  # a front end: answers one turn, then would go on serving
        results.append(await runtime.pipeline.handle(ask("a very slow question")))
        await asyncio.Event().wait()

    served = asyncio.create_task(serve_until_stopped(serve(), runtime.pipeline.tracker, stop, timeout_s=3600))
    while not fake.requests:
        await asyncio.sleep(0.01)
    stop.request("SIGTERM")
    stop.request("SIGTERM")
    # without the second request the turn would run on until the model call times out (10 s,
    # error "timeout"); wait_for only guards against a hang
    assert await asyncio.wait_for(served, EXIT_WAIT_S) is None
    assert [r.error_kind for r in results] == ["shutting_down"]
    assert await runtime.buffer.recent("300000000000000001") == []
