"""MCP tools end to end: a question in the console chat (a `python -m bot chat` subprocess) and
on the fake Discord is answered through a tool of the test MCP server, in both protocols, and
`/trace` shows the call; `python -m bot check` lists the servers; the runtime starts without a
broken server and follows a server's list_changed."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import psutil
import pytest

from agent.tools.registry import ToolContext
from bot.process.check import check_mcp
from bot.settings.config import load_settings
from tests.bot.conftest import ask, system_text
from tests.bot.discord_fixtures import World, answer, final_answers, shows
from tests.bot.test_check import check_process, check_env, fix_after, line
from tests.bot.test_console import chat
from tests.fakes.mcp_http import McpHttpServer, stdio_entry
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts processes or loads the model: handed out first (tests/conftest.py)

HEADER_SECRET = "hdr-Zx81Kq0Lm2Vb"


def write_config(tmp_path: Path, **servers: dict[str, Any]) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def script_a_call(fake: FakeOpenAI, protocol: str, tool: str, args: dict[str, Any], final: str) -> None:
    if protocol == "text":
        fake.reply(f"Thought: the server can tell.\nAction: {tool}\nAction Input: {json.dumps(args)}")
        fake.reply(f"Final Answer: {final}")
    else:
        fake.reply(content="", tool_calls=[{"name": tool, "arguments": args}])
        fake.reply(final)


def offered_tools(request: dict[str, Any], protocol: str) -> str:
    """Where the model is shown the catalog: the system prompt, or the request's `tools`."""
    if protocol == "text":
        return system_text(request)
    return json.dumps([t["function"]["name"] for t in request.get("tools") or []])


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_the_console_answers_through_an_mcp_tool_and_trace_shows_it(
        fake: FakeOpenAI, env: dict[str, str], tmp_path: Path, protocol: str) -> None:
    config = write_config(tmp_path, probe=stdio_entry())
    script_a_call(fake, protocol, "probe__pid", {}, "The server runs as some process.")
    code, out, err = await chat({**env, "MCP_CONFIG": config, "LLM_PROTOCOL": protocol}, tmp_path,
                                "Which process is the MCP server?\n/trace\n")
    assert code == 0, err
    assert "probe__pid" in offered_tools(fake.requests[0], protocol)
    assert "tool: probe__pid" in out
    pid = int(out.split("observation: ", 1)[1].split()[0])
    trace = out.split("Trace of:", 1)[1]
    assert "tool: probe__pid" in trace and f"observation: {pid}" in trace
    assert "The server runs as some process." in out
    assert not psutil.pid_exists(pid)  # the chat stopped its stdio child on the way out
    assert "Traceback" not in err


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_a_discord_mention_is_answered_through_an_http_mcp_tool_and_trace_shows_it(
        world: World, run_bot, fake: FakeOpenAI, tmp_path: Path, protocol: str) -> None:
    async with McpHttpServer() as http:
        config = write_config(tmp_path, remote={"url": http.url})
        running = await run_bot(MCP_CONFIG=config, LLM_PROTOCOL=protocol)
        script_a_call(fake, protocol, "remote__add", {"a": 19, "b": 23}, "19 + 23 = 42")
        asked = await world.dc.user_says(world.general, world.alice, "19 plus 23?", mention_bot=True)
        answered = await answer(world, asked)
        await shows(world, answered, "19 + 23 = 42")
        assert await running.pipeline.tracker.wait_idle(10)  # the reply is shown before its trace is stored
        assert "remote__add" in offered_tools(fake.requests[0], protocol)
        inter = await world.dc.invoke_command(world.general, world.alice, "trace")
        await world.dc.wait_for(lambda: final_answers(inter))
        steps = [m.content for m in world.dc.messages_in(answered.id)]
        assert steps[0].startswith("**Step 1** · `remote__add` · ok")
        assert '"a": 19' in steps[0] and "42" in steps[0]


async def test_the_runtime_starts_without_a_broken_server_and_says_so(
        make_runtime, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with McpHttpServer() as http:
        config = write_config(tmp_path, ok={"url": http.url, "tools": ["echo", "grow", "late"]},
                              gone={"command": "/nonexistent/server"}, typo={"url": http.url, "hedaers": {}})
        with caplog.at_level(logging.WARNING):
            async with make_runtime(MCP_CONFIG=config) as rt:
                names = rt.agent.tools.names()
                assert "calculator" in names and "ok__echo" in names
                assert not any(n.startswith(("gone__", "typo__")) for n in names)
                said = caplog.text
                assert "MCP server gone: cannot start command 'server': no such file or command" in said
                assert "MCP server typo: unknown key(s) hedaers" in said
                result = await rt.pipeline.handle(ask("hi"))  # the bot answers all the same
                assert result.outcome == "answered"

                ctx = ToolContext(user_id="1", channel_id="2", guild_id="3")
                assert (await rt.agent.tools.call("ok__grow", {}, ctx)).observation == "grown"
                async with asyncio.timeout(15):
                    while "ok__late" not in rt.agent.tools:
                        await asyncio.sleep(0.02)
                assert "ok__late" in rt.tools


async def test_check_lists_each_server_with_its_tools_or_why_it_failed(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        local=stdio_entry(tools=["echo", "add"]),
        broken={"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}},
        off={"command": "x", "enabled": False},
        unset={"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "${NOT_SET}"}},
    )
    code, out, err = await check_process(check_env(fake, tmp_path / "data", MCP_CONFIG=config,
                                           MCP_TOKEN=HEADER_SECRET), tmp_path)
    assert code == 1, out
    assert line(out, "MCP local").startswith("ok") and "2 tool(s): local__echo, local__add" in out
    assert line(out, "MCP broken").startswith("fail") and "nothing answers at URL http://127.0.0.1:9" in out
    assert "check its command or URL" in fix_after(out, "MCP broken")
    assert line(out, "MCP off").startswith("skip")
    assert "refers to ${NOT_SET}, which is not set" in line(out, "MCP unset")
    assert HEADER_SECRET not in out + err
    assert "Traceback" not in out + err


async def test_check_without_mcp_config_skips_the_mcp_line(env: dict[str, str]) -> None:
    [result] = await check_mcp(load_settings(env))
    assert (result.name, result.status, result.detail) == ("MCP servers", "skip",
                                                           "MCP_CONFIG is not set: no MCP tools")


@pytest.mark.parametrize(("text", "status", "detail"), [
    ('{"mcpServers": {"a": ', "fail", "is not valid JSON: Expecting value at line 1 column 22"),
    ('{"mcpServers": {}}', "skip", "lists no servers"),
])
async def test_check_names_a_bad_or_empty_file(env: dict[str, str], tmp_path: Path,
                                               text: str, status: str, detail: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(text)
    [result] = await check_mcp(load_settings({**env, "MCP_CONFIG": str(path)}))
    assert (result.name, result.status) == ("MCP servers", status)
    assert detail in result.detail and str(path) in result.detail
