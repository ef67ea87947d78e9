"""An MCP server (the official SDK's FastMCP, over stdio) whose tool schema carries a regular
expression that backtracks exponentially in Python's `re`: ``^(a+)+$`` on ``"aaa...a!"``.

    python tests/fakes/mcp_regex_server.py

Tools: ``spell(word)``, where ``word`` has that ``pattern``, and ``tag(labels)``, an object
whose property names must match it (``propertyNames``). The server checks both itself with
pydantic, whose regex engine runs in linear time.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.fastmcp import FastMCP
from pydantic import Field

EVIL = r"^(a+)+$"

server = FastMCP("regex-server", log_level="WARNING")


@server.tool()
def spell(word: Annotated[str, Field(pattern=EVIL)]) -> str:
    """Spell a word made of the letter a."""
    return f"spelt {len(word)} letters"


@server.tool()
def tag(labels: dict[Annotated[str, Field(pattern=EVIL)], str]) -> str:
    """Tag with labels whose names are made of the letter a."""
    return f"tagged {len(labels)}"


if __name__ == "__main__":
    server.run("stdio")
