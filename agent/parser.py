"""Parse a model's ReAct reply into one step: a tool call, a final answer, or a format error.

The text protocol is ``Thought: ... / Action: <tool> / Action Input: <JSON>`` or
``Thought: ... / Final Answer: <text>``. Models break it in many ways; the rules (DESIGN.md
contract) are:

- The first ``Observation:`` after an Action ends the usable text: the model is imagining the
  tool's reply, and a Final Answer after it is imagined too, so the Action runs.
- Within the usable text a Final Answer wins over any Action, even one its own text mentions.
- Only the first Action runs; further Action blocks are counted in ``extra_actions``.
- Preambles and markdown decoration (``**Action:**``, ``Action 1:``, ``### Final Answer``,
  any case, stray spaces, list bullets, block quotes) are tolerated. Keyword lines inside
  code fences are ignored unless the whole reply is fenced.
- The Action Input may be fenced, multi-line, or broken JSON, repaired by ``json_repair``;
  a JSON object is the arguments, anything else becomes ``{"input": text}``.
- ``Action: calculator(2+2)``, ``Action: calculator`` followed by bare JSON, and the LangChain
  JSON blob ``{"action": ..., "action_input": ...}`` are understood too; ``Action: Final Answer``
  with an input is a final answer.
- When ``content`` gives nothing usable, ``reasoning`` (a DeepSeek-style reasoning channel) is
  parsed instead.
- It never raises. Every pattern is anchored and bounded, so time is linear in the input;
  JSON repair is skipped for inputs longer than ``MAX_REPAIR_CHARS``.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from typing import Any

import json_repair

log = logging.getLogger(__name__)

__all__ = ["MAX_REPAIR_CHARS", "ParsedReply", "parse_response"]

MAX_REPAIR_CHARS = 20_000

FORMAT_HINT = (
    "Reply either with 'Action: <tool name>' followed by 'Action Input: <JSON object>', "
    "or with 'Final Answer: <your answer>'."
)


@dataclasses.dataclass(frozen=True, slots=True)
class ParsedReply:
    """One parsed reply. Exactly one of: an action, a final answer, or an error."""

    thought: str = ""  # text before the Action / Final Answer, "Thought:" labels removed
    action: str | None = None  # tool name, as the model wrote it (cleaned of decoration)
    action_input: dict[str, Any] | None = None  # arguments; {} when none were given
    raw_action_input: str | None = None  # the Action Input text as written, fences removed
    final_answer: str | None = None
    extra_actions: int = 0  # Action blocks after the first, not run
    error: str | None = None  # why nothing usable was found, written for the model
    named_tool: str | None = None  # the tool an Action line named when it had no Action Input (error is set)
    from_reasoning: bool = False  # True when the step came from the reasoning channel

    @property
    def is_final(self) -> bool:
        """True when the reply is a final answer."""
        return self.final_answer is not None


# --- line classification -------------------------------------------------------------------

_FINAL, _INPUT, _ACTION, _THOUGHT, _OBSERVATION = "final", "input", "action", "thought", "obs"

_KEYWORD_RE = re.compile(
    r"(final[ \t_-]?answer|action[ \t_-]?input|action|thoughts?|observations?)(?![A-Za-z])",
    re.IGNORECASE,
)
_LIST_MARK_RE = re.compile(r"(?:[-+•]|\d{1,3}[.)])[ \t]+")
_NUMBER_RE = re.compile(r"#?\d{1,3}(?!\d)")
_DECORATION = "*_"


@dataclasses.dataclass(frozen=True, slots=True)
class _Marker:
    index: int  # line number
    kind: str
    rest: str  # text after the keyword (and its colon) on the same line


def _kind_of(word: str) -> str:
    w = word.lower()
    if w.startswith("final"):
        return _FINAL
    if w.startswith("action") and w.endswith("input"):
        return _INPUT
    if w.startswith("action"):
        return _ACTION
    if w.startswith("thought"):
        return _THOUGHT
    return _OBSERVATION


def _classify(line: str) -> _Marker | None:
    """The keyword a line starts with (after decoration), or None. Linear in the line."""
    if ":" not in line and "#" not in line and "*" not in line and "_" not in line:
        return None  # fast path: a keyword line has a colon or is a decorated heading
    s = line.lstrip(" \t>")
    heading = s.startswith("#")
    if heading:
        s = s.lstrip("#").lstrip(" \t")
    if m := _LIST_MARK_RE.match(s):
        s = s[m.end():]
    stripped = s.lstrip(_DECORATION + " \t")
    opened = len(s) - len(stripped)
    m = _KEYWORD_RE.match(stripped)
    if m is None:
        return None
    kind = _kind_of(m.group(1))
    t = stripped[m.end():].lstrip(" \t")
    if n := _NUMBER_RE.match(t):
        t = t[n.end():].lstrip(" \t")
    after = t.lstrip(_DECORATION)
    closed = len(t) - len(after)
    t = after.lstrip(" \t")
    if t.startswith(":"):
        t = t[1:]
        if opened and not closed:  # **Action:** name
            t = t.lstrip(" \t")
            trimmed = t.lstrip(_DECORATION)
            if len(t) - len(trimmed) <= opened:
                t = trimmed
        return _Marker(-1, kind, t.lstrip(" \t"))
    # No colon: accept only a line that is nothing but the decorated keyword (a heading).
    if (heading or opened) and not t.strip():
        return _Marker(-1, kind, "")
    return None


def _is_fence(line: str) -> bool:
    s = line.lstrip(" \t>")
    return s.startswith("```") or s.startswith("~~~")


def _markers(lines: list[str], *, skip_fenced: bool) -> list[_Marker]:
    found: list[_Marker] = []
    in_fence = False
    for i, line in enumerate(lines):
        if skip_fenced and _is_fence(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if (m := _classify(line)) is not None:
            found.append(_Marker(i, m.kind, m.rest))
    return found


# Used only when no keyword starts a line: split "Thought: x. Action: y" into lines.
_INLINE_RE = re.compile(
    r"(?<![A-Za-z])(?=\*{0,2}(?:final[ \t_-]?answer|action[ \t_-]?input|action|observation)"
    r"\*{0,2}[ \t]{0,3}\*{0,2}:)",
    re.IGNORECASE,
)
_INLINE_INPUT_RE = re.compile(r"(?<![A-Za-z])\*{0,2}action[ \t_-]?input\*{0,2}[ \t]{0,3}:",
                              re.IGNORECASE)
_INLINE_OBSERVATION_RE = re.compile(r"(?<![A-Za-z])\*{0,2}observations?\*{0,2}[ \t]{0,3}:",
                                    re.IGNORECASE)


# --- public entry point --------------------------------------------------------------------


def parse_response(content: str, reasoning: str | None = None) -> ParsedReply:
    """Parse a reply; fall back to ``reasoning`` when ``content`` yields nothing. Never raises."""
    try:
        reply = _parse_text(content if isinstance(content, str) else "")
        if reply.error is not None and isinstance(reasoning, str) and reasoning.strip():
            from_reasoning = _parse_text(reasoning)
            if from_reasoning.error is None:
                return dataclasses.replace(from_reasoning, from_reasoning=True)
        return reply
    except Exception:  # a parser bug must not end the run; say so and let the loop nudge
        log.exception("parse_response failed on a %d-character reply", len(content or ""))
        return ParsedReply(error=f"The reply could not be read. {FORMAT_HINT}")


def _parse_text(text: str) -> ParsedReply:
    if not text.strip():
        return ParsedReply(error=f"The reply was empty. {FORMAT_HINT}")
    lines = text.splitlines()
    markers = _markers(lines, skip_fenced=True)
    if not any(m.kind in (_ACTION, _FINAL, _INPUT) for m in markers):
        markers = _markers(lines, skip_fenced=False)
    if not any(m.kind in (_ACTION, _FINAL, _INPUT) for m in markers):
        inline = _INLINE_RE.sub("\n", text)
        if inline != text:
            lines = inline.splitlines()
            markers = _markers(lines, skip_fenced=False)
    return _decide(lines, markers)


def _decide(lines: list[str], markers: list[_Marker]) -> ParsedReply:
    first_action = next((m for m in markers if m.kind == _ACTION), None)
    first_final = next((m for m in markers if m.kind == _FINAL), None)

    if first_final is not None and (first_action is None or first_final.index < first_action.index):
        return _final(lines, markers, first_final, end=len(lines))

    if first_action is None:
        if any(m.kind == _INPUT for m in markers):
            return ParsedReply(
                thought=_thought(lines, markers, len(lines)),
                error="'Action Input:' was given without an 'Action:' line naming the tool. "
                + FORMAT_HINT,
            )
        return ParsedReply(
            thought=_thought(lines, markers, len(lines)),
            error=f"No 'Action:' or 'Final Answer:' was found. {FORMAT_HINT}",
        )

    end = next(
        (m.index for m in markers if m.kind == _OBSERVATION and m.index > first_action.index),
        len(lines),
    )
    usable = [m for m in markers if m.index < end]
    if first_final is not None and first_final.index < end:
        return _final(lines, usable, first_final, end=end)
    return _action(lines, usable, first_action, end=end)


def _final(lines: list[str], markers: list[_Marker], marker: _Marker, *, end: int) -> ParsedReply:
    body = [marker.rest, *lines[marker.index + 1:end]]
    answer = _strip_fences_around("\n".join(body).strip())
    thought = _thought(lines, markers, marker.index)
    if not answer:
        return ParsedReply(
            thought=thought,
            error="'Final Answer:' was empty; write the answer on the same line after "
            "'Final Answer:'.",
        )
    return ParsedReply(thought=thought, final_answer=answer)


def _action(lines: list[str], markers: list[_Marker], marker: _Marker, *, end: int) -> ParsedReply:
    thought = _thought(lines, markers, marker.index)
    later = [m for m in markers if m.index > marker.index]
    next_action = next((m.index for m in later if m.kind == _ACTION), end)
    extra = sum(1 for m in later if m.kind == _ACTION)

    name_text = marker.rest
    inline_input: str | None = None
    if (m := _INLINE_INPUT_RE.search(name_text)) is not None:
        name_text, inline_input = name_text[: m.start()], name_text[m.end():]

    input_marker = next(
        (m for m in later if m.kind == _INPUT and m.index < next_action), None
    )
    # Text between the Action line and the next keyword line (or the block's end).
    stop = next((m.index for m in later), end)
    trailing = "\n".join(lines[marker.index + 1: stop]).strip()

    raw: str | None = None
    if inline_input is not None:
        raw = inline_input
    elif input_marker is not None:
        stop_input = next((m.index for m in later if m.index > input_marker.index), end)
        raw = "\n".join([input_marker.rest, *lines[input_marker.index + 1: stop_input]])

    name, paren_input = _clean_name(name_text)
    if not name and trailing and not trailing.startswith(("{", "```", "[")):
        # "Action:" alone on its line, the name on the next one.
        first, _, remainder = trailing.partition("\n")
        name, paren_input = _clean_name(first)
        trailing = remainder.strip()
    if raw is None:
        if paren_input is not None:
            raw = paren_input
        elif trailing.startswith(("{", "```", "[")):
            raw = trailing

    if raw is not None:
        raw = _cut_inline_observation(_strip_fences_around(raw.strip()))

    if not name:
        blob = _json_object(raw) if raw else None
        if blob is not None and isinstance(blob.get("action"), str) and blob["action"].strip():
            name = _clean_name(blob["action"])[0]
            inner = blob.get("action_input", blob.get("input", {}))
            raw = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
        else:
            return ParsedReply(
                thought=thought,
                extra_actions=extra,
                error="'Action:' had no tool name; write the tool's name after 'Action:' "
                "and its arguments as a JSON object after 'Action Input:'.",
            )

    args = _arguments(raw)
    if _normalize(name) in _FINAL_NAMES:
        text = _answer_from_args(args, raw)
        if text:
            return ParsedReply(thought=thought, final_answer=text)
    return ParsedReply(
        thought=thought,
        action=name,
        action_input=args,
        raw_action_input=raw,
        extra_actions=extra,
    )


# --- pieces --------------------------------------------------------------------------------


def _thought(lines: list[str], markers: list[_Marker], before: int) -> str:
    """The text before line ``before``, with 'Thought:' labels removed."""
    labelled = {m.index: m.rest for m in markers if m.kind == _THOUGHT and m.index < before}
    parts = [labelled.get(i, line) for i, line in enumerate(lines[:before])]
    return "\n".join(parts).strip()


def _cut_inline_observation(raw: str) -> str:
    """Drop an imagined ``Observation:`` on the input's own line, unless it is inside JSON."""
    if raw[:1] in ("{", "[", '"'):
        try:
            json.JSONDecoder().raw_decode(raw)
            return raw
        except (ValueError, RecursionError):
            pass
    m = _INLINE_OBSERVATION_RE.search(raw)
    return raw[: m.start()].strip() if m else raw


