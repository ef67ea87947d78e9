"""Tools from MCP servers, on the official ``mcp`` SDK (1.x client API).

config      the MCP_CONFIG file (``{"mcpServers": {...}}``), ``${VAR}``s resolved
connection  one server kept connected by a supervisor task (restart with backoff)
results     a tool result as the observation text
schemas     what of a server's input schema is validated here (no regular expressions)
manager     every server together, their tools as ordinary registry tools

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from agent.tools.mcp.config import McpConfig, ServerConfig, parse_mcp_config, read_mcp_config
from agent.tools.mcp.connection import ServerConnection, ServerUnavailable
from agent.tools.mcp.manager import CONTEXT_META_KEY, McpTools, ServerStatus, tool_name

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
