"""Which key each LLM_MODELS entry sends, read from the Authorization header the fake OpenAI
servers received: a key goes only to the host it was given for."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from agent.llm import LLMClient
from agent.loop import Agent
from agent.tools.registry import ToolRegistry
from bot.settings.config import load_settings
from bot.settings.place import PlaceSettings
from bot.turn.agent import TurnAgents
from tests.fakes.openai_server import FakeOpenAI

MAIN_KEY = "sk-main-Qw81"
OWN_KEY = "sk-own-Zp20"


@pytest.fixture
async def elsewhere() -> AsyncIterator[FakeOpenAI]:
    """A second model server, on another port: another origin than OPENAI_BASE_URL's."""
    async with FakeOpenAI() as other:
        yield other


async def _authorization(server: FakeOpenAI, main: FakeOpenAI, entry: dict[str, object],
                         **env: str) -> str | None:
    """Ask the model of ``entry`` once; the Authorization header the server it names received."""
    settings = load_settings({"LLM_MODEL": "fake-model", "OPENAI_BASE_URL": main.base_url,
                              "OPENAI_API_KEY": MAIN_KEY, "LLM_MAX_RETRIES": "0",
                              "LLM_MODELS": json.dumps([entry]), **env})
    base = Agent(LLMClient.from_settings(settings.agent), ToolRegistry())
    agents = TurnAgents(base, settings.models, settings.agent)
    try:
        llm = agents.for_turn(PlaceSettings(model=str(entry["name"]))).llm
        await llm.complete([{"role": "user", "content": "hi"}])
    finally:
        await agents.aclose()
        await base.llm.aclose()  # type: ignore[attr-defined]
    headers = {k.lower(): v for k, v in server.headers[-1].items()}
    return headers.get("authorization")


async def test_an_entry_served_elsewhere_without_api_key_env_is_sent_no_key(
        fake: FakeOpenAI, elsewhere: FakeOpenAI) -> None:
    sent = await _authorization(elsewhere, fake, {"name": "far", "base_url": elsewhere.base_url})
    assert sent is None
    assert not fake.headers  # nothing went to the main server either


async def test_an_entry_naming_api_key_env_is_sent_that_key(
        fake: FakeOpenAI, elsewhere: FakeOpenAI) -> None:
    sent = await _authorization(elsewhere, fake, {"name": "far", "base_url": elsewhere.base_url,
                                                        "api_key_env": "FAR_KEY"}, FAR_KEY=OWN_KEY)
    assert sent == f"Bearer {OWN_KEY}"


async def test_an_entry_at_openai_base_url_is_sent_openai_api_key(fake: FakeOpenAI) -> None:
    sent = await _authorization(fake, fake, {"name": "near"})
    assert sent == f"Bearer {MAIN_KEY}"
    same_origin = fake.base_url.rstrip("/").removesuffix("/v1") + "/v1/"
    assert await _authorization(fake, fake, {"name": "near", "base_url": same_origin}) == (
        f"Bearer {MAIN_KEY}")


async def test_a_model_without_any_key_sends_no_authorization_header(fake: FakeOpenAI) -> None:
    client = LLMClient(base_url=fake.base_url, api_key="", model="fake-model", max_retries=0)
    try:
        await client.complete([{"role": "user", "content": "hi"}])
    finally:
        await client.aclose()
    assert "authorization" not in {k.lower() for k in fake.headers[-1]}


def test_an_entry_whose_base_url_has_a_bad_port_stops_start_up() -> None:
    from bot.settings.config import ConfigError

    with pytest.raises(ConfigError, match="base_url is not a valid http"):
        load_settings({"LLM_MODEL": "m", "LLM_MODELS": '[{"name": "a", "base_url": "http://h:99999/v1"}]'})
