"""A real MCP server for the tests, built with the official SDK's FastMCP.

    python tests/fakes/mcp_server.py                 # stdio (what an MCP_CONFIG "command" runs)
    python tests/fakes/mcp_server.py --http PORT     # streamable HTTP at http://127.0.0.1:PORT/mcp

Tools: echo, add (structured result), fail (an isError result), hang (never answers), image (a
PNG of IMAGE_BYTES bytes), big (a text of n characters), crash (the process exits mid-call),
pid, read_env (what the process sees of a variable), family_environ (what /proc shows it of
its parent's and its siblings' environments), context (the call's _meta, as JSON),
header (an HTTP request header),
calls (how many tool calls were made before), grow (adds the tool "late" and sends
notifications/tools/list_changed), "odd.name-x" (a name that is not a safe identifier), and
huge_schema (an input schema of about 60,000 characters: a parameter of 3,000 named choices).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import zlib
from typing import Literal

import anyio
from mcp.server.fastmcp import Context, FastMCP, Image

server = FastMCP("test-server", log_level="WARNING")
_calls = 0


def _counted() -> None:
    global _calls
    _calls += 1


def _png(width: int, height: int) -> bytes:
    """A valid grey PNG (made here, so the test ships no binary file)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


IMAGE = _png(64, 64)
IMAGE_BYTES = len(IMAGE)


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    _counted()
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    _counted()
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    _counted()
    raise ValueError(reason)


@server.tool()
async def hang() -> str:
    """Never answers."""
    _counted()
    await anyio.sleep(3600)
    return "woke up"


@server.tool()
def image() -> Image:
    """A small PNG picture."""
    _counted()
    return Image(data=IMAGE, format="png")


@server.tool()
def big(n: int) -> str:
    """A text of n characters."""
    _counted()
    return "x" * n


HugeChoice = Literal[tuple(f"choice-number-{i:05d}" for i in range(3_000))]  # type: ignore[valid-type]  # built at run time


@server.tool(name="huge_schema")
def huge_schema(choice: HugeChoice) -> str:
    """A tool whose input schema is too large to offer a model."""
    return choice


@server.tool()
def crash() -> str:
    """The server process dies while answering."""
    os._exit(3)


@server.tool()
def pid() -> int:
    """The server's process id."""
    _counted()
    return os.getpid()


@server.tool()
def read_env(name: str) -> str:
    """What this process sees of an environment variable."""
    _counted()
    return os.environ.get(name, "(unset)")


def _environ_of(pid: int) -> str:
    """What /proc says of a process's environment: its variables (NUL between them), or the
    error that reading it gave."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError as exc:
        return f"(unreadable: {type(exc).__name__}: {exc.strerror})"


def _children_of(ppid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(b")", 1)[1].split()[1]) == ppid:
                found.append(int(entry))
    return sorted(found)


@server.tool()
def family_environ() -> str:
    """What this process reads of the environment of its parent and of its parent's other
    children, from /proc, as JSON: {"parent": text, "siblings": {pid: text}}; also written
    whole to the file its own FAMILY_REPORT variable names, if any (an observation is cut)."""
    _counted()
    parent = os.getppid()
    siblings = {str(pid): _environ_of(pid) for pid in _children_of(parent) if pid != os.getpid()}
    report = json.dumps({"parent": _environ_of(parent), "siblings": siblings})
    if target := os.environ.get("FAMILY_REPORT"):
        with open(target, "w", encoding="utf-8") as f:
            f.write(report)
    return report


@server.tool()
def context(ctx: Context) -> str:
    """The _meta of this call, as JSON."""
    _counted()
    meta = ctx.request_context.meta
    return json.dumps(meta.model_dump(exclude_none=True) if meta is not None else None)


@server.tool()
def calls() -> int:
    """How many tool calls this process answered before this one."""
    return _calls


@server.tool()
def header(name: str, ctx: Context) -> str:
    """An HTTP header of this call's request (streamable HTTP only)."""
    _counted()
    request = ctx.request_context.request
    return request.headers.get(name, "(unset)") if request is not None else "(not HTTP)"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool "late" and tell the client its tool list changed."""
    _counted()

    def late() -> str:
        """A tool that came later."""
        return "late answer"

    server.add_tool(late, name="late")
    await ctx.session.send_tool_list_changed()
    return "grown"


def _odd() -> str:
    """A tool whose name has a dot and a hyphen."""
    return "odd"


server.add_tool(_odd, name="odd.name-x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port")
    args = parser.parse_args()
    if args.http is None:
        server.run("stdio")
    else:
        server.settings.port = args.http
        server.run("streamable-http")


if __name__ == "__main__":
    main()
