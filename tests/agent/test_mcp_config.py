"""The MCP_CONFIG file: the shared mcpServers format, ${VAR}s, per-server options, and one
line per problem that names the server and never shows a value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.tools.mcp import parse_mcp_config, read_mcp_config, tool_name

SECRET = "ghp_supersecretvalue123"


def parse(servers: Any, env: dict[str, str] | None = None, **top: Any):
    return parse_mcp_config(json.dumps({"mcpServers": servers, **top}), env or {})


def test_a_stdio_and_an_http_entry_in_the_shared_format() -> None:
    cfg = parse({
        "files": {"command": "npx", "args": ["-y", "server-fs", "/srv"], "env": {"LOG": "1"}},
        "hub": {"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "ops"}},
    })
    assert cfg.problems == () and cfg.disabled == ()
    files, hub = cfg.servers
    assert (files.name, files.transport, files.command, files.args) == ("files", "stdio", "npx",
                                                                         ("-y", "server-fs", "/srv"))
    assert dict(files.env) == {"LOG": "1"}
    assert (hub.transport, hub.url, dict(hub.headers)) == ("http", "https://mcp.example.com/mcp",
                                                           {"X-Team": "ops"})
    assert not files.send_context and files.tools is None and files.timeout_s is None


def test_variables_are_resolved_from_the_environment_and_kept_as_secrets() -> None:
    cfg = parse({"gh": {"url": "https://api.example.com/mcp",
                        "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}},
                {"GITHUB_TOKEN": SECRET})
    (gh,) = cfg.servers
    assert gh.headers["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(cfg)
    assert gh.scrub(f"refused Bearer {SECRET}") == "refused [secret]"  # the whole header value
    assert gh.scrub(f"token={SECRET}&x=1") == "token=[secret]&x=1"  # and the variable's value


def test_an_unset_variable_names_the_key_and_the_variable_and_the_other_servers_stand() -> None:
    cfg = parse({"gh": {"command": "gh-mcp", "env": {"TOKEN": "${GITHUB_TOKEN}"}},
                 "ok": {"command": "other"}})
    assert [s.name for s in cfg.servers] == ["ok"]
    assert cfg.problems == (("gh", '"env.TOKEN" refers to ${GITHUB_TOKEN}, which is not set in the environment'),)


def test_per_server_options() -> None:
    cfg = parse({"a": {"command": "x", "tools": ["read", "write"], "timeout_s": 2.5, "send_context": True},
                 "b": {"command": "y", "enabled": False}})
    (a,) = cfg.servers
    assert (a.tools, a.timeout_s, a.send_context) == (frozenset({"read", "write"}), 2.5, True)
    assert cfg.disabled == ("b",)


def test_a_disabled_entry_is_not_checked_beyond_its_keys() -> None:
    cfg = parse({"b": {"command": "y", "env": {"K": "${UNSET}"}, "enabled": False}})
    assert cfg.problems == () and cfg.disabled == ("b",)


@pytest.mark.parametrize(("entry", "cause"), [
    ({"command": "x", "argz": []}, "unknown key(s) argz for a stdio server"),
    ({"url": "https://h/mcp", "env": {}}, "unknown key(s) env for a http server"),
    ({"command": "x", "url": "https://h/mcp"}, 'an entry needs either "command"'),
    ({}, 'an entry needs either "command"'),
    ({"type": "sse", "url": "https://h/sse"}, "is not supported"),
    ({"type": "stdio", "url": "https://h/mcp"}, 'a stdio server needs "command"'),
    ({"command": ""}, '"command" must not be empty'),
    ({"command": 5}, '"command" must be a string'),
    ({"command": "x", "args": "--flag"}, '"args" must be a list of strings'),
    ({"command": "x", "args": [1]}, '"args[0]" must be a string'),
    ({"command": "x", "env": {"K": 1}}, '"env.K" must be a string'),
    ({"command": "x", "env": {"1BAD": "v"}}, '"env" names must be'),
    ({"command": "x", "enabled": "yes"}, '"enabled" must be true or false'),
    ({"command": "x", "tools": "read"}, '"tools" must be a list of tool names'),
    ({"command": "x", "timeout_s": 0}, '"timeout_s" must be a number'),
    ({"command": "x", "timeout_s": True}, '"timeout_s" must be a number'),
    ({"command": "x", "send_context": 1}, '"send_context" must be true or false'),
    ({"url": "ftp://h/mcp"}, '"url" must be an http:// or https:// URL'),
    ({"url": "https://h/mcp", "headers": ["a"]}, '"headers" must be an object of strings'),
    ({"command": "x", "env": {"K": "${bad name}"}}, "bad variable name"),
    ("npx server", "the entry must be a JSON object"),
])
def test_a_bad_entry_is_one_line_naming_its_cause(entry: Any, cause: str) -> None:
    cfg = parse({"srv": entry, "fine": {"command": "ok"}})
    assert [s.name for s in cfg.servers] == ["fine"]
    ((name, said),) = cfg.problems
    assert name == "srv" and cause in said and "\n" not in said


def test_a_bad_value_is_never_shown_in_the_problem() -> None:
    cfg = parse({"s": {"command": "x", "env": {"TOKEN": 12345}, "headerz": SECRET}})
    assert SECRET not in repr(cfg.problems)
    cfg = parse({"s": {"url": SECRET}})
    assert SECRET not in repr(cfg.problems)


@pytest.mark.parametrize("name", ["has space", "dots.in.it", "-dash-first", "x" * 33, ""])
def test_a_server_name_must_be_usable_as_a_tool_prefix(name: str) -> None:
    cfg = parse({name: {"command": "x"}})
    assert cfg.servers == () and "server name must be" in cfg.problems[0][1]


@pytest.mark.parametrize(("text", "cause"), [
    ('{"mcpServers": {"a": {"command": "x",}}}', "is not valid JSON: Expecting property name"),
    ("", "is not valid JSON"),
    ("[]", 'must be a JSON object with an "mcpServers" object'),
    ('{"servers": {}}', 'must be a JSON object with an "mcpServers" object'),
    ('{"mcpServers": []}', 'must be a JSON object with an "mcpServers" object'),
])
def test_a_bad_file_is_one_problem_for_the_whole_file(text: str, cause: str) -> None:
    cfg = parse_mcp_config(text, {}, path="/etc/bot/mcp.json")
    assert cfg.servers == ()
    ((name, said),) = cfg.problems
    assert name == "" and said.startswith("MCP_CONFIG file /etc/bot/mcp.json") and cause in said


def test_an_unknown_top_level_key_is_named_and_the_servers_still_load() -> None:
    cfg = parse({"a": {"command": "x"}}, inputs=[])
    assert [s.name for s in cfg.servers] == ["a"]
    assert cfg.problems == (("", 'MCP_CONFIG file MCP_CONFIG: unknown top-level key(s) inputs '
                                 '(only "mcpServers" is read)'),)


def test_reading_a_missing_file_or_none(tmp_path: Path) -> None:
    assert not read_mcp_config(None, {}).configured
    missing = read_mcp_config(tmp_path / "nope.json", {})
    assert missing.configured and missing.problems == (
        ("", f"MCP_CONFIG file {tmp_path / 'nope.json'} does not exist"),)
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"a": {"command": "x"}}}')
    assert [s.name for s in read_mcp_config(path, {}).servers] == ["a"]


def test_a_huge_file_of_servers_parses() -> None:
    cfg = parse({f"s{i}": {"command": "x", "args": ["a"] * 50} for i in range(2000)})
    assert len(cfg.servers) == 2000 and cfg.problems == ()


@pytest.mark.parametrize(("server", "tool", "expected"), [
    ("files", "read_file", "files__read_file"),
    ("files", "read.file here", "files__read_file_here"),
    ("gh", "créer", "gh__cr_er"),
])
def test_tool_names_say_their_server_and_are_safe_for_every_protocol(server: str, tool: str, expected: str) -> None:
    assert tool_name(server, tool) == expected


def test_a_long_tool_name_is_cut_to_64_characters_and_stays_distinct() -> None:
    a, b = tool_name("server", "x" * 100 + "a"), tool_name("server", "x" * 100 + "b")
    assert len(a) == len(b) == 64 and a != b and a.startswith("server__xxx")
