"""The connection's pure parts: the retry schedule, and the one line said of a failure (which
names the command or the URL's origin, never a value from the config)."""

from __future__ import annotations

import json

import httpx
import pytest
from mcp import McpError, types

from agent.tools.mcp.config import ServerConfig, parse_mcp_config
from agent.tools.mcp.connection import describe, retry_delay

TOKEN = "tok-9f8e7d6c5b4a"


def test_the_backoff_doubles_up_to_its_cap() -> None:
    assert [retry_delay(n, 1.0, 300.0) for n in range(10)] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
    assert retry_delay(10_000, 1.0, 300.0) == 300


def server(entry: dict) -> ServerConfig:
    (found,) = parse_mcp_config(json.dumps({"mcpServers": {"s": entry}}), {"TOKEN": TOKEN}).servers
    return found


STDIO = server({"command": "/opt/mcp/bin/files-server", "args": ["--key", "${TOKEN}"]})
HTTP = server({"url": "https://user:pw@mcp.example.com:8443/v1/mcp?key=${TOKEN}"})
REQUEST = httpx.Request("POST", "https://mcp.example.com:8443/v1/mcp")


@pytest.mark.parametrize(("exc", "config", "said"), [
    (FileNotFoundError(2, "No such file"), STDIO, "cannot start command 'files-server': no such file or command"),
    (PermissionError(13, "denied"), STDIO, "cannot start command 'files-server': permission denied"),
    (McpError(types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")), STDIO,
     "command 'files-server' closed the connection (the server exited?)"),
    (McpError(types.ErrorData(code=-32603, message="boom\nat line 3")), STDIO,
     "command 'files-server' answered an error: boom at line 3"),
    (httpx.HTTPStatusError("401", request=REQUEST, response=httpx.Response(401, request=REQUEST)), HTTP,
     "URL https://mcp.example.com:8443 answered HTTP 401"),
    (httpx.ConnectError("refused", request=REQUEST), HTTP, "nothing answers at URL https://mcp.example.com:8443"),
    (httpx.ReadTimeout("slow", request=REQUEST), HTTP, "URL https://mcp.example.com:8443 did not answer in time"),
    (TimeoutError(), HTTP, "URL https://mcp.example.com:8443 did not answer within the connect timeout"),
    (ExceptionGroup("tg", [ExceptionGroup("inner", [httpx.ConnectError("x", request=REQUEST)])]), HTTP,
     "nothing answers at URL https://mcp.example.com:8443"),
    (RuntimeError("x" * 500), STDIO, "command 'files-server': RuntimeError: " + "x" * 200 + "..."),
])
def test_a_failure_is_one_line_naming_the_command_or_the_urls_origin(exc, config, said) -> None:
    line = describe(exc, config)
    assert line == said
    assert TOKEN not in line and "pw" not in line and "/v1/mcp" not in line
