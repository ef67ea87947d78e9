"""agent: the async ReAct engine (parser, prompt, LLM client, tools, loop).

Knows nothing of Discord or storage: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from agent.config import AgentSettings, load_agent_settings
from agent.errors import AgentError, ConfigError, LLMError
from agent.events import (
    AgentEvent,
    AnswerDelta,
    FinalAnswer,
    ModelCalled,
    Nudge,
    RunEnded,
    ToolFinished,
    ToolStarted,
    Usage,
)
from agent.llm import Completion, Delta, LLMClient, ToolCall
from agent.loop import Agent, ChatModel, StreamingChatModel
from agent.parser import ParsedReply, parse_response
from agent.prompt import build_system_prompt
from agent.tools.registry import Tool, ToolContext, ToolError, ToolRegistry, ToolResult

__all__ = [
    "Agent",
    "AgentError",
    "AgentEvent",
    "AgentSettings",
    "AnswerDelta",
    "ChatModel",
    "Completion",
    "ConfigError",
    "Delta",
    "FinalAnswer",
    "LLMClient",
    "LLMError",
    "ModelCalled",
    "Nudge",
    "ParsedReply",
    "RunEnded",
    "StreamingChatModel",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolFinished",
    "ToolRegistry",
    "ToolResult",
    "ToolStarted",
    "Usage",
    "build_system_prompt",
    "load_agent_settings",
    "parse_response",
]
