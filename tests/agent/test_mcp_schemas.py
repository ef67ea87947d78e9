"""A server's regular expressions never run in the bot: an SDK-built MCP server whose schema
has ``^(a+)+$`` (exponential in Python's ``re``) is called with the string that makes it blow up.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from agent.tools.mcp import McpTools, parse_mcp_config
from agent.tools.mcp.schemas import without_patterns
from agent.tools.registry import ToolContext, ToolRegistry

on_module_loop = pytest.mark.asyncio(loop_scope="module")  # the server fixture lives there

CTX = ToolContext(user_id="42", channel_id="7", guild_id="1", display_name="Ada")
SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_regex_server.py"
EVIL = r"^(a+)+$"
BLOWUP = "a" * 40 + "!"  # 2**40 ways to split the a's before the "!" fails each


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def registry() -> AsyncIterator[ToolRegistry]:
    config = parse_mcp_config(json.dumps(
        {"mcpServers": {"rx": {"command": sys.executable, "args": [str(SERVER)]}}}), {})
    async with McpTools(config) as mcp:
        yield mcp.registry()


@on_module_loop
async def test_a_backtracking_pattern_is_not_run_here_and_the_server_refuses_the_value(
    registry: ToolRegistry,
) -> None:
    result = await registry.call("rx__spell", {"word": BLOWUP}, CTX)
    assert not result.ok
    assert result.observation.startswith("Error") and "pattern" in result.observation


@on_module_loop
async def test_a_backtracking_property_name_pattern_is_not_run_here(registry: ToolRegistry) -> None:
    result = await registry.call("rx__tag", {"labels": {BLOWUP: "x"}}, CTX)
    assert not result.ok and result.observation.startswith("Error")


@on_module_loop
async def test_a_value_matching_the_pattern_is_called(registry: ToolRegistry) -> None:
    result = await registry.call("rx__spell", {"word": "aaaa"}, CTX)
    assert (result.ok, result.observation) == (True, "spelt 4 letters")


@on_module_loop
async def test_the_rest_of_the_schema_is_still_checked_here(registry: ToolRegistry) -> None:
    result = await registry.call("rx__spell", {"word": 7}, CTX)
    assert not result.ok and "bad arguments for rx__spell" in result.observation


@on_module_loop
async def test_the_model_still_reads_the_pattern(registry: ToolRegistry) -> None:
    assert registry.get("rx__spell").parameters["properties"]["word"]["pattern"] == EVIL


def test_patterns_go_wherever_schemas_nest() -> None:
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "pattern": EVIL},
        "b": {"type": "array", "items": {"pattern": EVIL}, "prefixItems": [{"pattern": EVIL}]},
        "c": {"anyOf": [{"pattern": EVIL}, {"type": "null"}]},
        "d": {"type": "object", "propertyNames": {"pattern": EVIL}},
    }, "$defs": {"e": {"pattern": EVIL}}}
    assert EVIL not in json.dumps(without_patterns(schema))
    assert EVIL in json.dumps(schema)  # the server's schema itself is left as it was


def test_a_property_named_pattern_stays() -> None:
    schema = {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}
    assert without_patterns(schema) == schema


def test_pattern_properties_go_with_the_additional_properties_beside_them() -> None:
    schema = {"type": "object", "patternProperties": {EVIL: {"type": "string"}},
              "additionalProperties": False, "properties": {"x": {"type": "integer"}}}
    assert without_patterns(schema) == {"type": "object", "properties": {"x": {"type": "integer"}}}
