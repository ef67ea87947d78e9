"""`python -m bot`: command choice and one-line configuration errors (exit 2, no traceback)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bot.test_console import child_env

pytestmark = pytest.mark.slow  # starts processes or loads the model: handed out first (tests/conftest.py)


def run_bot(args: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=cwd, env=child_env(env),
                          input=stdin, capture_output=True, text=True, timeout=120)


def assert_config_error(proc: subprocess.CompletedProcess, needle: str) -> None:
    assert proc.returncode == 2
    assert proc.stderr.startswith("config error: ") and needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_without_a_model_it_says_what_to_set(tmp_path: Path) -> None:
    proc = run_bot([], {"DATA_DIR": str(tmp_path / "d")}, tmp_path)
    assert_config_error(proc, "LLM_MODEL")


def test_an_invalid_variable_is_named(tmp_path: Path) -> None:
    proc = run_bot(["chat"], {"LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                              "MAX_CONCURRENT_TURNS": "lots"}, tmp_path)
    assert_config_error(proc, "MAX_CONCURRENT_TURNS is not a whole number: 'lots'")


def test_run_without_a_discord_token_is_an_error_line(tmp_path: Path) -> None:
    proc = run_bot(["run"], {"LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, tmp_path)
    assert_config_error(proc, "DISCORD_TOKEN is not set")


def test_dotenv_in_the_current_folder_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LLM_MODEL=m\nOPENAI_BASE_URL=http://127.0.0.1:9/v1\nBUFFER_WINDOW=-3\n")
    proc = run_bot(["chat"], {}, tmp_path)
    assert_config_error(proc, "BUFFER_WINDOW must be")


def test_a_database_from_a_newer_version_stops_startup_with_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with sqlite3.connect(data / "bot.sqlite3") as conn:
        conn.execute("PRAGMA user_version = 999")
    proc = run_bot(["chat"], {"LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                              "DATA_DIR": str(data), "EMBEDDING_BACKEND": "openai",
                              "EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1"}, tmp_path, "/quit\n")
    assert_config_error(proc, "bot.sqlite3")


def test_a_data_dir_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    proc = run_bot(["chat"], {"LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                              "DATA_DIR": str(tmp_path / "file")}, tmp_path)
    assert_config_error(proc, "DATA_DIR")


def test_a_data_dir_that_cannot_be_created_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    proc = run_bot(["chat"], {"LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                              "DATA_DIR": str(tmp_path / "file" / "data")}, tmp_path)
    assert_config_error(proc, "cannot be created")


def test_help_lists_the_three_commands(tmp_path: Path) -> None:
    proc = run_bot(["--help"], {}, tmp_path)
    assert proc.returncode == 0
    assert "{run,chat,check}" in proc.stdout and "check:" in proc.stdout


def test_check_reports_an_invalid_variable_as_a_failed_line_not_a_config_error_exit(tmp_path: Path) -> None:
    proc = run_bot(["check"], {"LLM_MODEL": "m", "LOG_LEVEL": "LOUD", "DATA_DIR": str(tmp_path / "d")}, tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stdout.startswith("fail  configuration") and "LOG_LEVEL" in proc.stdout
