"""The MCP_CONFIG file: the ``{"mcpServers": {...}}`` format that MCP clients share.

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
                   "env": {"LOG": "1"}, "tools": ["read_file"], "timeout_s": 20},
        "github": {"url": "https://api.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}, "send_context": true},
        "old":    {"command": "old-server", "enabled": false}}}

An entry with ``command`` is a stdio server (``args``, ``env``, ``cwd``), one with ``url`` a
streamable-HTTP server (``headers``); ``type`` ("stdio", "http", "streamable-http") may say it
again. Every entry may set ``enabled`` (default true), ``tools`` (an allow-list of the server's
tool names: only these are offered to the model), ``timeout_s`` (per call; default the bot's
tool timeout) and ``send_context`` (default false: the asking user, channel and guild are sent
to the server in the call's ``_meta`` only when true). ``${VAR}`` in any string value is
replaced by that variable of the environment given, so secrets stay in the env file.

`parse_mcp_config` never raises for what is in the file: a file that cannot be read or parsed
is one problem for the whole file; an entry with an unknown key, a wrong type or an unset
variable is one problem naming that server, and the other servers stand. No message ever shows
a value from the file or the environment (they may be secrets): only key and variable names.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["McpConfig", "ServerConfig", "parse_mcp_config", "read_mcp_config"]

Transport = Literal["stdio", "http"]

SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_VAR_RE = re.compile(r"\$\{([^}]*)\}")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COMMON_KEYS = {"type", "enabled", "tools", "timeout_s", "send_context"}
_KEYS: dict[Transport, set[str]] = {
    "stdio": _COMMON_KEYS | {"command", "args", "env", "cwd"},
    "http": _COMMON_KEYS | {"url", "headers"},
}
_TYPES: dict[str, Transport] = {"stdio": "stdio", "http": "http", "streamable-http": "http",
                                "streamableHttp": "http", "streamable_http": "http"}


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One enabled server, with every ``${VAR}`` resolved. ``secrets`` are the values that
    came from the environment or sit in ``env``/``headers``: blanked from any message."""

    name: str
    transport: Transport
    command: str = field(default="", repr=False)  # resolved values may hold secrets: no repr
    args: tuple[str, ...] = field(default=(), repr=False)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = field(default=None, repr=False)
    url: str = field(default="", repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    tools: frozenset[str] | None = None  # None: every tool the server lists
    timeout_s: float | None = None  # None: the registry's default
    send_context: bool = False
    secrets: tuple[str, ...] = field(default=(), repr=False)
    # the variables whose values went into ``env``, ``headers`` or ``url``: where secrets go,
    # so the bot drops them from its own environment once read (bot.credentials)
    secret_vars: tuple[str, ...] = ()

    def where(self) -> str:
        """What to name the server by in a message: its command or its URL's scheme and host."""
        if self.transport == "stdio":
            return f"command {Path(self.command).name!r}"
        return f"URL {_url_origin(self.url)}"

    def scrub(self, text: str) -> str:
        """``text`` with every secret of this entry replaced by ``[secret]``."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "[secret]")
        return text


@dataclass(frozen=True, slots=True)
class McpConfig:
    """What the file said: the servers to start, the disabled ones, and one line per problem."""

    path: str | None = None
    servers: tuple[ServerConfig, ...] = ()
    disabled: tuple[str, ...] = ()
    problems: tuple[tuple[str, str], ...] = ()  # (server name, or "" for the whole file; cause)

    @property
    def configured(self) -> bool:
        return self.path is not None


def read_mcp_config(path: str | Path | None, env: Mapping[str, str]) -> McpConfig:
    """Read and parse the file at ``path`` (None: no MCP servers)."""
    if path is None:
        return McpConfig()
    shown = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return McpConfig(shown, problems=(("", f"MCP_CONFIG file {shown} does not exist"),))
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        return McpConfig(shown, problems=(("", f"MCP_CONFIG file {shown} cannot be read: {why}"),))
    return parse_mcp_config(text, env, path=shown)


def parse_mcp_config(text: str, env: Mapping[str, str], *, path: str = "MCP_CONFIG") -> McpConfig:
    """Parse the file's text; see the module docstring for the format and the problems."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:  # msg and position only: never the document
        return McpConfig(path, problems=(
            ("", f"MCP_CONFIG file {path} is not valid JSON: {exc.msg} at line {exc.lineno} "
                 f"column {exc.colno}"),))
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        return McpConfig(path, problems=(
            ("", f'MCP_CONFIG file {path} must be a JSON object with an "mcpServers" object'),))
    extra = sorted(set(data) - {"mcpServers"})
    problems: list[tuple[str, str]] = []
    if extra:
        problems.append(("", f"MCP_CONFIG file {path}: unknown top-level key(s) {', '.join(extra)} "
                             '(only "mcpServers" is read)'))
    servers: list[ServerConfig] = []
    disabled: list[str] = []
    for name, entry in data["mcpServers"].items():
        try:
            server = _server(name, entry, env)
        except _EntryError as exc:
            problems.append((name, str(exc)))
            continue
        if server is None:
            disabled.append(name)
        else:
            servers.append(server)
    return McpConfig(path, tuple(servers), tuple(disabled), tuple(problems))


class _EntryError(Exception):
    """One entry is unusable; the message names the key, never a value."""


def _server(name: str, entry: object, env: Mapping[str, str]) -> ServerConfig | None:
    if not SERVER_NAME_RE.match(name):
        raise _EntryError("a server name must be 1-32 letters, digits, '_' or '-', starting with "
                          "a letter or digit (it prefixes the names of its tools)")
    if not isinstance(entry, dict):
        raise _EntryError("the entry must be a JSON object")
    transport = _transport(entry)
    unknown = sorted(set(entry) - _KEYS[transport])
    if unknown:
        raise _EntryError(f"unknown key(s) {', '.join(unknown)} for a {transport} server "
                          f"(known: {', '.join(sorted(_KEYS[transport]))})")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise _EntryError('"enabled" must be true or false')
    if not enabled:
        return None
    secrets: list[str] = []
    secret_vars: list[str] = []
    resolve = _Resolver(env, secrets, secret_vars)
    tools = entry.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)):
        raise _EntryError('"tools" must be a list of tool names')
    timeout = entry.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout <= 3600):
        raise _EntryError('"timeout_s" must be a number of seconds above 0 and at most 3600')
    send_context = entry.get("send_context", False)
    if not isinstance(send_context, bool):
        raise _EntryError('"send_context" must be true or false')
    common = dict(name=name, tools=frozenset(tools) if tools is not None else None,
                  timeout_s=float(timeout) if timeout is not None else None,
                  send_context=send_context)
    if transport == "stdio":
        command = resolve("command", entry.get("command"))
        if not command:
            raise _EntryError('"command" must not be empty')
        args = entry.get("args", [])
        if not isinstance(args, list):
            raise _EntryError('"args" must be a list of strings')
        server_env = _string_map("env", entry.get("env", {}), resolve)
        if not all(_ENV_NAME_RE.match(k) for k in server_env):
            raise _EntryError('"env" names must be letters, digits and "_", not starting with a digit')
        cwd = entry.get("cwd")
        secrets += server_env.values()
        return ServerConfig(
            transport="stdio", command=command,
            args=tuple(resolve(f"args[{i}]", a) for i, a in enumerate(args)),
            env=server_env, cwd=resolve("cwd", cwd) if cwd is not None else None,
            secrets=tuple(s for s in secrets if s), secret_vars=tuple(secret_vars), **common)
    url = resolve("url", entry.get("url"))
    if not re.match(r"^https?://[^/\s]+", url):
        raise _EntryError('"url" must be an http:// or https:// URL')
    headers = _string_map("headers", entry.get("headers", {}), resolve)
    secrets += headers.values()
    return ServerConfig(transport="http", url=url, headers=headers,
                        secrets=tuple(s for s in secrets if s), secret_vars=tuple(secret_vars), **common)


