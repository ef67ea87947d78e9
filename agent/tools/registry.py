"""Tool registry: async callables with a JSON Schema, validated before each call.

A tool is an ``async def`` whose parameters (apart from the runtime context) become a JSON
Schema, derived from the type hints and the Google-style ``Args:`` section of its docstring,
or given explicitly. Every call goes through ``ToolRegistry.check`` (the one validation path:
``call`` uses it, and so does the agent loop, which needs the verdict before the call to nudge
the model) and ``ToolRegistry.run``, which never raises: an unknown tool, arguments that fail
the schema, a timeout or an exception all become an observation starting with ``Error:`` that
tells the model what went wrong and what to do instead. A parameter hinted ``X | None`` accepts
null, which models send for an argument they mean to leave out.

Design choices:
- Tools must be coroutine functions; a plain function is refused at registration (TypeError).
  Blocking work belongs behind ``asyncio.to_thread`` inside the tool, where it is visible.
- The runtime context (``ToolContext``) is passed by the registry to a parameter named ``ctx``
  or annotated ``ToolContext``; it never appears in the schema, so the model cannot set it.
- Observations longer than ``max_observation_chars`` are cut with a visible ``[truncated ...]``
  note; dict and list results are sent as JSON text.
- A lone ``{"input": "..."}`` argument (what the parser makes of plain-text Action Input) is
  given to a tool's one string parameter (its only one, or its only required one), so
  ``Action Input: 2+2`` works for the calculator and ``Action Input: Oslo`` for the weather.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import time
import types
import typing
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema

log = logging.getLogger(__name__)

MAX_ARGUMENT_DEPTH = 32  # nesting of a call's arguments; deeper ones are refused before validation

__all__ = [
    "DEFAULT_MAX_OBSERVATION_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "CallProblem",
    "CheckedCall",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
]

DEFAULT_MAX_OBSERVATION_CHARS = 4000
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is asking and where; set by the runtime, never by the model."""

    user_id: str
    channel_id: str
    guild_id: str | None  # None = a DM
    display_name: str = ""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call produced: the text the model reads, and whether it succeeded."""

    observation: str  # errors start with "Error:"
    ok: bool
    elapsed_ms: float


CallProblem = Literal["unknown_tool", "bad_arguments"]


@dataclass(frozen=True, slots=True)
class CheckedCall:
    """A tool call checked by `ToolRegistry.check`: runnable (``problem`` None), or why not."""

    name: str  # the tool's registered name, or the name as the model wrote it when unknown
    tool: Tool | None
    args: dict[str, Any]  # the arguments as the tool takes them (after `Tool.adapt`)
    problem: CallProblem | None = None
    error: str = ""  # the "Error: ..." observation for the model when there is a problem


class ToolError(Exception):
    """Raised by a tool for an expected failure; its message is shown to the model as is."""


ToolFn = Callable[..., Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Tool:
    """A registered tool: name, description, JSON Schema of its arguments, and the callable."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: ToolFn
    timeout_s: float | None = None  # None: the registry's default
    ctx_param: str | None = None  # name of the parameter receiving the ToolContext
    validator: Any = field(default=None, compare=False, repr=False)

    def spec(self) -> dict[str, Any]:
        """Name, description and parameters: the function entry of the OpenAI ``tools`` list."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def adapt(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """``args`` as the tool takes them: a lone string ``{"input": x}`` goes to its one
        string parameter (see _adapt_input); anything else is unchanged."""
        return _adapt_input(dict(args), self.parameters)

    def check(self, args: Mapping[str, Any]) -> str | None:
        """Why ``args`` (after `adapt`) do not fit the schema (one short line), or None."""
        validator = self.validator or jsonschema.Draft202012Validator(self.parameters)
        error = jsonschema.exceptions.best_match(validator.iter_errors(self.adapt(args)))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message

    @classmethod
    def from_function(
        cls,
        fn: ToolFn,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> Tool:
        """Build a Tool from an ``async def``, deriving what is not given."""
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(
                f"tool {getattr(fn, '__name__', fn)!r} must be an async function; "
                "wrap blocking work in asyncio.to_thread inside it"
            )
        tool_name = name or fn.__name__
        if not _NAME_RE.match(tool_name):
            raise ValueError(
                f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'"
            )
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        ctx_param, derived = _schema_from_signature(fn, arg_docs)
        schema = parameters if parameters is not None else derived
        jsonschema.Draft202012Validator.check_schema(schema)
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError(f"tool {tool_name!r}: timeout_s must be positive, got {timeout_s}")
        return cls(
            name=tool_name,
            description=(description if description is not None else summary).strip(),
            parameters=schema,
            fn=fn,
            timeout_s=timeout_s,
            ctx_param=ctx_param,
            validator=jsonschema.Draft202012Validator(schema),
        )


class ToolRegistry:
    """The tools one agent run may call, by name."""

    def __init__(
        self,
        default_timeout_s: float = 15.0,
        *,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
    ) -> None:
        if default_timeout_s <= 0:
            raise ValueError(f"default_timeout_s must be positive, got {default_timeout_s}")
        self.default_timeout_s = default_timeout_s
        self.max_observation_chars = max_observation_chars
        self._tools: dict[str, Tool] = {}

    def tool(
        self,
        fn: ToolFn | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> Any:
        """Decorator registering ``async def f(ctx: ToolContext, a: int, b: str = "x")``.

        Usable bare (``@registry.tool``) or with options (``@registry.tool(timeout_s=5)``).
        The schema comes from type hints and the docstring's ``Args:`` section unless
        ``parameters`` is given; the first docstring paragraph is the description unless
        ``description`` is given. Returns the function unchanged.
        """

        def decorate(f: ToolFn) -> ToolFn:
            self.register(
                Tool.from_function(
                    f, name=name, description=description, parameters=parameters,
                    timeout_s=timeout_s,
                )
            )
            return f

        return decorate(fn) if fn is not None else decorate

    def register(self, tool: Tool) -> None:
        """Add a tool; a second tool with the same name raises ValueError."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        """The tool registered under exactly ``name``, or None."""
        return self._tools.get(name)

    def resolve(self, name: str) -> Tool | None:
        """The tool ``name`` means, forgiving case, spaces, quotes and backticks; or None."""
        if (tool := self._tools.get(name)) is not None:
            return tool
        wanted = _normalize_name(name)
        for tool in self._tools.values():
            if _normalize_name(tool.name) == wanted:
                return tool
        return None

    def unknown_tool_error(self, name: str) -> str:
        """The observation for a call of a tool that is not here: it lists the ones that are."""
        known = ", ".join(self._tools) or "(none: answer without tools)"
        return f"Error: unknown tool {name[:100]!r}; use one of: {known}"

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def openai_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` list of an OpenAI chat completion request."""
        return [{"type": "function", "function": tool.spec()} for tool in self._tools.values()]

    def merged(self, other: ToolRegistry) -> ToolRegistry:
        """A new registry with this one's tools, then ``other``'s; a shared name raises."""
        result = ToolRegistry(self.default_timeout_s, max_observation_chars=self.max_observation_chars)
        for tool in (*self, *other):
            result.register(tool)
        return result

    def check(self, name: str, args: object, *, raw: str | None = None) -> CheckedCall:
        """Check a call before it runs: the one validation path of every tool call.

        ``args`` None means no arguments; anything but a mapping is refused (``raw``, the text
        the model sent, is quoted then). The error, when there is one, is the observation the
        model reads: it names the tool and shows the parameters' JSON Schema.
        """
        tool = self.resolve(name) if isinstance(name, str) else None
        if tool is None:
            return CheckedCall(str(name), None, {}, "unknown_tool", self.unknown_tool_error(str(name)))
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            sent = f": {raw[:200]!r}" if raw is not None else ""
            return CheckedCall(
                tool.name, tool, {}, "bad_arguments",
                f"Error: arguments for {tool.name} must be a JSON object, got "
                f"{_json_type(args)}{sent}. Its parameters (JSON Schema): {_schema_text(tool)}",
            )
        if _nests_deeper(args, MAX_ARGUMENT_DEPTH):
            return CheckedCall(
                tool.name, tool, {}, "bad_arguments",
                f"Error: arguments for {tool.name} nest deeper than {MAX_ARGUMENT_DEPTH} levels. "
                f"Its parameters (JSON Schema): {_schema_text(tool)}",
            )
        if problem := tool.check(args):
            return CheckedCall(
                tool.name, tool, {}, "bad_arguments",
                f"Error: bad arguments for {tool.name}: {problem}. "
                f"Its parameters (JSON Schema): {_schema_text(tool)}",
            )
        return CheckedCall(tool.name, tool, tool.adapt(args))

    async def call(self, name: str, args: object, ctx: ToolContext) -> ToolResult:
        """Check and run a tool for the model. Never raises (except on cancellation of the caller)."""
        return await self.run(self.check(name, args), ctx)

    async def run(self, call: CheckedCall, ctx: ToolContext) -> ToolResult:
        """Run a call that `check` returned; a refused one gives its error as the result."""
        started = time.perf_counter()
        if call.tool is None or call.problem is not None:
            return self._result(call.error, False, started)
        return await self._run(call.tool, call.args, ctx, started)

    async def _run(
        self, tool: Tool, args: dict[str, Any], ctx: ToolContext, started: float
    ) -> ToolResult:
        timeout_s = tool.timeout_s or self.default_timeout_s
        kwargs = dict(args)
        if tool.ctx_param is not None:
            kwargs[tool.ctx_param] = ctx
        try:
            async with asyncio.timeout(timeout_s):
                value = await tool.fn(**kwargs)
        except TimeoutError:
            log.warning("tool %s timed out after %ss", tool.name, timeout_s)
            return self._result(f"Error: {tool.name} timed out after {timeout_s:g}s", False, started)
        except ToolError as exc:
            log.info("tool %s refused: %s", tool.name, exc)
            return self._result(f"Error: {exc}", False, started)
        except Exception as exc:  # a tool bug must not end the turn
            log.exception("tool %s failed", tool.name)
            return self._result(
                f"Error: {tool.name} failed: {type(exc).__name__}: {exc}", False, started
            )
        return self._result(_to_text(value), True, started)

    def _result(self, observation: str, ok: bool, started: float) -> ToolResult:
        return ToolResult(
            observation=_truncate(observation, self.max_observation_chars),
            ok=ok and not observation.startswith("Error:"),
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
        )


