"""The test MCP server (tests/fakes/mcp_server.py) as a streamable-HTTP server on loopback.

    async with McpHttpServer() as server:     # a child process on 127.0.0.1, a free port
        url = server.url                      # http://127.0.0.1:PORT/mcp
        await server.restart()                # a new process on the same port (after a crash)

`stdio_entry()` is the MCP_CONFIG entry that runs the same server over stdio.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from typing import Any, Self

__all__ = ["SERVER_SCRIPT", "McpHttpServer", "stdio_entry"]

SERVER_SCRIPT = Path(__file__).with_name("mcp_server.py")
START_TIMEOUT_S = 20.0


def stdio_entry(**extra: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry starting the test server over stdio."""
    return {"command": sys.executable, "args": [str(SERVER_SCRIPT)], **extra}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class McpHttpServer:
    """The test server over streamable HTTP, in a child process."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> Self:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, str(SERVER_SCRIPT), "--http", str(self.port),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        async with asyncio.timeout(START_TIMEOUT_S):
            while True:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                except OSError:
                    if self.process.returncode is not None:
                        raise RuntimeError(f"the MCP test server exited with {self.process.returncode}")
                    await asyncio.sleep(0.05)
                    continue
                writer.close()
                await writer.wait_closed()
                return self

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()
        self.process = None

    async def restart(self) -> None:
        if self.process is not None:
            await self.process.wait()  # it crashed (or was killed) already
        await self.start()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
