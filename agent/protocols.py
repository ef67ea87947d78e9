"""The wire formats the agent loop speaks with a model: one class each, one loop for all.

A protocol says what to send with each model call, how to read a reply into a `Reading` (an
answer, tool calls checked against the registry, or a correction for the model), how to put
the reply and each result back into the conversation, and which streamed text is the answer.
agent.loop runs the steps, events and limits the same way for every protocol; a new wire
format is a new subclass of `ReplyProtocol` added to `PROTOCOLS`.

TextProtocol (any chat model): Thought / Action / Action Input, stopped at "Observation:",
read by agent.parser; only the first action runs, its result goes back as an
"Observation: ..." user message. An Action that names a tool with no required parameter but
gives no Action Input runs with `{}` rather than costing a model call on a correction. Its
answer streams once a `Final Answer:` label has been seen at the start of a line.

NativeProtocol (OpenAI `tools` / `tool_calls`): every tool call of a reply runs, in order (the
API requires an answer for each tool_call_id), each result going back as a role=tool message;
a reply with content and no tool calls is the answer, and it streams as it comes until a
tool-call piece shows it was not.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from agent.llm import Completion, Delta
from agent.parser import ParsedReply, load_json, parse_response
from agent.tools.registry import CheckedCall, ToolRegistry

__all__ = [
    "PROTOCOLS",
    "STOP_SEQUENCES",
    "TEXT_FORMAT_REMINDER",
    "AnswerStream",
    "NativeProtocol",
    "Reading",
    "ReplyProtocol",
    "TextProtocol",
    "ToolUse",
]

STOP_SEQUENCES = ["Observation:"]
MAX_ECHO_CHARS = 4000
# Native: tool calls of one reply read and run; the rest are dropped with one nudge (checking a
# thousand calls' arguments held the loop for seconds, and each would have been a trace step).
MAX_CALLS_PER_REPLY = 16
# No two neighbouring repeats take the same characters (here and below): a reply of whitespace
# costs one pass, not one per split of it (a 16,000-space reply took 1.5 s with "\s*[*_#\s]*").
_FINAL_LABEL_RE = re.compile(r"^[*_#\s]*final[ _-]?answer[*_\s]*:[*_\s]*", re.IGNORECASE)
# A line that starts the answer: "Final Answer:", "**Final Answer:**", "### Final Answer", ...
_ANSWER_LINE_RE = re.compile(
    r"[ \t>#+-]*(?:(?P<open>[*_]+)[ \t]*)?final[ \t_-]?answer(?P<close>[*_]*)[ \t]*(?P<colon>:)?",
    re.IGNORECASE,
)
_MAX_LABEL_LINE = 64  # a line this long that is not yet a label will not become one
_NATIVE_LABEL_WAIT = 24  # native: characters read before deciding there is no label to drop

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


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call a reply asks for, checked; `id` is the native tool_call_id ("" in text)."""

    id: str
    call: CheckedCall


@dataclass(frozen=True, slots=True)
class Reading:
    """What one reply asks for: the answer, tool calls, or (`problem`) a correction."""

    thought: str
    answer: str | None = None
    calls: tuple[ToolUse, ...] = ()
    problem: str = ""  # a reply-level problem ("format", "too_many_calls"); `message` tells the model
    message: str = ""
    extra_actions: int = 0  # text protocol: Action blocks after the first, not run


class AnswerStream(ABC):
    """Picks the answer's text out of a streamed reply; one per model call.

    Leading whitespace is dropped and trailing whitespace held back until more text follows,
    so the deltas join to the answer as it will be parsed in the common cases.
    """

    def __init__(self) -> None:
        self._started = False
        self._held = ""
        self._strip = 0  # label decoration still to drop before the answer (`**Final Answer:**`)

    @abstractmethod
    def feed(self, delta: Delta) -> str:
        """The answer text this piece adds ("" for none)."""

    def finish(self) -> str:
        """Answer text held back until the end of the reply."""
        return ""

    def _emit(self, text: str) -> str:
        if not self._started:
            text = text.lstrip()
            while self._strip and text and text[0] in "*_":  # the rest of the label's decoration
                text, self._strip = text[1:].lstrip(), self._strip - 1
            if not text:
                return ""
            self._started = True
        text = self._held + text
        body = text.rstrip()
        self._held = text[len(body):]
        return body


