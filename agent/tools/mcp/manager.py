"""The MCP servers of one bot: started together, offered as ordinary tools, stopped together.

    async with McpTools(config, default_timeout_s=15, on_change=rebuild) as mcp:
        registry = builtin.merged(mcp.registry())

Each tool of a server becomes a registry `Tool` named ``<server>__<tool>`` (characters outside
``[A-Za-z0-9_-]`` become ``_``; a name over 64 characters is cut and given a short hash), whose
JSON Schema is the server's ``inputSchema``: the registry validates the model's arguments
against it, less its regular expressions (`schemas`), before anything is sent. The double underscore says where the tool comes from and keeps it off
every built-in name (built-ins are Python identifiers without one). A tool whose schema is not
valid JSON Schema, or whose schema is over MAX_SCHEMA_CHARS of JSON, is left out, with a
warning. A tool is adapted once per listing: a server announcing that its tools changed costs
the checks of the tools whose schema or description did change (checking one 290 KB schema took
1.3 s on the event loop). The asking user, channel and guild go to the
server (in the call's ``_meta``, under ``CONTEXT_META_KEY``) only when its entry says
``send_context``. A down server's tools stay listed and answer that the server is unavailable.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import jsonschema
from mcp import McpError, types

from agent.tools.mcp.config import McpConfig
from agent.tools.mcp.connection import (
    CONNECT_TIMEOUT_S,
    PROBE_TIMEOUT_S,
    CallTimeout,
    ServerConnection,
    ServerUnavailable,
)
from agent.tools.mcp.results import observation_text
from agent.tools.mcp.schemas import without_patterns
from agent.tools.registry import DEFAULT_MAX_OBSERVATION_CHARS, Tool, ToolContext, ToolError, ToolRegistry

__all__ = ["CONTEXT_META_KEY", "McpTools", "ServerStatus", "tool_name"]

log = logging.getLogger(__name__)

CONTEXT_META_KEY = "react-discord-bot/context"
MAX_DESCRIPTION_CHARS = 1000
MAX_SCHEMA_CHARS = 50_000  # of a tool's input schema as JSON (it goes into prompts too)
_CTX_PARAM = "__tool_context__"


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """What `bot check` and the start-up log say of one server."""

    name: str
    state: str  # "up" | "down" | "starting" | "stopped" | "disabled" | "invalid"
    tools: tuple[str, ...] = ()  # registry names
    cause: str | None = None


def tool_name(server: str, tool: str) -> str:
    """The registry name of ``tool`` of ``server``: ``<server>__<tool>``, at most 64 characters."""
    name = f"{server}__{re.sub(r'[^A-Za-z0-9_-]', '_', tool)}"
    if len(name) <= 64:
        return name
    digest = hashlib.sha1(tool.encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


class McpTools:
    """All enabled servers of an `McpConfig`; see the module docstring."""

    def __init__(
        self,
        config: McpConfig,
        *,
        default_timeout_s: float = 15.0,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        on_change: Callable[[], None] = lambda: None,
        stderr_dir: Path | None = None,
        start_timeout_s: float = CONNECT_TIMEOUT_S,
        **connection_options: Any,
    ) -> None:
        self.config = config
        self._default_timeout_s = default_timeout_s
        self._limit = max_observation_chars
        self._on_change = on_change
        self._stderr_dir = stderr_dir
        self._start_timeout_s = start_timeout_s
        self._logs: list[IO[str]] = []
        self._connections = [
            ServerConnection(server, on_tools_changed=self._changed,
                             connect_timeout_s=start_timeout_s, **connection_options)
            for server in config.servers
        ]
        self._started = False
        # (server, tool) -> what the tool was adapted from, and the result
        self._adapted: dict[tuple[str, str], tuple[str, Tool | None]] = {}

    @property
    def connections(self) -> tuple[ServerConnection, ...]:
        return tuple(self._connections)

    async def __aenter__(self) -> McpTools:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Connect every server at once; return when each is up or has failed (or the start
        timeout passed). A failed server keeps being retried in the background."""
        for server, cause in self.config.problems:
            if server:
                log.warning("MCP server %s: %s; starting without it", server, cause)
            else:
                log.warning("%s%s", cause, "" if self.config.servers else "; starting without MCP tools")
        for conn in self._connections:
            if self._stderr_dir is not None and conn.config.transport == "stdio":
                conn.errlog = self._open_log(conn.name)
            conn.start()
        await asyncio.gather(*(c.settled(self._start_timeout_s) for c in self._connections))
        self._started = True
        for conn in self._connections:
            if conn.state != "up":
                log.warning("MCP server %s: %s; starting without its tools (retrying in the background)",
                          conn.name, conn.cause or "it did not come up")

    def _open_log(self, server: str) -> IO[str] | None:
        """The file a stdio server's stderr goes to (closed by `aclose`); None: the bot's own."""
        assert self._stderr_dir is not None
        path = self._stderr_dir / f"mcp-{server}.log"
        try:
            self._stderr_dir.mkdir(parents=True, exist_ok=True)
            log_file = path.open("w", encoding="utf-8")
        except OSError as exc:
            log.warning("MCP server %s: cannot write %s (%s); its stderr goes to the bot's",
                        server, path, exc.strerror or exc)
            return None
        self._logs.append(log_file)
        return log_file

    async def aclose(self) -> None:
        """Stop every server (every stdio child is ended) and close their log files."""
        await asyncio.gather(*(c.stop() for c in self._connections))
        for f in self._logs:
            f.close()
        self._logs.clear()

    def statuses(self) -> list[ServerStatus]:
        """Every server of the file, in its order: the enabled, the disabled and the invalid."""
        tools = self._tools_by_server()
        result = [ServerStatus(c.name, c.state, tuple(t.name for t in tools[c.name]), c.cause)
                  for c in self._connections]
        result += [ServerStatus(name, "disabled") for name in self.config.disabled]
        result += [ServerStatus(name, "invalid", cause=cause)
                   for name, cause in self.config.problems if name]
        return result

    def registry(self) -> ToolRegistry:
        """A registry of every known tool of every server (a down server's included)."""
        registry = ToolRegistry(self._default_timeout_s, max_observation_chars=self._limit)
        for tools in self._tools_by_server().values():
            for tool in tools:
                registry.register(tool)
        return registry

    def _changed(self) -> None:
        if self._started:
            self._on_change()

    def _tools_by_server(self) -> dict[str, list[Tool]]:
        listed_now = {(conn.name, listed.name) for conn in self._connections for listed in conn.tools}
        for gone in self._adapted.keys() - listed_now:  # a tool no server lists any more
            del self._adapted[gone]
        result: dict[str, list[Tool]] = {}
        for conn in self._connections:
            tools: list[Tool] = []
            seen: set[str] = set()
            for listed in conn.tools:
                built = self._adapt(conn, listed)
                if built is None:
                    continue
                if built.name in seen:
                    log.warning("MCP server %s: tool %r has the same name as another once made "
                                "safe (%s); left out", conn.name, listed.name, built.name)
                    continue
                seen.add(built.name)
                tools.append(built)
            result[conn.name] = tools
        return result

    def _adapt(self, conn: ServerConnection, listed: types.Tool) -> Tool | None:
        listing = listed.model_dump_json()
        known = self._adapted.get((conn.name, listed.name))
        if known is not None and known[0] == listing:
            return known[1]
        adapted = self._adapt_listed(conn, listed)
        self._adapted[(conn.name, listed.name)] = (listing, adapted)
        return adapted

    def _adapt_listed(self, conn: ServerConnection, listed: types.Tool) -> Tool | None:
        if len(json.dumps(listed.inputSchema)) > MAX_SCHEMA_CHARS:
            log.warning("MCP server %s: tool %r has an input schema of over %d characters; left out",
                        conn.name, listed.name, MAX_SCHEMA_CHARS)
            return None
        schema = dict(listed.inputSchema)
        schema.setdefault("type", "object")
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(without_patterns(schema))
        except jsonschema.SchemaError as exc:
            log.warning("MCP server %s: tool %r has an invalid input schema (%s); left out",
                        conn.name, listed.name, exc.message)
            return None
        except RecursionError:
            log.warning("MCP server %s: tool %r has an input schema nested too deeply; left out",
                        conn.name, listed.name)
            return None
        name = tool_name(conn.name, listed.name)
        description = (listed.description or listed.title or listed.name).strip()
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[:MAX_DESCRIPTION_CHARS].rstrip() + " [...]"
        return Tool(
            name=name,
            description=description,
            parameters=schema,
            fn=self._caller(conn, listed.name, name),
            # the call's own timeout (and the ping after it) comes first; this is the backstop
            timeout_s=self._call_timeout(conn) + PROBE_TIMEOUT_S + 1.0,
            ctx_param=_CTX_PARAM,
            validator=validator,  # the schema less its regular expressions: see schemas.py
        )

    def _call_timeout(self, conn: ServerConnection) -> float:
        return conn.config.timeout_s or self._default_timeout_s

    def _caller(self, conn: ServerConnection, remote: str, name: str) -> Callable[..., Any]:
        send_context = conn.config.send_context
        limit = self._limit
        timeout_s = self._call_timeout(conn)

        async def call(**kwargs: Any) -> str:
            ctx: ToolContext = kwargs.pop(_CTX_PARAM)
            meta = {CONTEXT_META_KEY: _context_meta(ctx)} if send_context else None
            try:
                result = await conn.call(remote, kwargs, timeout_s=timeout_s, meta=meta)
            except ServerUnavailable as exc:
                raise ToolError(str(exc)) from None
            except CallTimeout as exc:  # worded as the registry words its own timeouts
                raise ToolError(f"{name} timed out after {exc}") from None
            except McpError as exc:
                raise ToolError(f"{name} failed: {conn.config.scrub(exc.error.message)}") from None
            return observation_text(result, name, limit=limit)

        return call


def _context_meta(ctx: ToolContext) -> dict[str, str | None]:
    return {"user_id": ctx.user_id, "channel_id": ctx.channel_id, "guild_id": ctx.guild_id,
            "display_name": ctx.display_name}
