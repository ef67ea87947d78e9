"""The agent a turn runs: the runtime's agent, or one with the place's persona, model and
tools (bot.settings.place) when these differ from the operator's defaults.

One model client per catalogue entry (bot.settings.model_catalog), made on first use and closed with
the runtime; the default entry uses the runtime's own client. The tools are read from the
runtime's agent at each turn, so MCP servers that came up since are offered.

Part of bot/: joins agent/ and the bot's settings; knows nothing of Discord or the stores.
"""

from __future__ import annotations

from agent.config import AgentSettings
from agent.llm import LLMClient
from agent.loop import Agent, ChatModel
from agent.tools.registry import ToolRegistry
from bot.settings.model_catalog import ModelCatalog, ModelEntry, model_for_turn
from bot.settings.place import PlaceSettings

__all__ = ["TurnAgents"]


class TurnAgents:
    """Builds the per-turn Agent; ``aclose`` closes the clients it made."""

    def __init__(self, base: Agent, models: ModelCatalog, agent_settings: AgentSettings) -> None:
        self.base = base
        self._models = models
        self._agent_settings = agent_settings
        self._clients: dict[str, LLMClient] = {}

    def model(self, place: PlaceSettings) -> ModelEntry:
        """The catalogue entry a turn in ``place`` uses (its ``vision`` says if it sees images)."""
        return model_for_turn(self._models, place.model)

    def for_turn(self, place: PlaceSettings) -> Agent:
        entry = self.model(place)
        if entry is self._models.default and place.persona is None and not place.tools_off:
            return self.base
        return Agent(self._llm(entry), self._tools(place.tools_off), protocol=self.base.protocol,
                     max_steps=self.base.max_steps, persona=place.persona or self.base.persona,
                     stream=self.base.stream)

    def _llm(self, entry: ModelEntry) -> ChatModel:
        if entry is self._models.default:
            return self.base.llm
        client = self._clients.get(entry.name)
        if client is None:
            s = self._agent_settings
            client = self._clients[entry.name] = LLMClient(
                base_url=entry.base_url or s.base_url,
                api_key=self._models.key_for(entry, s.base_url, s.api_key), model=entry.name,
                temperature=s.temperature, timeout_s=s.timeout_s, max_retries=s.max_retries)
        return client

    def _tools(self, off: frozenset[str]) -> ToolRegistry:
        tools = self.base.tools
        if not off:
            return tools
        kept = ToolRegistry(tools.default_timeout_s, max_observation_chars=tools.max_observation_chars)
        for tool in tools:
            if tool.name not in off:
                kept.register(tool)
        return kept

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            await client.aclose()
