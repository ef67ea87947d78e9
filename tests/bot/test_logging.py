"""Logging: plain lines on stderr, LOG_LEVEL, discord.py at WARNING (DEBUG lets it through), one
INFO line per turn with ids, counts and times, and message contents only at DEBUG."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.process.logging_setup import configure_logging
from tests.bot.test_console import chat
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts the bot process: handed out first (tests/conftest.py)

QUESTION = "my parrot Zorblax likes mango"


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in ("discord", "httpx", "bot")}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, value in levels.items():
        logging.getLogger(name).setLevel(value)


def test_records_are_plain_lines_with_time_level_and_logger() -> None:
    stream = io.StringIO()
    configure_logging("INFO", stream)
    logging.getLogger("bot.example").info("hello %s", "there")
    assert re.fullmatch(r"\d\d:\d\d:\d\d INFO bot\.example: hello there\n", stream.getvalue())


def test_discord_logs_only_warnings_at_info() -> None:
    stream = io.StringIO()
    configure_logging("INFO", stream)
    logging.getLogger("discord.gateway").info("connection chatter")
    logging.getLogger("discord.gateway").warning("gateway trouble")
    assert "connection chatter" not in stream.getvalue() and "gateway trouble" in stream.getvalue()


def test_log_level_debug_lets_discord_debug_through_but_not_http_libraries() -> None:
    stream = io.StringIO()
    configure_logging("DEBUG", stream)
    logging.getLogger("discord.gateway").debug("a gateway frame")
    logging.getLogger("httpx").info("HTTP request line")
    assert "a gateway frame" in stream.getvalue() and "HTTP request line" not in stream.getvalue()


def test_log_level_warning_hides_info() -> None:
    stream = io.StringIO()
    configure_logging("WARNING", stream)
    logging.getLogger("bot.turn.pipeline").info("a turn line")
    assert stream.getvalue() == ""


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="log level"):
        configure_logging("LOUD", io.StringIO())


def child(fake: FakeOpenAI, tmp_path: Path, level: str) -> dict[str, str]:
    return {"LLM_MODEL": "fake-model", "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k",
            "DATA_DIR": str(tmp_path / "data"), "EMBEDDING_BACKEND": "openai",
            "EMBEDDING_BASE_URL": fake.base_url, "EMBEDDING_MODEL": "fake-embed", "LOG_LEVEL": level}


async def test_at_info_a_turn_is_one_line_with_ids_counts_and_times_and_no_message_text(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.reply("Final Answer: noted, a mango-loving parrot", usage={"prompt_tokens": 40, "completion_tokens": 6})
    code, _, err = await chat(child(fake, tmp_path, "INFO"), tmp_path, QUESTION + "\n")
    assert code == 0
    turns = [ln for ln in err.splitlines() if " bot.turn.pipeline: turn " in ln]
    assert len(turns) == 1
    assert re.search(r"turn channel=console user=console steps=1 tokens=46 duration_ms=\d+ .*outcome=answered",
                     turns[0]), turns[0]
    assert "Zorblax" not in err and "mango" not in err


async def test_at_debug_the_message_text_is_logged(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.reply("Final Answer: noted, a mango-loving parrot")
    code, _, err = await chat(child(fake, tmp_path, "DEBUG"), tmp_path, QUESTION + "\n")
    assert code == 0
    assert QUESTION in err and "mango-loving parrot" in err
