"""The tool registry: schemas derived from signatures, validated calls that never raise."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Literal

import pytest

from agent.tools.registry import Tool, ToolContext, ToolError, ToolRegistry

CTX = ToolContext(user_id="111", channel_id="222", guild_id="333", display_name="Ada")


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry(default_timeout_s=2.0)

    @reg.tool
    async def add(a: int, b: int = 2) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b (int): The second number,
                defaulting to two.
        """
        return a + b

    @reg.tool(timeout_s=0.05)
    async def sleepy() -> str:
        """Sleeps longer than its timeout."""
        await asyncio.sleep(10)
        return "never"

    @reg.tool
    async def boom(ctx: ToolContext) -> str:
        """Always fails."""
        raise RuntimeError("kaput")

    @reg.tool
    async def whoami(ctx: ToolContext) -> dict:
        """Says who asked."""
        return {"user": ctx.user_id, "guild": ctx.guild_id}

    return reg


def test_schema_is_derived_from_hints_and_docstring(registry: ToolRegistry) -> None:
    spec = registry.get("add").spec()
    assert spec["description"] == "Add two integers."
    assert spec["parameters"] == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {"type": "integer", "description": "The second number, defaulting to two.",
                  "default": 2},
        },
        "required": ["a"],
        "additionalProperties": False,
    }


def test_ctx_never_appears_in_the_schema(registry: ToolRegistry) -> None:
    params = registry.get("whoami").parameters
    assert params["properties"] == {}
    assert "required" not in params


def test_optional_list_and_literal_hints_map_to_json_schema() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def pick(mode: Literal["fast", "slow"], tags: list[str], limit: int | None = None,
                   ratio: float = 0.5, flag: bool = False) -> str:
        """Pick."""
        return mode

    props = reg.get("pick").parameters["properties"]
    assert props["mode"] == {"enum": ["fast", "slow"]}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["limit"] == {"type": ["integer", "null"], "default": None}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["flag"] == {"type": "boolean", "default": False}
    assert reg.get("pick").parameters["required"] == ["mode", "tags"]


def test_explicit_parameters_and_description_win_over_derivation() -> None:
    reg = ToolRegistry()
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

    @reg.tool(name="lookup", description="Look something up.", parameters=schema)
    async def anything(ctx: ToolContext, q: str) -> str:
        """Ignored docstring."""
        return q

    assert [tool.spec() for tool in reg] == [{"name": "lookup", "description": "Look something up.",
                              "parameters": schema}]


def test_a_sync_function_is_refused_at_registration() -> None:
    reg = ToolRegistry()
    with pytest.raises(TypeError, match="must be an async function"):

        @reg.tool
        def blocking(x: int) -> int:
            return x


def test_duplicate_names_are_refused() -> None:
    reg = ToolRegistry()

    async def f() -> str:
        return ""

    reg.tool(f)
    with pytest.raises(ValueError, match="already registered"):
        reg.tool(f)


def test_invalid_tool_names_and_schemas_are_refused() -> None:
    reg = ToolRegistry()

    async def f() -> str:
        return ""

    with pytest.raises(ValueError, match="tool name"):
        reg.tool(f, name="has space")
    with pytest.raises(Exception, match="is not valid"):
        reg.tool(f, name="ok", parameters={"type": "nonsense"})


def test_openai_tools_wraps_each_spec(registry: ToolRegistry) -> None:
    tools = registry.openai_tools()
    assert [t["type"] for t in tools] == ["function"] * 4
    assert tools[0]["function"] == registry.get("add").spec()
    json.dumps(tools)  # JSON-safe


def test_container_protocol(registry: ToolRegistry) -> None:
    assert len(registry) == 4
    assert "add" in registry and "nope" not in registry
    assert registry.names() == ["add", "sleepy", "boom", "whoami"]
    assert [t.name for t in registry] == registry.names()


def test_merged_holds_both_and_leaves_originals_alone(registry: ToolRegistry) -> None:
    extra = ToolRegistry()

    @extra.tool
    async def remember(ctx: ToolContext, fact: str) -> str:
        """Remember a fact."""
        return "ok"

    both = registry.merged(extra)
    assert both.names() == ["add", "sleepy", "boom", "whoami", "remember"]
    assert "remember" not in registry and len(extra) == 1
    with pytest.raises(ValueError):
        registry.merged(registry)


