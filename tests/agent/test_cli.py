"""`python -m agent` as a subprocess against the loopback FakeOpenAI."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from pathlib import Path

import pytest

from rich.console import Console

from agent.__main__ import _Printer, main
from agent.events import AnswerDelta, FinalAnswer, ModelCalled, RunEnded, ToolFinished, ToolStarted, Usage

pytestmark = pytest.mark.slow  # starts `python -m agent` processes: handed out first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
AGENT_VARS = (
    "OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL", "LLM_PROTOCOL", "LLM_TEMPERATURE",
    "LLM_TIMEOUT_S", "LLM_MAX_RETRIES", "AGENT_MAX_STEPS", "TOOL_TIMEOUT_S", "SEARXNG_URL",
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in AGENT_VARS}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


async def run_cli(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent", *args,
        env=env, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    return proc.returncode, out.decode(), err.decode()


def fake_env(fake, **extra: str) -> dict[str, str]:
    return clean_env(
        OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-cli-secret", LLM_MODEL="fake-model",
        LLM_MAX_RETRIES="0", **extra,
    )


async def test_multi_step_answer_is_printed_step_by_step(fake_openai, tmp_path):
    fake_openai.reply("Thought: I should calculate.\nAction: calculator\nAction Input: 6 * 7")
    fake_openai.reply("Thought: I have it.\nFinal Answer: 6 times 7 is 42.")

    code, out, err = await run_cli("What", "is", "6 times 7?", env=fake_env(fake_openai), cwd=tmp_path)

    assert code == 0, err
    lines = out.splitlines()
    assert "[step 1]" in out and "[step 2]" in out
    assert "    Thought: I should calculate." in lines
    assert "    Action: calculator" in lines
    assert '    Input: {"expression": "6 * 7"}' in lines  # the arguments as the tool took them
    assert any(line.startswith("    Observation: 42  (") and line.endswith(" ms)") for line in lines)
    assert lines[-4] == "Answer: 6 times 7 is 42."  # streamed, then its step's summary
    assert lines[-3].startswith("[step 2] model ") and lines[-2] == "    Thought: I have it."
    assert out.index("Observation: 42") < out.index("Answer:")
    assert fake_openai.requests[0]["messages"][-1] == {"role": "user", "content": "What is 6 times 7?"}
    assert "### calculator" in fake_openai.requests[0]["messages"][0]["content"]


async def test_dotenv_in_the_working_directory_is_read(fake_openai, tmp_path):
    (tmp_path / ".env").write_text(
        f"OPENAI_BASE_URL={fake_openai.base_url}\nLLM_MODEL=from-dotenv\nOPENAI_API_KEY=sk-x\n"
    )
    fake_openai.reply("Final Answer: hello")

    code, out, err = await run_cli("hi", env=clean_env(), cwd=tmp_path)

    assert code == 0, err
    assert "Answer: hello" in out
    assert fake_openai.requests[0]["model"] == "from-dotenv"


async def test_a_one_step_answer_says_one_step_not_one_steps(fake_openai, tmp_path):
    fake_openai.reply("Final Answer: 4")

    code, out, err = await run_cli("2+2?", env=fake_env(fake_openai), cwd=tmp_path)

    assert code == 0, err
    assert "1 step, " in out and "1 steps" not in out


async def test_json_mode_prints_one_event_per_line(fake_openai, tmp_path):
    fake_openai.reply("Final Answer: 4")

    code, out, _ = await run_cli("--json", "2+2?", env=fake_env(fake_openai), cwd=tmp_path)

    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [e["type"] for e in events] == ["answer_delta", "model_called", "final_answer", "run_ended"]
    assert events[0] == {"type": "answer_delta", "step": 1, "text": "4"}
    assert events[-1]["answer"] == "4"


async def test_native_protocol_flag(fake_openai, tmp_path):
    fake_openai.reply(tool_calls=[{"name": "calculator", "arguments": {"input": "2 + 2"}}]).reply("It is 4.")

    code, out, err = await run_cli("--protocol", "native", "2+2?", env=fake_env(fake_openai), cwd=tmp_path)

    assert code == 0, err
    assert "Answer: It is 4." in out
    assert fake_openai.requests[0]["tools"]


async def test_step_limit_exits_3_with_an_honest_message(fake_openai, tmp_path):
    fake_openai.default_content = "Action: calculator\nAction Input: 1 + 1"

    code, out, _ = await run_cli("--max-steps", "2", "loop", env=fake_env(fake_openai), cwd=tmp_path)

    assert code == 3
    assert "No answer (step_limit): I could not finish within 2 steps" in out


def test_unconfigured_endpoint_says_what_to_set_in_one_line(monkeypatch, tmp_path, capsys):
    for name in AGENT_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)

    code = main(["hello"])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "LLM_MODEL" in err and "OPENAI_API_KEY" in err


def test_invalid_setting_is_one_line_naming_the_variable(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setenv("LLM_TEMPERATURE", "hot")

    code = main(["hello"])

    assert code == 2
    assert capsys.readouterr().err.strip() == "config error: LLM_TEMPERATURE is not a number: 'hot'"


async def test_unconfigured_endpoint_exits_2_without_traceback_as_a_process(tmp_path):
    code, out, err = await run_cli("hello", env=clean_env(), cwd=tmp_path)

    assert code == 2
    assert out == ""
    assert err.startswith("no model endpoint configured: set LLM_MODEL")
    assert "Traceback" not in err


async def test_model_failure_is_one_line_exit_1_without_the_key(fake_openai, tmp_path):
    fake_openai.error(401, body={"error": {"message": "Incorrect API key provided: sk-cli-secret"}})

    code, out, err = await run_cli("hello", env=fake_env(fake_openai), cwd=tmp_path)

    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("model error (auth):")
    assert "sk-cli-secret" not in err + out
    assert "Traceback" not in err


@pytest.mark.parametrize("question", [" ", ""])
def test_empty_question_is_refused(question, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLM_MODEL", "m")

    code = main([question])

    assert code == 2
    assert "question is empty" in capsys.readouterr().err


async def test_the_answer_is_printed_as_it_streams(fake_openai, tmp_path):
    fake_openai.reply(chunks=["Thought: easy.\nFinal Answer: ", "Four, ", "as two and two make."], pause_after=3)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent", "2+2?", env=fake_env(fake_openai), cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    seen = b""
    try:
        while b"Four," not in seen:  # the model has not finished its reply yet
            seen += await asyncio.wait_for(proc.stdout.read(64), timeout=30)
        assert fake_openai.paused.is_set() and seen.startswith(b"Answer: Four,")
    finally:
        fake_openai.resume()
    rest, _ = await asyncio.wait_for(proc.communicate(), timeout=30)

    lines = (seen + rest).decode().splitlines()
    assert proc.returncode == 0
    assert lines[0] == "Answer: Four, as two and two make."
    assert lines[1].startswith("[step 1] model ") and lines[2] == "    Thought: easy."
    assert sum(line.startswith("Answer:") for line in lines) == 1


async def test_no_stream_prints_the_answer_once_the_reply_is_whole(fake_openai, tmp_path):
    fake_openai.reply("Thought: easy.\nFinal Answer: Four.")

    code, out, _ = await run_cli("--no-stream", "2+2?", env=fake_env(fake_openai), cwd=tmp_path)

    lines = out.splitlines()
    assert code == 0 and "stream" not in fake_openai.requests[0]
    assert lines[0].startswith("[step 1] model ") and lines[2] == "Answer: Four."


def printed(*events) -> list[str]:
    buffer = io.StringIO()
    printer = _Printer(Console(file=buffer, highlight=False, soft_wrap=True, width=120), as_json=False)
    for event in events:
        printer.show(event)
    return buffer.getvalue().splitlines()


def test_a_streamed_answer_that_parses_otherwise_is_printed_again_as_parsed():
    lines = printed(
        AnswerDelta(1, "4"), AnswerDelta(1, "\n```"), ModelCalled(1, 5.0, Usage(3, 2), "..."),
        FinalAnswer(1, "", "4"), RunEnded("answered", "4", 1, Usage(3, 2), 6.0),
    )

    assert lines[:2] == ["Answer: 4", "```"] and lines[-2] == "Answer: 4"


def test_a_preview_of_a_step_that_called_a_tool_is_ended_before_the_tool_lines():
    lines = printed(
        AnswerDelta(1, "Let me check."), ModelCalled(1, 5.0, Usage(3, 2), "..."),
        ToolStarted(1, "", "clock", {}), ToolFinished(1, "", "clock", {}, "noon", True, 0.1),
        AnswerDelta(2, "It is noon."), ModelCalled(2, 5.0, Usage(3, 2), "..."),
        FinalAnswer(2, "", "It is noon."), RunEnded("answered", "It is noon.", 2, Usage(6, 4), 9.0),
    )

    assert lines[0] == "Answer: Let me check." and lines[1].startswith("[step 1]")
    assert "Answer: It is noon." in lines and sum(line.startswith("Answer:") for line in lines) == 2
