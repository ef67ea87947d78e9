"""Tools from MCP servers, on the official ``mcp`` SDK (1.x client API).

config      the MCP_CONFIG file (``{"mcpServers": {...}}``), ``${VAR}``s resolved
connection  one server kept connected by a supervisor task (restart with backoff)
results     a tool result as the observation text
schemas     what of a server's input schema is validated here (no regular expressions)
manager     every server together, their tools as ordinary registry tools

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.tools.mcp.config import McpConfig, ServerConfig, parse_mcp_config, read_mcp_config
    from agent.tools.mcp.connection import ServerConnection, ServerUnavailable
    from agent.tools.mcp.manager import CONTEXT_META_KEY, McpTools, ServerStatus, tool_name

# Loaded on first use (PEP 562): reading MCP_CONFIG (`config`) must not import the `mcp` SDK,
# which a bot without MCP servers never needs and which takes a noticeable part of a start.
_MODULE_OF = {
    "McpConfig": "config", "ServerConfig": "config", "parse_mcp_config": "config", "read_mcp_config": "config",
    "ServerConnection": "connection", "ServerUnavailable": "connection",
    "CONTEXT_META_KEY": "manager", "McpTools": "manager", "ServerStatus": "manager", "tool_name": "manager",
}

__all__ = [
    "CONTEXT_META_KEY",
    "McpConfig",
    "McpTools",
    "ServerConfig",
    "ServerConnection",
    "ServerStatus",
    "ServerUnavailable",
    "parse_mcp_config",
    "read_mcp_config",
    "tool_name",
]


def __getattr__(name: str) -> object:
    if name in _MODULE_OF:
        return getattr(import_module(f"agent.tools.mcp.{_MODULE_OF[name]}"), name)
    raise AttributeError(f"module 'agent.tools.mcp' has no attribute {name!r}")