def _strip_fences_around(text: str) -> str:
    """Remove a code fence wrapping the whole text (```json ... ```), or single backticks."""
    if text.startswith(("```", "~~~")):
        fence = text[:3]
        body = text.split("\n", 1)[1] if "\n" in text else text[3:]
        close = body.rfind(fence)
        if close != -1:
            body = body[:close]
        return body.strip()
    if len(text) >= 2 and text[0] == "`" and text[-1] == "`" and "\n" not in text:
        return text.strip("`").strip()
    return text


_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]+")
_FINAL_NAMES = frozenset({"final_answer", "finalanswer", "final", "answer"})


def _clean_name(text: str) -> tuple[str, str | None]:
    """The tool name and, for ``tool(args)`` or ``tool {json}``, the argument text."""
    s = text.strip().strip("`'\"*[] \t")
    if not s:
        return "", None
    if (paren := s.find("(")) > 0 and s.endswith(")"):
        return s[:paren].strip().strip("`'\"* \t"), s[paren + 1: -1]
    if (brace := s.find("{")) > 0:
        return s[:brace].strip().strip("`'\"*:, \t"), s[brace:]
    if _normalize(s) in _FINAL_NAMES:
        return s, None
    m = _NAME_RE.match(s)
    name = m.group(0) if m else s.split()[0]
    return name.rstrip(".,:;"), None


