"""Agent: the ReAct loop, an async generator of typed events, over two protocols.

Text protocol (any chat model): the model writes Thought / Action / Action Input (stopped at
"Observation:"), agent.parser reads it, the first action runs, its result goes back as an
"Observation: ..." user message, and so on until a Final Answer.

Native protocol (OpenAI `tools` / `tool_calls`): the registry's tools are sent with each call;
every tool call of a reply runs, in order, one after another (the API requires an answer for
each tool_call_id, and running them in order keeps the event stream simple to follow); each
result goes back as a role=tool message. A reply with content and no tool calls is the answer.

Both protocols yield the same events (agent.events), share the step limit (one step = one
model call) and the nudges: a reply with no usable step, an unknown tool or arguments that
fail the tool's schema are answered with a message telling the model exactly what was wrong
and how to answer; after `max_consecutive_nudges` in a row the run ends with outcome
"no_answer". Reaching the step limit ends with "step_limit" and an honest message. RunEnded is
always the last event; only a model-endpoint failure (LLMError, after the client's retries)
escapes, after the events already yielded.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol

import json_repair

from agent.events import (
    AgentEvent,
    FinalAnswer,
    ModelCalled,
    Nudge,
    RunEnded,
    ToolFinished,
    ToolStarted,
    Usage,
)
from agent.llm import Completion
from agent.parser import parse_response
from agent.prompt import build_system_prompt
from agent.tools.registry import Tool, ToolContext, ToolRegistry

log = logging.getLogger(__name__)

__all__ = ["Agent", "ChatModel", "STOP_SEQUENCES"]

STOP_SEQUENCES = ["Observation:"]
MAX_ECHO_CHARS = 4000
_FINAL_LABEL_RE = re.compile(r"^\s*[*_#\s]*final[ _-]?answer[*_\s]*:[*_\s]*", re.IGNORECASE)
_NAME_RE = re.compile(r"[^A-Za-z0-9_-]")

TEXT_FORMAT_REMINDER = (
    "Reply in exactly one of these two formats.\n"
    "To use a tool:\n"
    "Thought: <your reasoning>\n"
    "Action: <tool name>\n"
    "Action Input: <JSON object>\n"
    "To answer:\n"
    "Thought: <your reasoning>\n"
    "Final Answer: <the answer>"
)


class ChatModel(Protocol):
    """What the loop needs of a model: LLMClient, or a scripted stand-in in tests and benches."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        stop: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion: ...