async def test_call_passes_arguments_and_returns_text(registry: ToolRegistry) -> None:
    result = await registry.call("add", {"a": 40}, CTX)
    assert result.ok and result.observation == "42"
    assert result.elapsed_ms >= 0


async def test_call_passes_the_runtime_context_and_json_encodes_dicts(registry: ToolRegistry) -> None:
    result = await registry.call("whoami", None, CTX)
    assert result.ok
    assert json.loads(result.observation) == {"user": "111", "guild": "333"}


async def test_model_cannot_set_ctx_through_arguments(registry: ToolRegistry) -> None:
    result = await registry.call("whoami", {"ctx": {"user_id": "999"}}, CTX)
    assert not result.ok
    assert "Additional properties are not allowed" in result.observation


async def test_run_takes_a_checked_call_with_adapted_arguments_and_the_context() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def greet(ctx: ToolContext, name: str) -> str:
        """Greet."""
        return f"{ctx.display_name} greets {name}"

    checked = reg.check("GREET", {"input": "Bob"})
    assert (checked.name, checked.args, checked.problem, checked.error) == ("greet", {"name": "Bob"}, None, "")
    result = await reg.run(checked, CTX)
    assert (result.ok, result.observation) == (True, "Ada greets Bob")


async def test_run_of_a_refused_call_gives_its_error_without_calling() -> None:
    reg = ToolRegistry()
    ran: list[str] = []

    @reg.tool
    async def greet(name: str) -> str:
        """Greet."""
        ran.append(name)
        return name

    checked = reg.check("greet", {"name": 3})
    result = await reg.run(checked, CTX)
    assert checked.problem == "bad_arguments" and ran == []
    assert (result.ok, result.observation) == (False, checked.error)


async def test_call_and_check_word_every_error_the_same(registry: ToolRegistry) -> None:
    for name, args in [("search", {}), ("add", {}), ("add", {"a": "x"}), ("add", [1])]:
        assert (await registry.call(name, args, CTX)).observation == registry.check(name, args).error


def test_non_object_arguments_quote_what_the_model_sent(registry: ToolRegistry) -> None:
    checked = registry.check("add", "a=1, b=2", raw="a=1, b=2")
    assert checked.problem == "bad_arguments"
    assert checked.error.startswith("Error: arguments for add must be a JSON object, got a string: 'a=1, b=2'.")


def test_optional_parameter_accepts_null_and_a_value_but_not_another_type() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def page(query: str, limit: int | None = None, mode: Literal["a", "b"] | None = None,
                   tags: list[str] | None = None, either: int | str | None = None) -> str:
        """Page."""
        return query

    props = reg.get("page").parameters["properties"]
    assert props["mode"] == {"enum": ["a", "b", None], "default": None}
    assert props["tags"] == {"type": ["array", "null"], "items": {"type": "string"}, "default": None}
    assert props["either"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}], "default": None,
    }
    for args in ({"limit": None}, {"limit": 3}, {"mode": None}, {"tags": None}, {"either": None}, {"either": "x"}):
        assert reg.check("page", {"query": "q", **args}).problem is None, args
    for args in ({"limit": "3"}, {"mode": "c"}, {"tags": [1]}, {"either": 1.5}):
        assert reg.check("page", {"query": "q", **args}).problem == "bad_arguments", args


async def test_plain_input_goes_to_an_optional_string_parameter_when_it_is_the_only_one() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def note(text: str | None = None) -> str:
        """Note."""
        return f"noted {text}"

    assert (await reg.call("note", {"input": "milk"}, CTX)).observation == "noted milk"


async def test_unknown_tool_lists_the_known_ones(registry: ToolRegistry) -> None:
    result = await registry.call("search", {}, CTX)
    assert not result.ok
    assert result.observation == (
        "Error: unknown tool 'search'; use one of: add, sleepy, boom, whoami"
    )


async def test_tool_names_are_matched_forgiving_case_and_decoration(registry: ToolRegistry) -> None:
    result = await registry.call(" `ADD` ", {"a": 1, "b": 1}, CTX)
    assert result.ok and result.observation == "2"