def _normalize(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip()).lower()


def _json_object(raw: str) -> dict[str, Any] | None:
    value = _load_json(raw)
    return value if isinstance(value, dict) else None


_MISSING = object()


def _load_json(raw: str) -> Any:
    """Strict JSON first (the first value, ignoring trailing text), then json_repair."""
    s = raw.strip()
    if not s or s[0] not in "{[\"":
        if s in ("true", "false", "null") or re.fullmatch(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", s[:400]):
            try:
                return json.loads(s)
            except (ValueError, RecursionError):
                return _MISSING
        return _MISSING
    try:
        return json.JSONDecoder().raw_decode(s)[0]
    except (ValueError, RecursionError):
        pass
    if len(s) > MAX_REPAIR_CHARS:
        return _MISSING
    try:
        repaired = json_repair.loads(s)
    except Exception:  # json_repair may raise on hostile input (e.g. deep nesting)
        return _MISSING
    if repaired == "" and s[0] != '"':
        return _MISSING
    return repaired


_NO_INPUT = frozenset({"", "null", "none", "n/a", "nothing", "no input", '""', "''"})


def _arguments(raw: str | None) -> dict[str, Any]:
    if raw is None or raw.strip().lower().rstrip(".") in _NO_INPUT:
        return {}
    value = _load_json(raw)
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"input": value}
    return {"input": raw.strip()}


def _answer_from_args(args: dict[str, Any], raw: str | None) -> str:
    if len(args) == 1:
        (value,) = args.values()
        return value.strip() if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return (raw or "").strip()