class Agent:
    """Runs questions through a model and a tool registry; see the module docstring."""

    def __init__(
        self,
        llm: ChatModel,
        tools: ToolRegistry,
        *,
        protocol: str = "text",
        max_steps: int = 8,
        persona: str | None = None,
        max_consecutive_nudges: int = 3,
    ) -> None:
        if protocol not in ("text", "native"):
            raise ValueError(f"protocol must be 'text' or 'native', got {protocol!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        if max_consecutive_nudges < 1:
            raise ValueError(f"max_consecutive_nudges must be at least 1, got {max_consecutive_nudges}")
        self.llm = llm
        self.tools = tools
        self.protocol = protocol
        self.max_steps = max_steps
        self.persona = persona
        self.max_consecutive_nudges = max_consecutive_nudges

    def run(
        self,
        question: str,
        *,
        context: ToolContext,
        history: Sequence[Mapping[str, Any]] = (),
        memories: Sequence[str] = (),
        tools: ToolRegistry | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """Answer `question`, yielding an event per step; RunEnded is always last.

        `history` holds earlier turns ({"role": "user"|"assistant", "content": str,
        "name"?: str}), sent before the question; `memories` go into the system prompt;
        `tools` are extra tools for this run only. Bad arguments raise ValueError here, before
        anything runs; a model-endpoint failure raises LLMError from the iterator.
        """
        if not isinstance(question, str) or not question.strip():
            raise ValueError("question must be a non-empty string")
        registry = self.tools.merged(tools) if tools is not None and len(tools) else self.tools
        system = build_system_prompt(
            registry, protocol=self.protocol, persona=self.persona, memories=memories
        )
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        messages += _history_messages(history)
        messages.append({"role": "user", "content": question})
        if self.protocol == "native":
            return self._run_native(messages, registry, context)
        return self._run_text(messages, registry, context)

    # -- text protocol ------------------------------------------------------------------------

    async def _run_text(
        self, messages: list[dict[str, Any]], registry: ToolRegistry, context: ToolContext
    ) -> AsyncIterator[AgentEvent]:
        started = time.perf_counter()
        usage = Usage()
        nudges = 0
        last_observation: str | None = None
        for step in range(1, self.max_steps + 1):
            called = time.perf_counter()
            completion = await self.llm.complete(messages, stop=STOP_SEQUENCES)
            usage += completion.usage
            yield ModelCalled(
                step, _ms(called), completion.usage, completion.content, completion.reasoning
            )
            parsed = parse_response(completion.content, completion.reasoning)

            if parsed.is_final and (parsed.final_answer or "").strip():
                answer = parsed.final_answer.strip()  # type: ignore[union-attr]
                yield FinalAnswer(step, parsed.thought, answer)
                yield RunEnded("answered", answer, step, usage, _ms(started))
                return

            args: dict[str, Any] = parsed.action_input or {}
            tool: Tool | None = None
            if parsed.action is None:
                problem = "format"
                why = parsed.error or "no Action or Final Answer was found."
                message = f"Your reply did not follow the format: {why}\n{TEXT_FORMAT_REMINDER}"
            else:
                tool, problem, message = _check_call(registry, parsed.action, args, text=True)

            if problem:
                nudges += 1
                log.debug("step %d: nudge (%s)", step, problem)
                yield Nudge(step, problem, message)
                if nudges >= self.max_consecutive_nudges:
                    yield RunEnded("no_answer", _no_answer(nudges), step, usage, _ms(started))
                    return
                echo = completion.content or completion.reasoning or "(empty reply)"
                messages.append({"role": "assistant", "content": echo[:MAX_ECHO_CHARS]})
                messages.append({"role": "user", "content": message})
                continue

            assert tool is not None
            nudges = 0
            yield ToolStarted(step, parsed.thought, tool.name, args)
            result = await registry.call_checked(tool, args, context)
            yield ToolFinished(
                step, parsed.thought, tool.name, args, result.observation, result.ok,
                result.elapsed_ms,
            )
            last_observation = result.observation
            observation = f"Observation: {result.observation}"
            if parsed.extra_actions:
                observation += (
                    f"\nNote: only the first Action ran; {parsed.extra_actions} more were "
                    "ignored. Send one Action per reply."
                )
            thought = f"Thought: {parsed.thought}\n" if parsed.thought else ""
            messages.append(
                {
                    "role": "assistant",
                    "content": f"{thought}Action: {tool.name}\n"
                    f"Action Input: {json.dumps(args, ensure_ascii=False)}",
                }
            )
            messages.append({"role": "user", "content": observation})
        yield RunEnded(
            "step_limit", self._step_limit_answer(last_observation), self.max_steps, usage,
            _ms(started),
        )

    # -- native protocol ----------------------------------------------------------------------

    async def _run_native(
        self, messages: list[dict[str, Any]], registry: ToolRegistry, context: ToolContext
    ) -> AsyncIterator[AgentEvent]:
        started = time.perf_counter()
        usage = Usage()
        nudges = 0
        last_observation: str | None = None
        openai_tools = registry.openai_tools() or None
        for step in range(1, self.max_steps + 1):
            called = time.perf_counter()
            completion = await self.llm.complete(messages, tools=openai_tools)
            usage += completion.usage
            yield ModelCalled(
                step, _ms(called), completion.usage, completion.content, completion.reasoning
            )
            thought = (completion.content or completion.reasoning or "").strip()

            if not completion.tool_calls:
                answer = _FINAL_LABEL_RE.sub("", completion.content).strip()
                if answer:
                    yield FinalAnswer(step, (completion.reasoning or "").strip(), answer)
                    yield RunEnded("answered", answer, step, usage, _ms(started))
                    return
                nudges += 1
                message = (
                    "Your last reply was empty. Call one of the tools, or reply with the answer "
                    "for the user in plain text."
                )
                log.debug("step %d: nudge (format)", step)
                yield Nudge(step, "format", message)
                if nudges >= self.max_consecutive_nudges:
                    yield RunEnded("no_answer", _no_answer(nudges), step, usage, _ms(started))
                    return
                messages.append({"role": "assistant", "content": completion.reasoning or "(empty reply)"})
                messages.append({"role": "user", "content": message})
                continue

            messages.append(
                {
                    "role": "assistant",
                    "content": completion.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        }
                        for call in completion.tool_calls
                    ],
                }
            )
            nudged = False
            for call in completion.tool_calls:
                args = _tool_arguments(call.arguments)
                tool, problem, content = _check_call(
                    registry, call.name, args, text=False, raw=call.arguments
                )
                if problem:
                    nudged = True
                    log.debug("step %d: nudge (%s)", step, problem)
                    yield Nudge(step, problem, content)
                else:
                    assert tool is not None and args is not None
                    yield ToolStarted(step, thought, tool.name, args)
                    result = await registry.call_checked(tool, args, context)
                    yield ToolFinished(
                        step, thought, tool.name, args, result.observation, result.ok,
                        result.elapsed_ms,
                    )
                    content = last_observation = result.observation
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            if nudged:
                nudges += 1
                if nudges >= self.max_consecutive_nudges:
                    yield RunEnded("no_answer", _no_answer(nudges), step, usage, _ms(started))
                    return
            else:
                nudges = 0
        yield RunEnded(
            "step_limit", self._step_limit_answer(last_observation), self.max_steps, usage,
            _ms(started),
        )

    def _step_limit_answer(self, last_observation: str | None) -> str:
        log.info("run reached the step limit of %d", self.max_steps)
        answer = (
            f"I could not finish within {self.max_steps} steps, so I have no reliable answer."
        )
        if last_observation:
            answer += f" The last result I got was: {last_observation[:500]}"
        return answer


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