async def test_missing_argument_explains_the_expected_schema(registry: ToolRegistry) -> None:
    result = await registry.call("add", {}, CTX)
    assert not result.ok
    assert result.observation == (
        "Error: bad arguments for add: 'a' is a required property. Its parameters (JSON Schema): "
        + json.dumps(registry.get("add").parameters)
    )


async def test_wrong_type_names_the_argument(registry: ToolRegistry) -> None:
    result = await registry.call("add", {"a": "forty"}, CTX)
    assert not result.ok
    assert result.observation.startswith("Error: bad arguments for add: a: 'forty' is not of type")


@pytest.mark.parametrize("args", [[1, 2], "a=1", 7, True])
async def test_non_object_arguments_are_an_error(registry: ToolRegistry, args: object) -> None:
    result = await registry.call("add", args, CTX)
    assert not result.ok
    assert result.observation.startswith("Error: arguments for add must be a JSON object, got")


async def test_timeout_becomes_an_observation(registry: ToolRegistry) -> None:
    result = await registry.call("sleepy", {}, CTX)
    assert not result.ok
    assert result.observation == "Error: sleepy timed out after 0.05s"


async def test_exception_becomes_an_observation_and_is_logged(
    registry: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="agent.tools.registry"):
        result = await registry.call("boom", {}, CTX)
    assert not result.ok
    assert result.observation == "Error: boom failed: RuntimeError: kaput"
    assert any("boom" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_tool_error_message_is_shown_as_is() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def picky(x: int) -> str:
        """Refuses."""
        raise ToolError("x must be even; try 2")

    result = await reg.call("picky", {"x": 1}, CTX)
    assert (result.ok, result.observation) == (False, "Error: x must be even; try 2")


async def test_a_returned_error_text_counts_as_failure() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def soft() -> str:
        """Reports an error as text."""
        return "Error: nothing found"

    result = await reg.call("soft", {}, CTX)
    assert not result.ok


async def test_plain_input_goes_to_the_single_string_parameter() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text.upper()

    result = await reg.call("echo", {"input": "hi"}, CTX)
    assert (result.ok, result.observation) == (True, "HI")


async def test_plain_input_goes_to_the_single_required_string_parameter() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def forecast(place: str, days: int = 1) -> str:
        """Forecast."""
        return f"{place}/{days}"

    @reg.tool
    async def pair(a: str, b: str) -> str:
        """Two required strings: no guessing."""
        return a + b

    assert (await reg.call("forecast", {"input": "Oslo"}, CTX)).observation == "Oslo/1"
    assert not (await reg.call("pair", {"input": "x"}, CTX)).ok


async def test_long_observations_are_truncated_visibly() -> None:
    reg = ToolRegistry(max_observation_chars=100)

    @reg.tool
    async def flood() -> str:
        """Returns a lot."""
        return "x" * 1000

    result = await reg.call("flood", {}, CTX)
    assert result.ok
    assert result.observation == "x" * 100 + "\n[truncated: 900 more characters]"


async def test_none_and_other_values_become_text() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def nothing() -> None:
        """Returns nothing."""

    @reg.tool
    async def listing() -> list:
        """Returns a list."""
        return ["é", 1]

    assert (await reg.call("nothing", {}, CTX)).observation == "(no output)"
    assert (await reg.call("listing", {}, CTX)).observation == '["é", 1]'


async def test_concurrent_calls_do_not_interfere(registry: ToolRegistry) -> None:
    results = await asyncio.gather(*(registry.call("add", {"a": i, "b": i}, CTX) for i in range(50)))
    assert [r.observation for r in results] == [str(2 * i) for i in range(50)]


async def test_cancelling_the_caller_propagates(registry: ToolRegistry) -> None:
    task = asyncio.create_task(registry.call("sleepy", {}, CTX))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_tool_from_function_can_be_registered_directly() -> None:
    async def ping() -> str:
        """Ping."""
        return "pong"

    reg = ToolRegistry()
    reg.register(Tool.from_function(ping, name="ping2"))
    assert reg.names() == ["ping2"]
    assert reg.get("ping2").description == "Ping."
