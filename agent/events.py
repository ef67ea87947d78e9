"""The typed events an agent run yields, one stream read by front ends and the trace store.

Every event is a frozen, slotted dataclass with `to_dict()` returning a JSON-safe dict whose
"type" key is the snake_case class name. RunEnded is always the last event of a run.

AnswerDelta is live-only: a front end shows the answer growing from it, while FinalAnswer and
RunEnded carry the answer as parsed, which is what to keep (a trace needs no deltas).

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

__all__ = [
    "AgentEvent",
    "AnswerDelta",
    "FinalAnswer",
    "ModelCalled",
    "Nudge",
    "RunEnded",
    "RunOutcome",
    "ToolFinished",
    "ToolStarted",
    "Usage",
]

RunOutcome = Literal["answered", "step_limit", "no_answer"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts reported by the endpoint (zeros when it reports none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _json_safe(value: Any) -> Any:
    if isinstance(value, Usage):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class _Event:
    """Mixin giving every event its `type` tag and `to_dict()`."""

    __slots__ = ()
    type: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.type = _snake(cls.__name__)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):  # type: ignore[arg-type]
            out[f.name] = _json_safe(getattr(self, f.name))
        return out


@dataclass(frozen=True, slots=True)
class ModelCalled(_Event):
    """One call to the model: how long it took, its tokens, and what it said."""

    step: int
    elapsed_ms: float
    usage: Usage
    content: str
    reasoning: str | None = None


@dataclass(frozen=True, slots=True)
class ToolStarted(_Event):
    """A tool call is about to run (yielded before the call, for live progress)."""

    step: int
    thought: str
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolFinished(_Event):
    """A tool call ended; `observation` is what the model reads (errors start with "Error:")."""

    step: int
    thought: str
    tool: str
    args: dict[str, Any]
    observation: str
    ok: bool
    elapsed_ms: float


@dataclass(frozen=True, slots=True)
class Nudge(_Event):
    """The model broke the format, named an unknown tool or gave bad arguments; `message` is
    what it was told."""

    step: int
    problem: str
    message: str


@dataclass(frozen=True, slots=True)
class AnswerDelta(_Event):
    """A piece of the answer as the model writes it (streaming), yielded before ModelCalled.

    Joined in order, one step's deltas preview that step's answer; FinalAnswer follows with the
    answer as parsed, which replaces the preview. Should the step turn out to call a tool after
    all (a native reply whose tool call came after its text), ToolStarted of the same step
    follows instead, and the preview was not the answer.
    """

    step: int
    text: str


@dataclass(frozen=True, slots=True)
class FinalAnswer(_Event):
    """The model gave its final answer."""

    step: int
    thought: str
    answer: str


@dataclass(frozen=True, slots=True)
class RunEnded(_Event):
    """Always the last event: the outcome, the answer to show, steps taken, tokens, time."""

    outcome: RunOutcome
    answer: str
    steps: int
    usage: Usage
    elapsed_ms: float


AgentEvent = (
    AnswerDelta | ModelCalled | ToolStarted | ToolFinished | Nudge | FinalAnswer | RunEnded
)