class _FinalAnswerStream(AnswerStream):
    """Text protocol: nothing until a line opens with the Final Answer label, then all of it."""

    def __init__(self) -> None:
        super().__init__()
        self._line = ""  # the line being read, while no label has been seen
        self._skip = False  # the line being read cannot be a label
        self._found = False

    def feed(self, delta: Delta) -> str:
        text, out = delta.content, ""
        while text:
            if self._found:
                out += self._emit(text)
                break
            if self._skip:
                if (newline := text.find("\n")) == -1:
                    break
                text, self._skip = text[newline + 1:], False
                continue
            self._line, text = self._line + text, ""
            newline = self._line.find("\n")
            line = self._line if newline == -1 else self._line[:newline]
            match = _ANSWER_LINE_RE.match(line)
            if match and (
                match["colon"]
                or (newline != -1 and not line[match.end():].strip(" \t*_:"))  # a heading
            ):
                self._found = True
                if match["colon"]:
                    self._strip = max(0, len(match["open"] or "") - len(match["close"]))
                text, self._line = self._line[match.end():], ""
            elif newline != -1:
                text, self._line = self._line[newline + 1:], ""
            elif len(self._line) > _MAX_LABEL_LINE:
                self._skip, self._line = True, ""
        return out


class _ContentStream(AnswerStream):
    """Native protocol: the content, less a leading Final Answer label, until a tool call."""

    def __init__(self) -> None:
        super().__init__()
        self._head = ""  # content read before deciding whether it opens with a label
        self._decided = False
        self._tool_call = False

    def feed(self, delta: Delta) -> str:
        self._tool_call = self._tool_call or delta.tool_call
        if self._tool_call or not delta.content:
            return ""
        if self._decided:
            return self._emit(delta.content)
        # Leading whitespace is dropped as it comes: kept, a reply of whitespace in small
        # pieces would be stripped again at every piece.
        self._head = (self._head + delta.content).lstrip()
        if len(self._head) < _NATIVE_LABEL_WAIT and "\n" not in self._head:
            return ""
        return self._decide()

    def finish(self) -> str:
        return "" if self._tool_call or self._decided else self._decide()

    def _decide(self) -> str:
        self._decided = True
        return self._emit(_FINAL_LABEL_RE.sub("", self._head, count=1))


class ReplyProtocol(ABC):
    """How one wire format is spoken; see the module docstring."""

    name: ClassVar[str]

    @abstractmethod
    def options(self, registry: ToolRegistry) -> dict[str, Any]:
        """The keyword arguments of each model call (`stop`, `tools`)."""

    @abstractmethod
    def answer_stream(self) -> AnswerStream:
        """A fresh filter for the answer text of one streamed reply."""

    @abstractmethod
    def read(self, completion: Completion, registry: ToolRegistry) -> Reading:
        """What the reply asks for; tool calls are checked against `registry`."""

    @abstractmethod
    def record_reply(
        self, messages: list[dict[str, Any]], completion: Completion, reading: Reading
    ) -> None:
        """Append the model's reply (one that is not the answer) to the conversation."""

    @abstractmethod
    def correction(self, call: CheckedCall) -> str:
        """What the model is told about a tool call that cannot run."""

    @abstractmethod
    def observation(self, reading: Reading, observation: str) -> str:
        """What the model is told of a tool's result."""

    def record_result(self, messages: list[dict[str, Any]], call_id: str, text: str) -> None:
        """Append a result or a correction; `call_id` is "" for one not tied to a tool call."""
        messages.append({"role": "user", "content": text})


