"""`python -m bot chat` as a subprocess with piped stdin, against FakeOpenAI, in a tmp DATA_DIR."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.bot.conftest import system_text
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts processes or loads the model: handed out first (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]


def child_env(env: dict[str, str]) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items()
            if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")}
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**keep, **env, "COLUMNS": "200", "PYTHONPATH": pythonpath, "HF_HUB_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False"}


async def chat(env: dict[str, str], cwd: Path, stdin: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", cwd=cwd, env=child_env(env),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 120)
    return proc.returncode, out.decode(), err.decode()


async def test_a_question_shows_its_tool_step_and_trace_and_a_restart_remembers(
        fake: FakeOpenAI, env: dict[str, str], tmp_path: Path) -> None:
    fake.reply('Thought: they want me to keep this.\nAction: remember\n'
               'Action Input: {"fact": "Their cat is called Miso"}')
    fake.reply("Final Answer: I will remember that your cat is Miso.")
    code, out, err = await chat(env, tmp_path, "Remember that my cat is called Miso.\n/trace\n")
    assert code == 0, err
    assert "thought: they want me to keep this." in out
    assert "tool: remember" in out and '"fact": "Their cat is called Miso"' in out
    assert "observation: Will remember: Their cat is called Miso" in out
    assert "I will remember that your cat is Miso." in out
    trace_part = out.split("Trace of:", 1)[1]
    assert "tool: remember" in trace_part and "answered after 2 step(s)" in trace_part
    assert "Traceback" not in err

    fake.reply("Final Answer: Your cat is called Miso.")
    export = tmp_path / "export.json"
    code, out, err = await chat(
        env, tmp_path,
        f"What is my cat called?\n/memory\n/memory export {export}\n/memory forget\ny\n/memory\n/quit\n")
    assert code == 0, err
    assert "Miso" in system_text(fake.requests[-1])  # recalled from memory after the restart
    assert "Your cat is called Miso." in out
    assert "[fact] Their cat is called Miso" in out
    assert "3 remembered (5 item(s)):" in out  # 2 turns of 2 items, 1 fact: one entry per exchange
    assert "[exchange] you: What is my cat called? / me: Your cat is called Miso." in out
    items = json.loads(export.read_text())
    assert {i["metadata"]["kind"] for i in items} == {"exchange", "fact", "reply"}
    assert "Done: I forgot 5 memory item(s)" in out
    assert "I don't remember anything about you yet." in out
    assert out.rstrip().endswith("bye")


async def test_reset_and_unknown_commands_and_empty_lines(fake: FakeOpenAI, env: dict[str, str],
                                                          tmp_path: Path) -> None:
    fake.reply("Final Answer: hello there")
    code, out, err = await chat(env, tmp_path, "hi\n\n   \n/reset\n/frobnicate\n/help\n/trace\n")
    assert code == 0, err
    assert "hello there" in out
    assert "Cleared 2 message(s)" in out
    assert "Unknown command /frobnicate" in out
    assert "/memory forget" in out  # the help text
    assert len(fake.requests) == 1  # empty lines ask nothing


async def test_a_failing_model_prints_one_sentence_and_the_chat_goes_on(
        fake: FakeOpenAI, env: dict[str, str], tmp_path: Path) -> None:
    fake.error(500)
    fake.reply("Final Answer: back again")
    code, out, err = await chat(env, tmp_path, "first\nsecond\n")
    assert code == 0, err
    assert "The language model had an internal error." in out
    assert "back again" in out
    assert "Traceback" not in err


async def test_ctrl_c_at_the_prompt_exits_cleanly(fake: FakeOpenAI, env: dict[str, str], tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", cwd=tmp_path, env=child_env(env),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    seen = b""
    while b"you> " not in seen:
        chunk = await asyncio.wait_for(proc.stdout.read(100), 120)
        assert chunk, "the chat ended before showing its prompt"
        seen += chunk
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    assert "Traceback" not in err.decode()


async def test_piped_questions_are_echoed_after_the_prompt_and_the_answer_starts_its_own_line(
        fake: FakeOpenAI, env: dict[str, str], tmp_path: Path) -> None:
    fake.reply("Final Answer: hello there")
    code, out, err = await chat(env, tmp_path, "hi\n")
    assert code == 0, err
    lines = out.splitlines()
    asked = lines.index("you> hi")
    assert any("hello there" in ln for ln in lines[asked + 1:])
    assert "you> bye" not in out and lines[-2:] == ["you> ", "bye"]  # end of input: the prompt's line ended


async def test_the_banner_names_the_data_folder_by_its_full_path(
        fake: FakeOpenAI, env: dict[str, str], tmp_path: Path) -> None:
    code, out, err = await chat({**env, "DATA_DIR": "data"}, tmp_path, "/quit\n")
    assert code == 0, err
    assert f"(data in {(tmp_path / 'data').resolve()})" in out.replace("\n", "")


async def test_a_line_says_the_chat_is_starting_before_the_slow_imports_and_stores(
        fake: FakeOpenAI, env: dict[str, str], tmp_path: Path) -> None:
    code, out, err = await chat(env, tmp_path, "/quit\n")
    assert code == 0, err
    assert out.splitlines()[0] == "Starting the console chat..."
    assert out.index("Starting the console chat...") < out.index("Console chat with")
