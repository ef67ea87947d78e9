"""bot.process.credentials without a process: systemd credentials read from a folder, which wins over
the environment, which variables count as secrets, and dropping them from a mapping. The whole
start path (non-dumpable, os.environ cleared) is tried in tests/bot/test_secrets_e2e.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.settings.config import load_settings
from bot.process.credentials import (
    ALWAYS_SECRET,
    CREDENTIAL_MAX_BYTES,
    drop_secrets,
    read_credentials,
    secret_names,
    with_credentials,
)
from bot.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_each_file_is_the_variable_it_is_named_after_without_its_line_break(tmp_path: Path) -> None:
    (tmp_path / "DISCORD_TOKEN").write_text("tok-1\n")
    (tmp_path / "OPENAI_API_KEY").write_text("sk-2\r\n")
    (tmp_path / "EMPTY").write_text("")
    assert read_credentials(str(tmp_path)) == {"DISCORD_TOKEN": "tok-1", "OPENAI_API_KEY": "sk-2", "EMPTY": ""}


def test_no_credentials_directory_means_no_credentials() -> None:
    assert read_credentials(None) == {} and read_credentials("") == {}


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("discord-token", b"x", "credential 'discord-token' is not a variable name"),
    ("BIG", b"x" * (CREDENTIAL_MAX_BYTES + 1), "credential BIG is over 64 KiB"),
    ("BINARY", b"\xff\xfe", "credential BINARY is not UTF-8 text"),
])
def test_a_bad_credential_stops_start_up_with_one_line_naming_it(
        tmp_path: Path, name: str, content: bytes, expected: str) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        read_credentials(str(tmp_path))
    assert str(caught.value).startswith(expected) and "\n" not in str(caught.value)


def test_a_missing_credentials_directory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="CREDENTIALS_DIRECTORY .* cannot be read"):
        read_credentials(str(tmp_path / "gone"))


def test_a_credential_wins_over_the_environment_and_is_reported() -> None:
    env, both = with_credentials({"DISCORD_TOKEN": "old", "LLM_MODEL": "m", "OPENAI_API_KEY": " "},
                                 {"DISCORD_TOKEN": "new", "OPENAI_API_KEY": "sk"})
    assert env == {"DISCORD_TOKEN": "new", "LLM_MODEL": "m", "OPENAI_API_KEY": "sk"}
    assert both == ["DISCORD_TOKEN"]  # a blank variable is unset, not a second value


def test_an_empty_credential_counts_as_unset_and_leaves_the_environment_s_value() -> None:
    env, both = with_credentials({"DISCORD_TOKEN": "from-env"}, {"DISCORD_TOKEN": "", "OPENAI_API_KEY": "\n"})
    assert env == {"DISCORD_TOKEN": "from-env"} and both == []


def test_secrets_are_the_fixed_ones_model_keys_mcp_header_and_env_variables_and_credentials(
        tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "gh": {"url": "https://mcp.example/${PATH_PART}", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
        "files": {"command": "${TOOL_BIN}/srv", "args": ["${HOME}"], "env": {"DB": "${DB_PASSWORD}"}}}}))
    env = {"LLM_MODEL": "m", "LLM_MODELS": json.dumps([{"name": "far", "base_url": "http://h/v1",
                                                        "api_key_env": "FAR_KEY"}]),
           "FAR_KEY": "k", "MCP_CONFIG": str(config), "GH_TOKEN": "g", "DB_PASSWORD": "d",
           "TOOL_BIN": "/usr/bin", "HOME": "/home/bot", "PATH_PART": "mcp"}
    names = secret_names(load_settings(env), {"SOMETHING_ELSE": "s"})
    assert names == {*ALWAYS_SECRET, "FAR_KEY", "GH_TOKEN", "DB_PASSWORD", "PATH_PART", "SOMETHING_ELSE"}
    assert not names & {"TOOL_BIN", "HOME", "LLM_MODEL"}  # a command's or argument's variables stay


def test_dropping_removes_only_the_secrets_present() -> None:
    environ = {"DISCORD_TOKEN": "t", "PATH": "/bin", "FAR_KEY": "k"}
    assert drop_secrets(environ, {"DISCORD_TOKEN", "FAR_KEY", "OPENAI_API_KEY"}) == ["DISCORD_TOKEN", "FAR_KEY"]
    assert environ == {"PATH": "/bin"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_sealing_makes_the_process_non_dumpable() -> None:
    """In a child process: the flag stays on the process that sets it."""
    code = ("import ctypes\nfrom bot.process.credentials import seal_process\n"
            "before = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)\n"  # PR_GET_DUMPABLE
            "print(before, seal_process(), ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["1", "True", "0"], done.stderr