class TextProtocol(ReplyProtocol):
    name = "text"

    def options(self, registry: ToolRegistry) -> dict[str, Any]:
        return {"stop": STOP_SEQUENCES}

    def answer_stream(self) -> AnswerStream:
        return _FinalAnswerStream()

    def read(self, completion: Completion, registry: ToolRegistry) -> Reading:
        return self.reading(parse_response(completion.content, completion.reasoning, tools=registry.names()), registry)

    def reading(self, parsed: ParsedReply, registry: ToolRegistry) -> Reading:
        """The Reading of a parsed reply."""
        if parsed.is_final and (answer := (parsed.final_answer or "").strip()):
            return Reading(parsed.thought, answer=answer)
        name = parsed.action
        args = parsed.action_input
        if name is None and parsed.named_tool:  # named with no Action Input at all
            tool = registry.resolve(parsed.named_tool)
            if tool is not None and not tool.parameters.get("required"):
                name, args = tool.name, {}
        if name is None:
            why = parsed.error or "no Action or Final Answer was found."
            return Reading(
                parsed.thought, problem="format",
                message=f"Your reply did not follow the format: {why}\n{TEXT_FORMAT_REMINDER}",
            )
        return Reading(
            parsed.thought, calls=(ToolUse("", registry.check(name, args)),),
            extra_actions=parsed.extra_actions,
        )

    def record_reply(
        self, messages: list[dict[str, Any]], completion: Completion, reading: Reading
    ) -> None:
        call = reading.calls[0].call if reading.calls else None
        if call is None or call.problem is not None:  # echo what the model wrote, to correct it
            echo = completion.content or completion.reasoning or "(empty reply)"
            messages.append({"role": "assistant", "content": echo[:MAX_ECHO_CHARS]})
            return
        thought = f"Thought: {reading.thought}\n" if reading.thought else ""
        messages.append(
            {
                "role": "assistant",
                "content": f"{thought}Action: {call.name}\n"
                f"Action Input: {json.dumps(call.args, ensure_ascii=False)}",
            }
        )

    def correction(self, call: CheckedCall) -> str:
        if call.problem == "unknown_tool":
            return f"Observation: {call.error}\n{TEXT_FORMAT_REMINDER}"
        return f"Observation: {call.error}. Send the Action again with an Action Input that matches."

    def observation(self, reading: Reading, observation: str) -> str:
        text = f"Observation: {observation}"
        if reading.extra_actions:
            text += (
                f"\nNote: only the first Action ran; {reading.extra_actions} more were "
                "ignored. Send one Action per reply."
            )
        return text


class NativeProtocol(ReplyProtocol):
    name = "native"
    EMPTY_REPLY = (
        "Your last reply was empty. Call one of the tools, or reply with the answer "
        "for the user in plain text."
    )

    def options(self, registry: ToolRegistry) -> dict[str, Any]:
        return {"tools": registry.openai_tools() or None}

    def answer_stream(self) -> AnswerStream:
        return _ContentStream()

    def read(self, completion: Completion, registry: ToolRegistry) -> Reading:
        if not completion.tool_calls:
            answer = _FINAL_LABEL_RE.sub("", completion.content).strip()
            if answer:
                return Reading((completion.reasoning or "").strip(), answer=answer)
            return Reading("", problem="format", message=self.EMPTY_REPLY)
        kept = completion.tool_calls[:MAX_CALLS_PER_REPLY]
        dropped = len(completion.tool_calls) - len(kept)
        return Reading(
            (completion.content or completion.reasoning or "").strip(),
            calls=tuple(
                ToolUse(c.id, registry.check(c.name, _tool_arguments(c.arguments), raw=c.arguments))
                for c in kept
            ),
            problem="too_many_calls" if dropped else "",
            message=(f"Your last reply asked for {len(completion.tool_calls)} tool calls; only the first "
                     f"{MAX_CALLS_PER_REPLY} were run (at most {MAX_CALLS_PER_REPLY} in one reply). Ask "
                     "for the others in your next reply if you still need them.") if dropped else "",
        )

    def record_reply(
        self, messages: list[dict[str, Any]], completion: Completion, reading: Reading
    ) -> None:
        if not completion.tool_calls:
            messages.append({"role": "assistant", "content": completion.reasoning or "(empty reply)"})
            return
        messages.append(
            {
                "role": "assistant",
                "content": completion.content or None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in completion.tool_calls[:MAX_CALLS_PER_REPLY]  # as `read` kept them
                ],
            }
        )

    def correction(self, call: CheckedCall) -> str:
        if call.problem == "unknown_tool":
            return call.error
        return f"{call.error}. Call it again with arguments that match."

    def observation(self, reading: Reading, observation: str) -> str:
        return observation

    def record_result(self, messages: list[dict[str, Any]], call_id: str, text: str) -> None:
        if not call_id:
            super().record_result(messages, call_id, text)
            return
        messages.append({"role": "tool", "tool_call_id": call_id, "content": text})


PROTOCOLS: dict[str, ReplyProtocol] = {p.name: p for p in (TextProtocol(), NativeProtocol())}


def _tool_arguments(raw: str) -> object:
    """Native tool-call arguments: a dict (empty text means none), read and repaired as the
    text protocol's Action Input is (the same size cap and repair budget; deep nesting is no
    error here); anything else is returned as is for `ToolRegistry.check` to refuse (quoting
    `raw`)."""
    if not raw or not raw.strip():
        return {}
    return load_json(raw, default=raw)