def _no_answer(nudges: int) -> str:
    log.info("run ended without an answer after %d nudges in a row", nudges)
    return (
        f"The model did not give a usable reply after {nudges} corrections in a row, "
        "so I have no answer."
    )


def _check_call(
    registry: ToolRegistry, name: str, args: dict[str, Any] | None, *, text: bool, raw: str = ""
) -> tuple[Tool | None, str, str]:
    """Check a tool call before it runs, for either protocol: ``(tool, problem, message)``.

    ``problem`` is "" when the call can run; else "unknown_tool" or "bad_arguments" (``args``
    None means ``raw`` was not a JSON object), and ``message`` tells the model what was wrong:
    an "Observation: Error: ..." user message in the text protocol, the "Error: ..." content
    of the role=tool message in the native one.
    """
    arguments = "Action Input" if text else "arguments"
    tool = registry.resolve(name)
    if tool is None:
        problem, message = "unknown_tool", registry.unknown_tool_error(name)
        if text:
            message += f"\n{TEXT_FORMAT_REMINDER}"
    elif args is None:
        problem = "bad_arguments"
        message = (
            f"Error: the {arguments} for {tool.name} are not a JSON object: {raw[:200]!r}. "
            f"Its parameters (JSON Schema): {_schema(tool)}."
        )
    elif bad := tool.check(args):
        retry = (
            "Send the Action again with a JSON object that matches." if text
            else "Call it again with arguments that match."
        )
        problem = "bad_arguments"
        message = (
            f"Error: bad {arguments} for {tool.name}: {bad}. "
            f"Its parameters (JSON Schema): {_schema(tool)}. {retry}"
        )
    else:
        return tool, "", ""
    return tool, problem, f"Observation: {message}" if text else message


def _schema(tool: Tool) -> str:
    return json.dumps(tool.parameters, ensure_ascii=False)


def _tool_arguments(raw: str) -> dict[str, Any] | None:
    """Native tool-call arguments as a dict (empty text means none), repaired where possible."""
    if not raw or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        try:
            value = json_repair.loads(raw)
        except Exception:  # json_repair gives up on some inputs; the model is told below
            return None
    return value if isinstance(value, dict) else None


def _history_messages(history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    messages = []
    for i, turn in enumerate(history):
        if not isinstance(turn, Mapping):
            raise ValueError(f"history[{i}] must be a mapping, got {type(turn).__name__}")
        role, content = turn.get("role"), turn.get("content")
        if role not in ("user", "assistant"):
            raise ValueError(f"history[{i}]['role'] must be 'user' or 'assistant', got {role!r}")
        if not isinstance(content, str):
            raise ValueError(f"history[{i}]['content'] must be a string")
        message: dict[str, Any] = {"role": role, "content": content}
        name = turn.get("name")
        if isinstance(name, str) and (clean := _NAME_RE.sub("_", name)[:64].strip("_")):
            message["name"] = clean  # the API allows only [A-Za-z0-9_-]{1,64}
        messages.append(message)
    return messages
