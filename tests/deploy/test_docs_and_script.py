"""The operator's documents and the install script's hygiene: every setting the bot reads is in
deploy/bot.env.example and in deploy/README.md's table with its default, the example is a valid
systemd EnvironmentFile with empty secrets, and install.sh is shellcheck-clean."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from bot.settings.config import load_settings
from tests.deploy.conftest import DEPLOY_README, ENV_EXAMPLE, INSTALL_SH
from tests.needs import require_tool

# (variable, default as documented); None: no default (required, unset or empty).
SETTINGS = [
    ("DISCORD_TOKEN", None), ("OPENAI_API_KEY", None), ("LLM_MODEL", None),
    ("OPENAI_BASE_URL", "https://api.openai.com/v1"), ("LLM_PROTOCOL", "text"),
    ("LLM_TEMPERATURE", "0.2"), ("LLM_TIMEOUT_S", "60"), ("LLM_MAX_RETRIES", "3"),
    ("AGENT_MAX_STEPS", "8"), ("TOOL_TIMEOUT_S", "15"), ("TURN_TIMEOUT_S", "180"),
    ("SHUTDOWN_TIMEOUT_S", "60"),
    ("SEARXNG_URL", None),
    ("MCP_CONFIG", None),
    ("OPEN_METEO_GEOCODING_URL", "https://geocoding-api.open-meteo.com/v1/search"),
    ("OPEN_METEO_FORECAST_URL", "https://api.open-meteo.com/v1/forecast"),
    ("DATA_DIR", "./data"), ("CHROMA_HOST", None), ("CHROMA_PORT", "8000"), ("CHROMA_AUTH_TOKEN", None),
    ("CHROMA_PROCESS", "true"), ("MEMORY_CACHE_MB", "512"), ("MEMORY_SCOPE", "place"), ("EMBEDDING_BACKEND", "local"), ("EMBEDDING_MODEL", None),
    ("EMBEDDING_BASE_URL", None), ("EMBEDDING_API_KEY", None), ("BUFFER_RETENTION_DAYS", "90"), ("TRACE_RETENTION_DAYS", "30"),
    ("DEV_GUILD_ID", None), ("MAX_CONCURRENT_TURNS", "4"), ("MAX_CONTEXT_TOKENS", "6000"),
    ("BUFFER_WINDOW", "40"), ("USER_COOLDOWN_S", "3"), ("BUFFER_ALL_MESSAGES", "false"),
    ("ATTACHMENT_MAX_BYTES", "100000"), ("ALLOWED_GUILD_IDS", None), ("ALLOWED_CHANNEL_IDS", None),
    ("ALLOWED_ROLE_IDS", None), ("BLOCKED_USER_IDS", None), ("ALLOW_DMS", "true"),
    ("LOG_LEVEL", "INFO"), ("SHARD_COUNT", None), ("SHARD_IDS", None),
    ("DISCORD_API_BASE_URL", None), ("MESSAGE_CONTENT_INTENT", "false"), ("ADMIN_USER_IDS", None),
    ("LLM_MODELS", None),
    ("LLM_VISION", "false"), ("IMAGE_MAX_BYTES", "5000000"), ("IMAGE_MAX_COUNT", "4"),
    ("USER_DAILY_TOKENS", "0"), ("GUILD_DAILY_TOKENS", "0"),
    ("DEFAULT_TIMEZONE", "UTC"), ("REMINDERS_MAX_PENDING", "25"), ("REMINDERS_MIN_REPEAT_S", "3600"),
    ("DOCS_MAX_FILE_BYTES", "5000000"), ("DOCS_MAX_CHARS", "500000"), ("DOCS_MAX_PER_SERVER", "50"),
    ("DOCS_MAX_PASSAGES", "5000"), ("TLDR_MAX_MESSAGES", "300"), ("SUMMARY_EVERY", "20"),
]
SECRETS = ["DISCORD_TOKEN", "OPENAI_API_KEY", "EMBEDDING_API_KEY"]


class LookupRecorder(Mapping[str, str]):
    """An environment that remembers every name looked up in it, however the code asks."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.looked_up: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.looked_up.add(name)
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def example_lines() -> dict[str, tuple[bool, str]]:
    """NAME -> (commented out?, value) for every `NAME=value` or `# NAME=value` line."""
    found: dict[str, tuple[bool, str]] = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"(# )?([A-Z][A-Z0-9_]*)=(.*)", line)
        if match:
            assert match.group(2) not in found, f"{match.group(2)} appears twice"
            found[match.group(2)] = (bool(match.group(1)), match.group(3))
    return found


def readme_table() -> dict[str, str]:
    """Variable -> its Default cell in deploy/README.md's settings table."""
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \| ([^|]+) \|", DEPLOY_README.read_text(encoding="utf-8"), re.M)
    return dict(rows)


@pytest.mark.parametrize(("name", "default"), SETTINGS)
def test_env_example_lists_the_setting_with_its_default(name: str, default: str | None) -> None:
    lines = example_lines()
    assert name in lines
    if default is not None:
        assert lines[name] == (True, default)


@pytest.mark.parametrize(("name", "default"), SETTINGS)
def test_readme_table_lists_the_setting_with_its_default(name: str, default: str | None) -> None:
    table = readme_table()
    assert name in table
    if default is not None:
        assert f"`{default}`" in table[name]


def test_every_variable_the_settings_loader_reads_is_documented(tmp_path: Path) -> None:
    env = LookupRecorder({"LLM_MODEL": "m", "DATA_DIR": str(tmp_path)})
    load_settings(env)  # the bot's loader reads the agent's and the memory's settings too
    assert env.looked_up == {name for name, _ in SETTINGS}
    assert env.looked_up - set(example_lines()) == set()
    assert env.looked_up - set(readme_table()) == set()


@pytest.mark.parametrize(("name", "default"), [(n, d) for n, d in SETTINGS if d is not None])
def test_the_documented_default_is_the_one_the_code_uses(name: str, default: str) -> None:
    assert load_settings({"LLM_MODEL": "m", name: default}) == load_settings({"LLM_MODEL": "m"})


def test_env_example_is_a_systemd_environment_file() -> None:
    for number, line in enumerate(ENV_EXAMPLE.read_text(encoding="utf-8").splitlines(), start=1):
        assert line == "" or line.startswith("#") or re.fullmatch(r"[A-Z][A-Z0-9_]*=\S*", line), (
            f"bot.env.example:{number}: {line!r}"
        )


def test_env_example_secrets_are_empty() -> None:
    lines = example_lines()
    assert {name: lines[name][1] for name in SECRETS} == {name: "" for name in SECRETS}


def test_env_example_leaves_data_dir_to_the_unit() -> None:
    assert example_lines()["DATA_DIR"][0] is True


@pytest.mark.needs("shellcheck")
def test_install_script_is_shellcheck_clean() -> None:
    tool = require_tool("shellcheck")
    done = subprocess.run([tool, "--shell=bash", str(INSTALL_SH)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")


def test_install_script_stops_at_the_first_error() -> None:
    assert "set -euo pipefail" in INSTALL_SH.read_text(encoding="utf-8").splitlines()