def _transport(entry: Mapping[str, object]) -> Transport:
    kind = entry.get("type")
    if kind is not None:
        if kind == "sse":
            raise _EntryError('"type": "sse" (the old HTTP+SSE transport) is not supported; '
                              "use the server's streamable-HTTP endpoint")
        if not isinstance(kind, str) or kind not in _TYPES:
            raise _EntryError('"type" must be "stdio" or "http" (streamable HTTP)')
        transport = _TYPES[kind]
    elif "command" in entry and "url" not in entry:
        transport = "stdio"
    elif "url" in entry and "command" not in entry:
        transport = "http"
    else:
        raise _EntryError('an entry needs either "command" (a stdio server) or "url" '
                          "(a streamable-HTTP server)")
    needed = "command" if transport == "stdio" else "url"
    if needed not in entry:
        raise _EntryError(f'a {transport} server needs "{needed}"')
    return transport


class _Resolver:
    """Checks that a value is a string and replaces its ``${VAR}``s; records what it put in,
    and the names of the variables it put into ``env``, ``headers`` or ``url``."""

    _SECRET_KEYS = ("env.", "headers.", "url")

    def __init__(self, env: Mapping[str, str], secrets: list[str], secret_vars: list[str]) -> None:
        self._env = env
        self._secrets = secrets
        self._secret_vars = secret_vars

    def __call__(self, key: str, value: object) -> str:
        if not isinstance(value, str):
            raise _EntryError(f'"{key}" must be a string')

        def substitute(match: re.Match[str]) -> str:
            var = match.group(1)
            if not _ENV_NAME_RE.match(var):
                raise _EntryError(f'"{key}" has ${{...}} with a bad variable name')
            found = self._env.get(var)
            if found is None or not found.strip():
                raise _EntryError(f'"{key}" refers to ${{{var}}}, which is not set in the environment')
            self._secrets.append(found)
            if key.startswith(self._SECRET_KEYS) and var not in self._secret_vars:
                self._secret_vars.append(var)
            return found

        return _VAR_RE.sub(substitute, value)


def _string_map(key: str, value: object, resolve: _Resolver) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _EntryError(f'"{key}" must be an object of strings')
    return {k: resolve(f"{key}.{k}", v) for k, v in value.items()}


def _url_origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL: never its path, query or user info (secrets hide there)."""
    match = re.match(r"^(https?://)(?:[^@/]*@)?([^/?#]+)", url)
    return f"{match.group(1)}{match.group(2)}" if match else "(unparsable URL)"
