"""Tools the agent can call: the registry and the built-in tools.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from agent.tools.builtin import register_builtin_tools
from agent.tools.registry import (
    DEFAULT_MAX_OBSERVATION_CHARS,
    Tool,
    ToolContext,
    ToolError,
    ToolRegistry,
    ToolResult,
)

__all__ = [
    "DEFAULT_MAX_OBSERVATION_CHARS",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "register_builtin_tools",
]
