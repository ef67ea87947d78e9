"""MCP tools against a real MCP server (tests/fakes/mcp_server.py, built with the SDK's FastMCP),
over stdio and over streamable HTTP on loopback, through the real SDK client and the registry.

One server per transport is shared by the tests that leave it as they found it; the tests that
crash it, change its tool list or need another entry start their own."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import psutil
import pytest
import pytest_asyncio

from agent.tools.mcp import CONTEXT_META_KEY, McpTools, parse_mcp_config
from agent.tools.mcp.manager import MAX_SCHEMA_CHARS
from agent.tools.registry import DEFAULT_MAX_OBSERVATION_CHARS, ToolContext
from tests.fakes.mcp_http import McpHttpServer, stdio_entry
from tests.fakes.mcp_server import IMAGE_BYTES

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]  # starts MCP server processes: handed out first (tests/conftest.py)

CTX = ToolContext(user_id="42", channel_id="7", guild_id="1", display_name="Ada")


def config(env: dict[str, str] | None = None, **servers: dict[str, Any]):
    return parse_mcp_config(json.dumps({"mcpServers": servers}), env or {})


async def wait_until(check: Callable[[], bool], timeout_s: float = 15.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not check():
            await asyncio.sleep(0.02)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http_server() -> AsyncIterator[McpHttpServer]:
    async with McpHttpServer() as server:
        yield server


def entry_for(transport: str, http_server: McpHttpServer, **extra: Any) -> dict[str, Any]:
    return stdio_entry(**extra) if transport == "stdio" else {"url": http_server.url, **extra}


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["stdio", "http"])
async def shared(request: pytest.FixtureRequest, http_server: McpHttpServer) -> AsyncIterator[McpTools]:
    async with McpTools(config(t=entry_for(request.param, http_server))) as mcp:
        yield mcp


async def call(mcp: McpTools, name: str, args: dict[str, Any] | None = None, ctx: ToolContext = CTX):
    return await mcp.registry().call(name, args or {}, ctx)


# -- on the shared servers ------------------------------------------------------------------


async def test_tools_are_listed_under_the_server_name_with_the_servers_schema(shared: McpTools) -> None:
    registry = shared.registry()
    assert {"t__echo", "t__add", "t__fail", "t__hang", "t__image"} <= set(registry.names())
    add = registry.get("t__add")
    assert add is not None and add.description == "Add two whole numbers."
    assert add.parameters["properties"].keys() == {"a", "b"}
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert sorted(add.parameters["required"]) == ["a", "b"]
    assert add.timeout_s > 15  # past the call's own timeout (the registry's default, 15 s)


async def test_a_tool_whose_schema_is_too_large_is_left_out_and_the_others_are_offered(shared: McpTools) -> None:
    names = shared.registry().names()
    assert "t__huge_schema" not in names and "t__echo" in names


async def test_a_tool_left_out_is_warned_about_once_not_at_every_rebuild(caplog: pytest.LogCaptureFixture) -> None:
    async with McpTools(config(t=stdio_entry())) as mcp:
        for _ in range(3):  # a rebuild, as each list_changed asks for
            assert "t__huge_schema" not in mcp.registry().names()
    warned = [r.getMessage() for r in caplog.records if "huge_schema" in r.getMessage()]
    assert warned == [f"MCP server t: tool 'huge_schema' has an input schema of over {MAX_SCHEMA_CHARS} "
                      "characters; left out"]


async def test_a_name_that_is_not_an_identifier_is_made_safe(shared: McpTools) -> None:
    result = await call(shared, "t__odd_name-x")
    assert (result.ok, result.observation) == (True, "odd")
    assert "odd.name-x" not in shared.registry().names()


async def test_a_call_returns_the_text_content(shared: McpTools) -> None:
    result = await call(shared, "t__echo", {"text": "hello, MCP"})
    assert (result.ok, result.observation) == (True, "hello, MCP")


async def test_a_typed_result_comes_back_as_its_value(shared: McpTools) -> None:
    result = await call(shared, "t__add", {"a": 2, "b": 40})
    assert (result.ok, result.observation) == (True, "42")


async def test_concurrent_calls_each_get_their_own_answer(shared: McpTools) -> None:
    results = await asyncio.gather(*(call(shared, "t__echo", {"text": f"n{i}"}) for i in range(20)))
    assert [r.observation for r in results] == [f"n{i}" for i in range(20)]


async def test_an_error_result_is_a_recoverable_tool_error(shared: McpTools) -> None:
    result = await call(shared, "t__fail", {"reason": "the disk is on fire"})
    assert not result.ok
    assert result.observation.startswith("Error: t__fail failed:")
    assert "the disk is on fire" in result.observation
    assert (await call(shared, "t__echo", {"text": "still here"})).observation == "still here"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_hanging_call_times_out_and_the_server_still_answers(
        transport: str, http_server: McpHttpServer) -> None:
    async with McpTools(config(t=entry_for(transport, http_server, timeout_s=0.5))) as mcp:
        result = await call(mcp, "t__hang")
        assert (result.ok, result.observation) == (False, "Error: t__hang timed out after 0.5s")
        assert (await call(mcp, "t__echo", {"text": "after"})).observation == "after"


async def test_an_image_is_named_by_type_and_size_not_pasted(shared: McpTools) -> None:
    result = await call(shared, "t__image")
    assert result.ok
    assert result.observation == f"[image image/png, {IMAGE_BYTES} bytes: not shown]"


async def test_a_megabyte_of_text_is_cut_to_the_observation_limit_with_a_note(shared: McpTools) -> None:
    result = await call(shared, "t__big", {"n": 1_000_000})
    assert result.ok
    text, note = result.observation.rsplit("\n", 1)
    assert text == "x" * DEFAULT_MAX_OBSERVATION_CHARS
    assert note.startswith("[truncated:") and "more characters]" in note


async def test_arguments_that_fail_the_schema_never_reach_the_server(shared: McpTools) -> None:
    before = await call(shared, "t__calls")
    bad = await call(shared, "t__add", {"a": "two", "b": 2})
    assert not bad.ok
    assert bad.observation.startswith("Error: bad arguments for t__add: a: 'two' is not of type 'integer'")
    assert "Its parameters (JSON Schema):" in bad.observation
    missing = await call(shared, "t__add", {"a": 1})
    assert "'b' is a required property" in missing.observation
    after = await call(shared, "t__calls")
    assert after.observation == before.observation  # neither bad call was sent


async def test_the_tool_context_is_not_sent_without_opt_in(shared: McpTools) -> None:
    result = await call(shared, "t__context")
    assert result.observation == "null"


# -- servers of their own -------------------------------------------------------------------


@asynccontextmanager
async def own_server(transport: str) -> AsyncIterator[tuple[dict[str, Any], McpHttpServer | None]]:
    """An entry for a server of the test's own (a stdio child, or a new HTTP server)."""
    if transport == "stdio":
        yield stdio_entry(), None
        return
    async with McpHttpServer() as http:
        yield {"url": http.url}, http


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_list_changed_brings_the_new_tool_in(transport: str, http_server: McpHttpServer) -> None:
    # the only test that grows a server: on the shared HTTP one it adds a tool no other test lists
    changes: list[int] = []
    async with McpTools(config(t=entry_for(transport, http_server)),
                        on_change=lambda: changes.append(1)) as mcp:
        assert "t__late" not in mcp.registry()
        assert (await call(mcp, "t__grow")).observation == "grown"
        await wait_until(lambda: "t__late" in mcp.registry())
        assert changes
        assert (await call(mcp, "t__late")).observation == "late answer"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_server_that_crashes_mid_call_is_restarted(transport: str) -> None:
    async with own_server(transport) as (entry, http):
        async with McpTools(config(t={**entry, "timeout_s": 1}), backoff_s=0.05) as mcp:
            first = (await call(mcp, "t__pid")).observation
            crashed = await call(mcp, "t__crash")
            assert not crashed.ok
            assert crashed.observation.startswith("Error: MCP server t is unavailable")
            if http is not None:
                await http.restart()
            conn = mcp.connections[0]
            await wait_until(lambda: conn.state == "up")
            again = await call(mcp, "t__pid")
            assert again.ok and again.observation != first
            assert conn.restarts >= 1


