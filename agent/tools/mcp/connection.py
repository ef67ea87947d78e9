"""One MCP server kept connected: a supervisor task owns the SDK's transport and session.

The official SDK's ``stdio_client`` / ``streamable_http_client`` and ``ClientSession`` are anyio
context managers whose cancel scopes must be entered and left in one task, so each server gets
one supervisor task that connects (initialize, tools/list), then watches: a ping every
``ping_interval_s``, a ``notifications/tools/list_changed`` (tools listed again), or a call that
found the connection closed. When the connection is lost (or never came up) the supervisor
leaves the SDK's context managers, which stop a stdio child (stdin closed, then SIGTERM, then
SIGKILL to its process group), and connects again after a backoff that doubles up to
``max_backoff_s`` (and starts again from ``backoff_s`` once a connection has lasted a minute,
so a server that dies at every start is not restarted in a tight loop); meanwhile `call` raises ServerUnavailable. `stop` asks the supervisor to
leave normally, so the SDK's shutdown sequence runs whole; only past a deadline is it cancelled.

A stdio child's environment is the SDK's short default (PATH, HOME, USER, LOGNAME, SHELL, TERM)
plus the entry's own ``env``: nothing else of the bot's environment, so never its secrets.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, TextIO

import anyio
import httpx
from mcp import ClientSession, McpError, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client

from agent.tools.mcp.config import ServerConfig

__all__ = ["PROBE_TIMEOUT_S", "CallTimeout", "ServerConnection", "ServerUnavailable", "retry_delay"]

log = logging.getLogger(__name__)

State = Literal["starting", "up", "down", "stopped"]
CONNECT_TIMEOUT_S = 30.0
PING_INTERVAL_S = 30.0
PING_TIMEOUT_S = 10.0
PROBE_TIMEOUT_S = 2.0  # the ping after a call timed out
STOP_TIMEOUT_S = 10.0
STABLE_AFTER_S = 60.0  # up this long, a server's next failure backs off from the start again


class ServerUnavailable(Exception):
    """The server is not connected (starting, restarting or stopped); the message says why."""


class CallTimeout(Exception):
    """A call got no answer in time, while the server still answers pings."""


class ServerConnection:
    """One configured server: `start`, `call`, `tools`, `stop`; see the module docstring."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        on_tools_changed: Callable[[], None] = lambda: None,
        errlog: TextIO | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        ping_interval_s: float = PING_INTERVAL_S,
        backoff_s: float = 1.0,
        max_backoff_s: float = 300.0,
    ) -> None:
        self.config = config
        self.state: State = "starting"
        self.cause: str | None = None  # why it is down (or its last failure)
        self.tools: tuple[types.Tool, ...] = ()  # the last listing, allow-list applied
        self.restarts = 0
        self._on_tools_changed = on_tools_changed
        self.errlog = errlog  # a stdio child's stderr (default: the process's own)
        self._connect_timeout_s = connect_timeout_s
        self._ping_interval_s = ping_interval_s
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._session: ClientSession | None = None
        self._wake = asyncio.Event()
        self._lost: str | None = None
        self._relist = False
        self._stopping = False
        self._settled = asyncio.Event()  # set once it is up or has failed once
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        """Start the supervisor task (connects in the background)."""
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"mcp-{self.name}")

    async def settled(self, timeout_s: float) -> None:
        """Wait until the first connection succeeded or failed (at most ``timeout_s``)."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._settled.wait()
        except TimeoutError:
            if self.state == "starting":
                self.cause = f"no answer within {timeout_s:g} s"

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout_s: float,
                   meta: dict[str, Any] | None = None) -> types.CallToolResult:
        """``tools/call``. ServerUnavailable when not connected, or when the connection broke;
        CallTimeout past ``timeout_s``, after a ping has shown the server alive (over HTTP a
        server that died mid-call leaves the call unanswered: only the ping tells)."""
        session = self._session
        if session is None or self.state != "up":
            raise ServerUnavailable(self._unavailable())
        try:
            try:
                async with asyncio.timeout(timeout_s):
                    return await session.call_tool(tool, arguments, meta=meta)
            except TimeoutError:
                try:
                    with anyio.fail_after(PROBE_TIMEOUT_S):
                        await session.send_ping()
                except Exception:
                    self.lose(f"a call got no answer in {timeout_s:g} s, nor did a ping")
                    raise ServerUnavailable(self._unavailable()) from None
                raise CallTimeout(f"{timeout_s:g}s") from None
        except McpError as exc:
            if exc.error.code != types.CONNECTION_CLOSED:
                raise
            self.lose("the connection closed during a call (the server exited?)")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            self.lose("the connection is closed (the server exited?)")
        raise ServerUnavailable(self._unavailable())

    def lose(self, cause: str) -> None:
        """Mark the connection lost: the supervisor closes it and connects again."""
        if self.state == "up":
            self.state = "down"
            self.cause = cause
        self._lost = self._lost or cause
        self._wake.set()

    async def stop(self) -> None:
        """Leave the connection (a stdio child is stopped) and end the supervisor."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await asyncio.shield(task)
            except TimeoutError:
                log.warning("MCP server %s did not stop within %ss; cancelling", self.name, STOP_TIMEOUT_S)
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self.state = "stopped"
        self._session = None

    def _unavailable(self) -> str:
        why = f": {self.cause}" if self.cause else ""
        return (f"MCP server {self.name} is unavailable{why}. It is being restarted; try again "
                "later, or answer without it")

    # -- the supervisor ---------------------------------------------------------------------

    async def _supervise(self) -> None:
        failures = 0
        while not self._stopping:
            self._lost = None
            try:
                async with self._connected() as session:
                    if self._stopping:
                        break
                    up_since = asyncio.get_running_loop().time()
                    await self._watch(session)
                    cause = self._lost
                    if asyncio.get_running_loop().time() - up_since >= STABLE_AFTER_S:
                        failures = 0  # it ran a while: a new fault starts the backoff afresh
            except Exception as exc:  # the SDK's and the transport's errors, as one line
                cause = self.config.scrub(describe(exc, self.config))
            finally:
                self._session = None
            if self._stopping:
                break
            self.state = "down"
            self.cause = cause or "the connection ended"
            self._settled.set()
            delay = retry_delay(failures, self._backoff_s, self._max_backoff_s)
            failures += 1
            log.warning("MCP server %s is down: %s; connecting again in %.3g s",
                        self.name, self.cause, delay)
            self._wake.clear()
            try:
                async with asyncio.timeout(delay):
                    while not self._stopping:  # only stop cuts the backoff short
                        await self._wake.wait()
                        self._wake.clear()
            except TimeoutError:
                pass
            self.restarts += 1
        self.state = "stopped"

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[ClientSession]:
        async with self._transport() as (read, write), ClientSession(
                read, write, message_handler=self._on_message) as session:
            with anyio.fail_after(self._connect_timeout_s):
                info = await session.initialize()
                await self._list(session)
            self._session = session
            self.state = "up"
            self.cause = None
            self._settled.set()
            log.info("MCP server %s (%s %s) is up: %d tool(s)", self.name, info.serverInfo.name,
                     info.serverInfo.version, len(self.tools))
            self._on_tools_changed()
            yield session

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        c = self.config
        if c.transport == "stdio":
            params = StdioServerParameters(command=c.command, args=list(c.args), env=dict(c.env),
                                           cwd=c.cwd)
            async with stdio_client(params, errlog=self.errlog or _stderr()) as (read, write):
                yield read, write
            return
        async with httpx.AsyncClient(
            headers=dict(c.headers), follow_redirects=False,
            timeout=httpx.Timeout(self._connect_timeout_s, read=max(300.0, c.timeout_s or 0)),
        ) as client, streamable_http_client(c.url, http_client=client) as (read, write, _):
            yield read, write

    async def _watch(self, session: ClientSession) -> None:
        """Return when the connection is lost or stop is asked."""
        while not self._stopping and self._lost is None:
            try:
                async with asyncio.timeout(self._ping_interval_s):
                    await self._wake.wait()
            except TimeoutError:
                try:
                    with anyio.fail_after(PING_TIMEOUT_S):
                        await session.send_ping()
                except Exception as exc:
                    self.lose(f"it did not answer a ping: {describe(exc, self.config)}")
                continue
            self._wake.clear()
            if self._relist and self._lost is None and not self._stopping:
                self._relist = False
                try:
                    with anyio.fail_after(self._connect_timeout_s):
                        await self._list(session)
                except Exception as exc:
                    self.lose(f"listing its tools failed: {describe(exc, self.config)}")
                    continue
                log.info("MCP server %s changed its tools: %d now", self.name, len(self.tools))
                self._on_tools_changed()

    async def _list(self, session: ClientSession) -> None:
        listed: list[types.Tool] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            listed += page.tools
            cursor = page.nextCursor
            if not cursor:
                break
        allow = self.config.tools
        if allow is not None:
            missing = sorted(allow - {t.name for t in listed})
            if missing:
                log.warning("MCP server %s does not list the allowed tool(s) %s",
                            self.name, ", ".join(missing))
            listed = [t for t in listed if t.name in allow]
        self.tools = tuple(listed)

    async def _on_message(self, message: object) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
                message.root, types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()
        elif isinstance(message, Exception):
            log.warning("MCP server %s: the session reported %s", self.name,
                        self.config.scrub(describe(message, self.config)))


