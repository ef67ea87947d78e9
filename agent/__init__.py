"""agent: the async ReAct engine (parser, prompt, LLM client, tools, loop).

Knows nothing of Discord or storage: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from agent.config import AgentSettings, load_agent_settings
from agent.errors import AgentError, ConfigError, LLMError
from agent.events import (
    AgentEvent,
    FinalAnswer,
    ModelCalled,
    Nudge,
    RunEnded,
    ToolFinished,
    ToolStarted,
    Usage,
)

__all__ = [
    "AgentError",
    "AgentEvent",
    "AgentSettings",
    "ConfigError",
    "FinalAnswer",
    "LLMError",
    "ModelCalled",
    "Nudge",
    "RunEnded",
    "ToolFinished",
    "ToolStarted",
    "Usage",
    "load_agent_settings",
]
