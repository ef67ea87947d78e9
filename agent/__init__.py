"""agent: the async ReAct engine (parser, prompt, LLM client, tools, loop).

Knows nothing of Discord or storage: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.config import AgentSettings, load_agent_settings
    from agent.errors import AgentError, ConfigError, LLMError
    from agent.events import AgentEvent, AnswerDelta, FinalAnswer, ModelCalled, Nudge, RunEnded, ToolFinished, ToolStarted, Usage
    from agent.llm import Completion, Delta, LLMClient, ToolCall
    from agent.loop import Agent, ChatModel, StreamingChatModel
    from agent.parser import ParsedReply, parse_response
    from agent.prompt import build_system_prompt
    from agent.tools.registry import Tool, ToolContext, ToolError, ToolRegistry, ToolResult

# Loaded on first use (PEP 562): a module that needs one light part (the events, the images)
# does not import the LLM client and with it the openai package.
_MODULE_OF = {
    "AgentSettings": "config",
    "load_agent_settings": "config",
    "AgentError": "errors",
    "ConfigError": "errors",
    "LLMError": "errors",
    "AgentEvent": "events",
    "AnswerDelta": "events",
    "FinalAnswer": "events",
    "ModelCalled": "events",
    "Nudge": "events",
    "RunEnded": "events",
    "ToolFinished": "events",
    "ToolStarted": "events",
    "Usage": "events",
    "Completion": "llm",
    "Delta": "llm",
    "LLMClient": "llm",
    "ToolCall": "llm",
    "Agent": "loop",
    "ChatModel": "loop",
    "StreamingChatModel": "loop",
    "ParsedReply": "parser",
    "parse_response": "parser",
    "build_system_prompt": "prompt",
    "Tool": "tools.registry",
    "ToolContext": "tools.registry",
    "ToolError": "tools.registry",
    "ToolRegistry": "tools.registry",
    "ToolResult": "tools.registry",
}

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


def __getattr__(name: str) -> object:
    if name in _MODULE_OF:
        return getattr(import_module(f"agent.{_MODULE_OF[name]}"), name)
    raise AttributeError(f"module 'agent' has no attribute {name!r}")
