"""Shared fixtures for agent/ tests: the loopback FakeOpenAI, a client for it, a scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from agent.events import Usage
from agent.llm import Completion, LLMClient, ToolCall
from agent.tools.registry import ToolContext
from tests.fakes.openai_server import FakeOpenAI

CTX = ToolContext(user_id="42", channel_id="7", guild_id="1", display_name="Ada")


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
async def make_llm(fake_openai: FakeOpenAI) -> AsyncIterator[Callable[..., LLMClient]]:
    """LLMClient factory pointed at the fake; retries default to 0 so failures are quick."""
    clients: list[LLMClient] = []

    def make(**overrides: Any) -> LLMClient:
        options: dict[str, Any] = {
            "base_url": fake_openai.base_url,
            "api_key": "sk-test-secret-key",
            "model": "fake-model",
            "timeout_s": 5.0,
            "max_retries": 0,
        }
        options.update(overrides)
        client = LLMClient(**options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


class ScriptedLLM:
    """An in-process model implementing LLMClient.complete: replies turn by turn, records calls.

    Each scripted item is a str (content) or a Completion. When the script runs out, it keeps
    returning `fallback` (a str or Completion), so tests of "the model never answers" are easy.
    """

    def __init__(self, script: Sequence[str | Completion] = (), fallback: str | Completion = "") -> None:
        self.script = list(script)
        self.fallback = fallback
        self.calls: list[dict[str, Any]] = []

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        stop: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        self.calls.append({"messages": [dict(m) for m in messages], "stop": stop, "tools": tools})
        item = self.script.pop(0) if self.script else self.fallback
        if isinstance(item, Completion):
            return item
        return Completion(content=item, usage=Usage(10, 5))


def tool_call_reply(*calls: tuple[str, str], content: str = "") -> Completion:
    """A native-protocol Completion with the given (name, arguments JSON) tool calls."""
    return Completion(
        content=content,
        tool_calls=[ToolCall(id=f"call_{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)],
        usage=Usage(10, 5),
        finish_reason="tool_calls",
    )