async def test_a_server_that_exits_at_every_start_is_retried_with_backoff() -> None:
    exits = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
    async with McpTools(config(x=exits), backoff_s=0.05, max_backoff_s=0.2) as mcp:
        conn = mcp.connections[0]
        await wait_until(lambda: conn.restarts >= 2)
        assert conn.state in ("down", "starting") and "closed the connection" in (conn.cause or "")
        assert mcp.registry().names() == []


async def test_while_a_server_is_down_its_tools_answer_unavailable() -> None:
    async with McpTools(config(t=stdio_entry()), backoff_s=60) as mcp:
        await call(mcp, "t__crash")
        result = await call(mcp, "t__echo", {"text": "anyone?"})
        assert not result.ok
        assert result.observation.startswith("Error: MCP server t is unavailable: ")
        assert "try again later, or answer without it" in result.observation
        assert "t__echo" in mcp.registry()  # still offered: the server is coming back


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def opted_in() -> AsyncIterator[McpTools]:
    """A stdio server started while the bot's process holds its secrets, with an env of its
    own (from a ${VAR}) and the tool context opted in."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-bot-secret")
        patch.setenv("DISCORD_TOKEN", "discord-bot-secret")
        entry = stdio_entry(env={"GIVEN": "${SERVER_TOKEN}"}, send_context=True)
        async with McpTools(config({"SERVER_TOKEN": "for-the-server"}, t=entry)) as mcp:
            yield mcp


async def test_a_stdio_server_sees_only_its_own_env_never_the_bots_secrets(opted_in: McpTools) -> None:
    seen = {name: (await call(opted_in, "t__read_env", {"name": name})).observation
            for name in ("OPENAI_API_KEY", "DISCORD_TOKEN", "GIVEN", "PATH", "HOME")}
    assert seen["OPENAI_API_KEY"] == seen["DISCORD_TOKEN"] == "(unset)"
    assert seen["GIVEN"] == "for-the-server"
    assert seen["PATH"] == os.environ["PATH"] and seen["HOME"] == os.environ["HOME"]


async def test_the_tool_context_is_sent_when_the_entry_opts_in(opted_in: McpTools) -> None:
    result = await call(opted_in, "t__context")
    meta = json.loads(result.observation)
    assert meta[CONTEXT_META_KEY] == {"user_id": "42", "channel_id": "7", "guild_id": "1",
                                      "display_name": "Ada"}


async def test_http_headers_take_their_values_from_the_environment(http_server: McpHttpServer) -> None:
    env = {"API_TOKEN": "tok-123"}
    entry = {"url": http_server.url, "headers": {"Authorization": "Bearer ${API_TOKEN}"}}
    async with McpTools(config(env, t=entry)) as mcp:
        result = await call(mcp, "t__header", {"name": "authorization"})
    assert result.observation == "Bearer tok-123"


async def test_only_the_allowed_tools_are_offered(http_server: McpHttpServer) -> None:
    async with McpTools(config(t={"url": http_server.url, "tools": ["echo", "add", "nope"]})) as mcp:
        assert mcp.registry().names() == ["t__echo", "t__add"]


async def test_a_server_that_cannot_start_is_left_out_and_says_why(http_server: McpHttpServer) -> None:
    env = {"SECRET": "s3cr3t-value"}
    servers = {
        "good": {"url": http_server.url, "tools": ["echo"]},
        "nocmd": {"command": "/nonexistent/mcp-server", "env": {"K": "${SECRET}"}},
        "exits": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]},
        "refused": {"url": "http://127.0.0.1:9/mcp?token=${SECRET}"},
    }
    async with McpTools(config(env, **servers), backoff_s=60) as mcp:
        statuses = {s.name: s for s in mcp.statuses()}
        assert mcp.registry().names() == ["good__echo"]
    assert statuses["good"].state == "up" and statuses["good"].tools == ("good__echo",)
    assert statuses["nocmd"].cause == "cannot start command 'mcp-server': no such file or command"
    assert statuses["exits"].cause.endswith("closed the connection (the server exited?)")
    assert statuses["refused"].cause == "nothing answers at URL http://127.0.0.1:9"
    assert all(s.state == "down" for name, s in statuses.items() if name != "good")
    assert "s3cr3t" not in repr(statuses)


async def test_closing_leaves_no_process_even_a_server_that_ignores_stdin() -> None:
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    mute = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
    async with (McpTools(config(a=stdio_entry(), b=stdio_entry())) as mcp,
                McpTools(config(mute=mute), start_timeout_s=0.5, backoff_s=60) as muted):
        pids = [int((await call(mcp, f"{n}__pid")).observation) for n in ("a", "b")]
        started = {p.pid for p in me.children(recursive=True)} - before
        assert set(pids) <= started
        assert muted.statuses()[0].state in ("starting", "down")
        assert muted.registry().names() == []
    assert not {p.pid for p in me.children(recursive=True)} - before
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in started)
