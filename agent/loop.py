"""Agent: the ReAct loop, an async generator of typed events, over any reply protocol.

One loop runs every protocol (agent.protocols: the text ReAct format and native tool calling):
each step is one model call, read by the protocol into an answer, tool calls or a correction;
tool calls are checked by the registry before they run, in order, and their results go back
into the conversation the protocol's way. Every protocol yields the same events (agent.events).

With a model that streams (`StreamingChatModel`, such as LLMClient) and `stream=True`, the
answer's text is yielded as AnswerDelta events while the model writes it (what counts as the
answer is the protocol's to say: never the Thought or the Action).

Limits: a reply with no usable step, an unknown tool or arguments that fail the tool's schema
are answered with a message telling the model exactly what was wrong and how to answer; after
`max_consecutive_nudges` such replies in a row the run ends with outcome "no_answer". Reaching
the step limit ends with "step_limit" and an honest message. RunEnded is always the last
event; only a model-endpoint failure (LLMError, after the client's retries) escapes, after the
events already yielded.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from agent.errors import AgentError
from agent.events import (
    AgentEvent,
    AnswerDelta,
    FinalAnswer,
    ModelCalled,
    Nudge,
    RunEnded,
    ToolFinished,
    ToolStarted,
    Usage,
)
from agent.images import ImageInput, user_content
from agent.llm import Completion, Delta
from agent.prompt import build_system_prompt
from agent.protocols import PROTOCOLS, STOP_SEQUENCES, ReplyProtocol
from agent.tools.registry import ToolContext, ToolRegistry

log = logging.getLogger(__name__)

__all__ = ["Agent", "ChatModel", "STOP_SEQUENCES", "StreamingChatModel"]

_NAME_RE = re.compile(r"[^A-Za-z0-9_-]")


class ChatModel(Protocol):
    """What the loop needs of a model: LLMClient, or a scripted stand-in in tests and benches."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        stop: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion: ...


@runtime_checkable
class StreamingChatModel(ChatModel, Protocol):
    """A model that can also stream: Deltas as the reply is written, then its Completion."""

    def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        stop: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> AsyncIterator[Delta | Completion]: ...


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
        stream: bool = True,
    ) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(map(repr, PROTOCOLS))}, got {protocol!r}")
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
        self._streaming = llm if stream and isinstance(llm, StreamingChatModel) else None

    @property
    def stream(self) -> bool:
        """True when answers stream: asked for, and the model can (`StreamingChatModel`)."""
        return self._streaming is not None

    def run(
        self,
        question: str,
        *,
        context: ToolContext,
        history: Sequence[Mapping[str, Any]] = (),
        memories: Sequence[str] = (),
        tools: ToolRegistry | None = None,
        images: Sequence[ImageInput] = (),
        timezone: str | None = None,
        now: datetime | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """Answer `question`, yielding an event per step; RunEnded is always last.

        `history` holds earlier turns ({"role": "user"|"assistant", "content": str,
        "name"?: str}), sent before the question; `memories` go into the system prompt;
        `tools` are extra tools for this run only; `images` go with the question as image
        parts (agent.images), in either protocol, for a model that can see them; `now` is the
        time the prompt states (None: the system clock). Bad arguments raise ValueError here, before
        anything runs; a model-endpoint failure raises LLMError from the iterator.
        """
        if not isinstance(question, str) or not question.strip():
            raise ValueError("question must be a non-empty string")
        registry = self.tools.merged(tools) if tools is not None and len(tools) else self.tools
        system = build_system_prompt(
            registry, protocol=self.protocol, persona=self.persona, memories=memories, timezone=timezone, now=now
        )
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        messages += _history_messages(history)
        messages.append({"role": "user", "content": user_content(question, images)})
        return self._run(PROTOCOLS[self.protocol], messages, registry, context)

    async def _run(
        self,
        protocol: ReplyProtocol,
        messages: list[dict[str, Any]],
        registry: ToolRegistry,
        context: ToolContext,
    ) -> AsyncIterator[AgentEvent]:
        started = time.perf_counter()
        usage = Usage()
        nudges = 0
        last_observation: str | None = None
        options = protocol.options(registry)
        for step in range(1, self.max_steps + 1):
            called = time.perf_counter()
            if self._streaming is not None:
                completion: Completion | None = None
                answer = protocol.answer_stream()
                parts = self._streaming.stream(messages, **options)
                async with contextlib.aclosing(parts):  # a run closed early closes the stream
                    async for part in parts:
                        if isinstance(part, Completion):
                            completion = part
                        elif text := answer.feed(part):
                            yield AnswerDelta(step, text)
                if completion is None:
                    raise AgentError(f"{self.llm!r} ended a stream without its Completion")
                if text := answer.finish():
                    yield AnswerDelta(step, text)
            else:
                completion = await self.llm.complete(messages, **options)
            usage += completion.usage
            yield ModelCalled(
                step, _ms(called), completion.usage, completion.content, completion.reasoning
            )
            reading = protocol.read(completion, registry)
            if reading.answer is not None:
                yield FinalAnswer(step, reading.thought, reading.answer)
                yield RunEnded("answered", reading.answer, step, usage, _ms(started))
                return

            protocol.record_reply(messages, completion, reading)
            nudged = bool(reading.problem) and not reading.calls  # calls that ran are progress
            if reading.problem:
                log.debug("step %d: nudge (%s)", step, reading.problem)
                yield Nudge(step, reading.problem, reading.message)
            for use in reading.calls:
                call = use.call
                if call.problem is not None:
                    nudged = True
                    text = protocol.correction(call)
                    log.debug("step %d: nudge (%s)", step, call.problem)
                    yield Nudge(step, call.problem, text)
                else:
                    yield ToolStarted(step, reading.thought, call.name, call.args)
                    result = await registry.run(call, context)
                    yield ToolFinished(
                        step, reading.thought, call.name, call.args, result.observation,
                        result.ok, result.elapsed_ms,
                    )
                    last_observation = result.observation
                    text = protocol.observation(reading, result.observation)
                protocol.record_result(messages, use.id, text)
            if reading.problem:  # after the calls' results, which must follow the calls
                protocol.record_result(messages, "", reading.message)
            if not nudged:
                nudges = 0
                continue
            nudges += 1
            if nudges >= self.max_consecutive_nudges:
                yield RunEnded("no_answer", _no_answer(nudges), step, usage, _ms(started))
                return
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
