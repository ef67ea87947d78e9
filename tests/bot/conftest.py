"""Shared fixtures of the bot tests: a loopback FakeOpenAI (chat + embeddings), an env mapping
pointing everything at it and at a tmp DATA_DIR, and a real Runtime (real agent, real SQLite
file, real embedded Chroma) built from it; the Discord tests' `world` and `run_bot` come from
discord_fixtures; `dc`, a fake Discord alone for a bot run as its own process; `buffered`, a channel
buffer's message."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from bot.settings.config import load_settings
from bot.turn.requests import TurnRequest
from bot.process.runtime import Runtime
from memory.stores.buffer import BufferedMessage
from tests.bot.discord_fixtures import run_bot, world  # noqa: F401  (fixtures of the Discord tests)
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI

GUILD = "100000000000000001"
OTHER_GUILD = "100000000000000002"
ALICE = "200000000000000001"
BOB = "200000000000000002"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def dc() -> AsyncIterator[FakeDiscord]:
    """A loopback fake Discord (REST and gateway) alone, for a bot run as its own process."""
    async with FakeDiscord() as server:
        yield server


@pytest.fixture
def env(fake: FakeOpenAI, tmp_path: Path) -> dict[str, str]:
    """Settings for a runtime against the fake: embeddings from its /v1/embeddings too."""
    return {
        "LLM_MODEL": "fake-model",
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "test-key",
        "LLM_MAX_RETRIES": "0",
        "LLM_TIMEOUT_S": "10",
        "DATA_DIR": str(tmp_path / "data"),
        "EMBEDDING_BACKEND": "openai",
        "EMBEDDING_BASE_URL": fake.base_url,
        "EMBEDDING_MODEL": "fake-embed",
        "USER_COOLDOWN_S": "0",
        "CHROMA_PROCESS": "false",  # Chroma in this process's threads: no worker to start per test
    }


@pytest.fixture
def make_runtime(env: dict[str, str]) -> Callable[..., Runtime]:
    def make(**overrides: str) -> Runtime:
        return Runtime(load_settings({**env, **overrides}))
    return make


@pytest.fixture
async def runtime(make_runtime: Callable[..., Runtime]) -> AsyncIterator[Runtime]:
    async with make_runtime() as rt:
        yield rt


def buffered(author: str, role: str, text: str, at: datetime, *, name: str = "Alice",
             channel: str = "300000000000000001", guild: str | None = GUILD) -> BufferedMessage:
    """A message of a channel's buffer: ``author`` (the bot: "assistant") said ``text`` at ``at``."""
    return BufferedMessage(channel_id=channel, guild_id=guild, author_id=author, author_name=name,
                           role=role, content=text, created_at=at)  # type: ignore[arg-type]


def ask(text: str, *, user: str = ALICE, name: str = "Alice", guild: str | None = GUILD,
        channel: str = "300000000000000001", **extra: Any) -> TurnRequest:
    return TurnRequest(user_id=user, display_name=name, guild_id=guild, channel_id=channel,
                       text=text, **extra)


def last_user_text(request: dict[str, Any]) -> str:
    """The content of the last user message of a chat request (the question, or an
    observation later in a run)."""
    users = [m for m in request["messages"] if m["role"] == "user"]
    return users[-1]["content"] if users else ""


def system_text(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"]


def request_text(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)