def retry_delay(failures: int, backoff_s: float, max_backoff_s: float) -> float:
    """Seconds before the next connection after ``failures`` failed ones in a row."""
    return min(max_backoff_s, backoff_s * 2 ** min(failures, 32))


def describe(exc: BaseException, config: ServerConfig) -> str:
    """One line saying why, for the log and `bot check`; never a value of the config."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and config.transport == "stdio":
        return f"cannot start {config.where()}: no such file or command"
    if isinstance(exc, PermissionError) and config.transport == "stdio":
        return f"cannot start {config.where()}: permission denied"
    if isinstance(exc, McpError):
        if exc.error.code == types.CONNECTION_CLOSED:
            return f"{config.where()} closed the connection (the server exited?)"
        return f"{config.where()} answered an error: {_short(exc.error.message)}"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"{config.where()} answered HTTP {exc.response.status_code}"
    if isinstance(exc, httpx.ConnectError):
        return f"nothing answers at {config.where()}"
    if isinstance(exc, httpx.TimeoutException):
        return f"{config.where()} did not answer in time"
    if isinstance(exc, TimeoutError):
        return f"{config.where()} did not answer within the connect timeout"
    return f"{config.where()}: {type(exc).__name__}: {_short(str(exc))}"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:200] + "..."


def _stderr() -> TextIO:
    return sys.__stderr__ or sys.stderr