def _nests_deeper(value: object, limit: int) -> bool:
    """True when lists and dicts in ``value`` nest more than ``limit`` levels. Iterative: the
    schema validator, json.dumps and the trace all recurse, and fail on what this lets by."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, list) else ()
        if children and depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "(no output)"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[truncated: {cut} more characters]"


def _normalize_name(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().strip("`'\"*").strip()).lower()


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__


def _adapt_input(args: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Give a lone string ``{"input": x}`` to the tool's one string parameter.

    "One" means the single parameter, or else the single required one, when it is a string.
    """
    props = schema.get("properties")
    if (
        set(args) != {"input"}
        or not isinstance(args["input"], str)
        or not isinstance(props, Mapping)
        or "input" in props
    ):
        return args
    candidates = list(props) if len(props) == 1 else list(schema.get("required") or ())
    if len(candidates) != 1:
        return args
    prop = props.get(candidates[0])
    kind = prop.get("type") if isinstance(prop, Mapping) else None
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return {candidates[0]: args["input"]}
    return args


def _schema_text(tool: Tool) -> str:
    return json.dumps(tool.parameters, ensure_ascii=False)


_ARG_LINE_RE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (text before any section) and the ``Args:`` descriptions by name."""
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for raw in doc.splitlines():
        stripped = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if indent == 0 and re.match(r"^[A-Z][A-Za-z ]*:$", stripped):
            section = stripped[:-1].lower()
            current = None
            arg_indent = None
            continue
        if section is None:
            summary_lines.append(stripped)
        elif section in ("args", "arguments", "parameters") and stripped:
            if arg_indent is None:
                arg_indent = indent
            m = _ARG_LINE_RE.match(stripped)
            if indent <= arg_indent and m:
                current = m.group(1).lstrip("*")
                args[current] = m.group(2).strip()
            elif current is not None:
                args[current] = f"{args[current]} {stripped}".strip()
    summary = "\n".join(summary_lines).strip()
    summary = re.sub(r"\s*\n\s*(?!\n)", " ", summary)
    return summary, args


def _schema_from_signature(
    fn: ToolFn, arg_docs: Mapping[str, str]
) -> tuple[str | None, dict[str, Any]]:
    """The name of the context parameter (if any) and the JSON Schema of the others."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # unresolvable annotations: a programming error, say which
        raise TypeError(f"tool {fn.__name__!r}: cannot resolve type hints: {exc}") from exc
    ctx_param: str | None = None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in sig.parameters.items():
        hint = hints.get(pname, Any)
        if pname == "ctx" or hint is ToolContext:
            ctx_param = pname
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"tool {fn.__name__!r}: parameter {pname!r} must be a plain or keyword parameter"
            )
        prop = _schema_for_type(hint)
        if pname in arg_docs and arg_docs[pname]:
            prop["description"] = arg_docs[pname]
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        elif _json_safe(param.default):
            prop["default"] = param.default
        properties[pname] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return ctx_param, schema


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts null (for ``X | None``): models send null for "not given"."""
    if not schema:  # any value, null included
        return schema
    if isinstance(schema.get("type"), str) and set(schema) <= {"type", "items"}:
        return {**schema, "type": [schema["type"], "null"]}
    if set(schema) == {"enum"}:
        return {"enum": [*schema["enum"], None]}
    if set(schema) == {"anyOf"}:
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


_SIMPLE_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
    tuple: "array",
}


def _schema_for_type(hint: Any) -> dict[str, Any]:
    """JSON Schema for a type hint: str, int, float, bool, list[X], dict, Literal, X | None."""
    if hint is Any or hint is inspect.Parameter.empty:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if hint in _SIMPLE_TYPES:
        return {"type": _SIMPLE_TYPES[hint]}
    origin = typing.get_origin(hint)
    targs = typing.get_args(hint)
    if origin is Literal:
        return {"enum": list(targs)}
    if origin in (typing.Union, types.UnionType):
        options = [a for a in targs if a is not type(None)]
        schema = (
            _schema_for_type(options[0]) if len(options) == 1
            else {"anyOf": [_schema_for_type(a) for a in options]}
        )
        return _nullable(schema) if len(options) < len(targs) else schema
    if origin in (list, tuple, set, frozenset, Sequence):
        schema: dict[str, Any] = {"type": "array"}
        if targs and targs[0] is not Ellipsis:
            schema["items"] = _schema_for_type(targs[0])
        return schema
    if origin in (dict, Mapping):
        return {"type": "object"}
    return {}
