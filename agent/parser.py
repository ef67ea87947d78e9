"""Parse a model's ReAct reply into one step: a tool call, a final answer, or a format error.

The protocol is ``Thought / Action: <tool> / Action Input: <JSON>`` or ``Thought / Final
Answer: <text>``; the rules for what real models write instead (DESIGN.md contract):

- The first ``Observation:`` after an Action ends the usable text (the model imagines the
  result); within it a Final Answer wins over any Action. Only the first Action runs; later
  ones are counted in ``extra_actions``.
- The tool name is the whole Action line less decoration (bold, backticks, quotes, ``\\_``).
  With the registry's names (``tools``), another case, spacing or separator resolves to the
  registered tool.
- Markers may be decorated (``**Action:**``, ``Action Input**:``, ``Action 1:``, headings,
  bullets, a full-width colon) or glued (``Action: xAction Input: {...}``); ``Input:`` right
  after an Action is its input. "action" inside prose, a list item or a heading is no marker.
  Keyword lines inside code fences count only when none stand outside (a fenced reply).
- The input may be fenced, multi-line, broken JSON or Python literals (``json_repair``), a
  call on the Action line (``t({"a": 1})``, ``t(a=1)``, ``t[text]``) or a JSON tool-call blob.
  An object is the arguments, anything else ``{"input": text}``. A partial ``Observation``
  left by a stop sequence (``Obs``, ``Observ``, ...) is dropped.
- The final answer is everything after its label, as written (fences, lists, blank lines).
- Errors, written for the model: no Action or Final Answer, ``Action: None``/``N/A``, an empty
  name, an Action with no input at all (``named_tool`` then names the tool).
- A ``<think>`` block, then ``reasoning`` (DeepSeek-style), are parsed when the visible text
  gives nothing usable.
- It never raises, and time is linear in the input: patterns are anchored and bounded, none
  backtracks over a blank run; at most ``MAX_MARKERS`` keyword lines are read; JSON repair
  and call parsing skip texts over ``MAX_REPAIR_CHARS``, and json_repair stops after
  ``REPAIR_BUDGET`` lines of its own work (it is quadratic on some broken JSON).

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import logging
import re
import sys
import unicodedata
from collections.abc import Iterable
from typing import Any

import json_repair

log = logging.getLogger(__name__)

__all__ = ["MAX_MARKERS", "MAX_REPAIR_CHARS", "REPAIR_BUDGET", "ParsedReply", "load_json", "parse_response"]

MAX_REPAIR_CHARS = 20_000  # longer inputs are neither repaired nor read as calls
REPAIR_BUDGET = 20_000  # lines json_repair may run on one input before it is given up

FORMAT_HINT = (
    "Reply either with 'Action: <tool name>' followed by 'Action Input: <JSON object>', "
    "or with 'Final Answer: <your answer>'."
)


@dataclasses.dataclass(frozen=True, slots=True)
class ParsedReply:
    """One parsed reply. Exactly one of: an action, a final answer, or an error."""

    thought: str = ""  # text before the Action / Final Answer, "Thought:" labels removed
    action: str | None = None  # tool name: the registry's name when it resolved, else as written
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


# --- public entry point --------------------------------------------------------------------


def parse_response(content: str, reasoning: str | None = None,
                   tools: Iterable[str] | None = None) -> ParsedReply:
    """Parse a reply; fall back to its ``<think>`` block, then ``reasoning``. Never raises."""
    try:
        names = tuple(n for n in tools or () if isinstance(n, str) and n.strip())
        visible, thinking = _split_think(content if isinstance(content, str) else "")
        reply = _parse_text(visible, names)
        if reply.error is not None:
            for other in (thinking, reasoning):
                if isinstance(other, str) and other.strip():
                    fallback = _parse_text(other, names)
                    if fallback.error is None:
                        return dataclasses.replace(fallback, from_reasoning=True)
        return reply
    except Exception:  # a parser bug must not end the run; say so and let the loop nudge
        log.exception("parse_response failed on a %d-character reply",
                      len(content) if isinstance(content, str) else 0)
        return ParsedReply(error=f"The reply could not be read. {FORMAT_HINT}")


_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


def _split_think(text: str) -> tuple[str, str]:
    """(visible text, thinking): a ``<think>`` block is taken out, closed, unclosed or unopened."""
    lowered = text.lower()
    close = lowered.find(_THINK_CLOSE)
    opened = lowered.find(_THINK_OPEN, 0, close if close != -1 else len(text))
    if close == -1 and opened == -1:
        return text, ""
    if close == -1:  # cut off while thinking
        return text[:opened], text[opened + len(_THINK_OPEN):]
    start = opened + len(_THINK_OPEN) if opened != -1 else 0
    before = text[:opened] if opened != -1 else ""
    return before + text[close + len(_THINK_CLOSE):], text[start:close]


# --- line classification -------------------------------------------------------------------

_FINAL, _INPUT, _ACTION, _THOUGHT, _OBSERVATION, _BARE_INPUT = (
    "final", "input", "action", "thought", "obs", "bare_input")

_KEYWORD_RE = re.compile(
    r"(final[ \t_-]?answer|action[ \t_-]?inputs?|action|thoughts?|observations?|input)"
    r"(?![A-Za-z])",
    re.IGNORECASE,
)
_LIST_MARK_RE = re.compile(r"(?:[-+•]|\d{1,3}[.)])[ \t]+")
_NUMBER_RE = re.compile(r"#?\d{1,3}(?!\d)")
_DECORATION = "*_`"
_COLONS = (":", "\uff1a")  # ASCII and full-width
_HINTS = frozenset(":\uff1a#*_`")
_WORD_RE = re.compile(r"final|action|thought|observation|input", re.IGNORECASE)
MAX_MARKERS = 200  # keyword lines read; later ones are text (real replies have a dozen)


@dataclasses.dataclass(frozen=True, slots=True)
class _Marker:
    index: int  # line number
    kind: str
    rest: str  # text after the keyword (and its colon) on the same line


def _kind_of(word: str) -> str:
    w = word.lower()
    if w.startswith("final"):
        return _FINAL
    if w.startswith("action"):
        return _INPUT if "input" in w else _ACTION
    if w.startswith("input"):
        return _BARE_INPUT
    return _THOUGHT if w.startswith("thought") else _OBSERVATION


def _classify(line: str) -> _Marker | None:
    """The keyword a line starts with (after decoration), or None. Linear in the line."""
    head = line[:200]
    if _WORD_RE.search(head) is None or not _HINTS.intersection(head):
        return None  # fast path: a keyword line has a keyword and a colon or decoration early
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
    if t.startswith(_COLONS):
        t = t[1:]
        if opened and not closed:  # **Action:** name
            t = t.lstrip(" \t")
            trimmed = t.lstrip(_DECORATION)
            if len(t) - len(trimmed) <= opened:
                t = trimmed
        return _Marker(-1, kind, t.strip(" \t"))
    # No colon: accept only a line that is nothing but the decorated keyword (a heading).
    if (heading or opened) and not t.strip() and kind != _BARE_INPUT:
        return _Marker(-1, kind, "")
    return None


def _is_fence(line: str) -> bool:
    s = line.lstrip(" \t>")
    return s.startswith(("```", "~~~"))


def _markers(lines: list[str], *, skip_fenced: bool) -> list[_Marker]:
    """The keyword lines, up to the first Observation after an Action (nothing after it counts)
    and at most MAX_MARKERS of them."""
    found: list[_Marker] = []
    in_fence = acted = False
    for i, line in enumerate(lines):
        if len(found) >= MAX_MARKERS or (acted and found[-1].kind == _OBSERVATION):
            break
        if skip_fenced and _is_fence(line):
            in_fence = not in_fence
            continue
        if in_fence or (m := _classify(line)) is None:
            continue
        if m.kind == _BARE_INPUT:  # "Input:" counts only right after an Action line
            if not found or found[-1].kind != _ACTION:
                continue
            m = dataclasses.replace(m, kind=_INPUT)
        found.append(_Marker(i, m.kind, m.rest))
        acted = acted or m.kind == _ACTION
    return found


def _has_step(markers: list[_Marker]) -> bool:
    return any(m.kind in (_ACTION, _FINAL, _INPUT) for m in markers)


# Used only when no keyword starts a line: split "Thought: x. Action: y" into lines. The
# pattern starts with the keyword's letters, so the engine skips to candidates at C speed.
_INLINE_RE = re.compile(
    r"(?:final[ \t_-]?answer|action[ \t_-]?input|action|observation)"
    r"\*{0,2}[ \t]{0,3}\*{0,2}[:\uff1a]",
    re.IGNORECASE,
)


def _split_inline(text: str) -> str:
    """A line break before each inline keyword (and the bold markers just before it) that does
    not continue a word."""
    parts, last = [], 0
    for m in _INLINE_RE.finditer(text):
        start = m.start()
        while start > m.start() - 2 and start > 0 and text[start - 1] == "*":
            start -= 1
        if start > 0 and text[start - 1].isascii() and text[start - 1].isalpha():
            if start == m.start():
                continue
            start += 1  # "x**Action:": the break goes between the stars, after a "*"
        parts += [text[last:start], "\n"]
        last = start
    return "".join([*parts, text[last:]])
_GLUED_INPUT_RE = re.compile(r"\*{0,2}action[ \t_-]?inputs?\*{0,2}[ \t]{0,3}[:\uff1a]", re.IGNORECASE)
_INLINE_OBSERVATION_RE = re.compile(r"(?<![A-Za-z])\*{0,2}observations?\*{0,2}[ \t]{0,3}:",
                                    re.IGNORECASE)


# --- deciding the step ---------------------------------------------------------------------


def _parse_text(text: str, names: tuple[str, ...]) -> ParsedReply:
    if not text.strip():
        return ParsedReply(error=f"The reply was empty. {FORMAT_HINT}")
    lines = text.splitlines()
    markers = _markers(lines, skip_fenced=True)
    if not _has_step(markers):  # keywords only inside fences: the fences are decoration
        lines = [line for line in lines if not _is_fence(line)]
        markers = _markers(lines, skip_fenced=False)
    if not _has_step(markers):
        inline = _split_inline("\n".join(lines))
        if inline.count("\n") != len(lines) - 1:
            lines = inline.splitlines()
            markers = _markers(lines, skip_fenced=False)
    return _decide(lines, markers, names)


def _decide(lines: list[str], markers: list[_Marker], names: tuple[str, ...]) -> ParsedReply:
    first_action = next((m for m in markers if m.kind == _ACTION), None)
    first_final = next((m for m in markers if m.kind == _FINAL), None)

    if first_final is not None and (first_action is None or first_final.index < first_action.index):
        return _final(lines, markers, first_final, len(lines))

    if first_action is None:
        if (blob := _blob_reply(lines, markers, names)) is not None:
            return blob
        thought = _thought(lines, markers, len(lines))
        if any(m.kind == _INPUT for m in markers):
            return ParsedReply(thought=thought, error="'Action Input:' was given without an "
                               f"'Action:' line naming the tool. {FORMAT_HINT}")
        return ParsedReply(thought=thought,
                           error=f"No 'Action:' or 'Final Answer:' was found. {FORMAT_HINT}")

    end = next((m.index for m in markers
                if m.kind == _OBSERVATION and m.index > first_action.index), len(lines))
    usable = [m for m in markers if m.index < end]
    if first_final is not None and first_final.index < end:
        return _final(lines, usable, first_final, end)
    return _action(lines, usable, first_action, end, names)


def _final(lines: list[str], markers: list[_Marker], marker: _Marker, end: int) -> ParsedReply:
    answer = "\n".join([marker.rest, *lines[marker.index + 1: end]]).strip()
    thought = _thought(lines, markers, marker.index)
    if not answer:
        return ParsedReply(thought=thought, error="'Final Answer:' was empty; write the answer "
                           "on the same line after 'Final Answer:'.")
    return ParsedReply(thought=thought, final_answer=answer)


def _action(lines: list[str], markers: list[_Marker], marker: _Marker, end: int,
            names: tuple[str, ...]) -> ParsedReply:
    thought = _thought(lines, markers, marker.index)
    later = [m for m in markers if m.index > marker.index]
    next_action = next((m.index for m in later if m.kind == _ACTION), end)
    extra = sum(1 for m in later if m.kind == _ACTION)

    name_text, raw = marker.rest, None
    if (m := _GLUED_INPUT_RE.search(name_text, 0, _NAME_CHARS * 4)) is not None:
        name_text, raw = name_text[: m.start()], name_text[m.end():]
    elif (inp := next((m for m in later if m.kind == _INPUT and m.index < next_action), None)):
        stop = next((m.index for m in later if m.index > inp.index), end)
        raw = "\n".join([inp.rest, *lines[inp.index + 1: stop]])
    # Text between the Action line and the next keyword line (or the block's end).
    stop = next((m.index for m in later), end)
    trailing = "\n".join(lines[marker.index + 1: stop]).strip()

    name, call = _split_call(name_text)
    if not name and call is None and trailing and not trailing.startswith(("{", "```", "~~~")):
        first, _, remainder = trailing.partition("\n")  # "Action:" alone, the name below it
        name, call = _split_call(first)
        trailing = remainder.strip()
    if raw is None and call is None and trailing.startswith(("{", "```", "~~~")):
        raw = trailing  # the input written under the Action line with no label

    if not name:  # a JSON blob naming the tool, on the Action line or below it
        blob = _json_object(_clean_input(call if call is not None else raw or ""))
        if (named := _blob_call(blob)) is not None:
            return _step(thought, *named, extra, names)
        return ParsedReply(thought=thought, extra_actions=extra, error="'Action:' had no tool "
                           "name; write the tool's name after 'Action:' and its arguments as a "
                           "JSON object after 'Action Input:'.")
    if _normalize(name) in _NO_NAMES:
        return ParsedReply(thought=thought, extra_actions=extra, error=f"'Action: {name}' names "
                           f"no tool. Call one of the tools, or give the answer. {FORMAT_HINT}")
    if _is_placeholder(name, names):
        return ParsedReply(thought=thought, extra_actions=extra, error=f"'Action: {name[:80]}' is "
                           "the format's placeholder, not a tool: write the name of one of the "
                           f"tools. {FORMAT_HINT}")
    if raw is None and call is None:
        tool = _resolve(name, names)
        return ParsedReply(thought=thought, extra_actions=extra, named_tool=tool, error=(
            f"'Action: {tool}' had no 'Action Input:'; write its arguments as a JSON object "
            "after 'Action Input:' ({} when it takes none)."))
    if raw is not None:
        raw = _clean_input(raw)
        return _step(thought, name, _arguments(raw), raw, extra, names)
    return _step(thought, name, _call_arguments(call or ""), call, extra, names)


def _step(thought: str, name: str, args: dict[str, Any], raw: str | None, extra: int,
          names: tuple[str, ...]) -> ParsedReply:
    """An action, or a final answer when the name is Final Answer (and not a registered tool)."""
    tool = _resolve(name, names)
    if tool not in names and _normalize(tool) in _FINAL_NAMES:
        if text := _answer_from_args(args, raw):
            return ParsedReply(thought=thought, final_answer=text)
    return ParsedReply(thought=thought, action=tool, action_input=args,
                       raw_action_input=raw, extra_actions=extra)


def _blob_reply(lines: list[str], markers: list[_Marker], names: tuple[str, ...]) -> ParsedReply | None:
    """A reply that is (or ends in) a JSON blob naming the tool, with no Action line."""
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("{")), None)
    if start is None:
        return None
    named = _blob_call(_json_object("\n".join(lines[start:])))
    if named is None:
        return None
    return _step(_thought(lines, markers, start), *named, 0, names)


def _blob_call(blob: dict[str, Any] | None) -> tuple[str, dict[str, Any], str | None] | None:
    """(name, arguments, raw) from ``{"action", "action_input"}``, ``{"name", "arguments"}``,
    or an OpenAI tool call ``{"function": {"name", "arguments"}}``; None when it names nothing."""
    if blob is None:
        return None
    if isinstance(blob.get("function"), dict):
        blob = blob["function"]
    key = next((k for k in ("action", "name", "tool", "tool_name")
                if isinstance(blob.get(k), str) and blob[k].strip()), None)
    arg_key = next((k for k in ("action_input", "arguments", "args", "parameters", "input",
                                "tool_input") if k in blob), None)
    if key is None or (key != "action" and arg_key is None):
        return None  # {"name": "Porto", ...} is an answer's data, not a tool call
    name, value = blob[key], blob[arg_key] if arg_key is not None else None
    if not _clean_name(name):
        return None
    if value is None:
        return _clean_name(name), {}, None
    if isinstance(value, str):
        return _clean_name(name), _string_arguments(value), value
    raw = json.dumps(value, ensure_ascii=False)
    return _clean_name(name), value if isinstance(value, dict) else {"input": raw}, raw


# --- pieces --------------------------------------------------------------------------------


def _thought(lines: list[str], markers: list[_Marker], before: int) -> str:
    """The text before line ``before``, with 'Thought:' labels removed."""
    labelled = {m.index: m.rest for m in markers if m.kind == _THOUGHT and m.index < before}
    parts = [labelled.get(i, line) for i, line in enumerate(lines[:before])]
    return "\n".join(parts).strip()


_OBSERVATION_WORD = "observations"
_BLANK = " \t"


def _drop_residue(s: str) -> str:
    """``s`` less a partial "Observation" a stop sequence left at its end, glued to the input
    (``1Obs``) or on a line of its own (``\\nObserv:``). Read from the end, without a regex:
    a pattern ending in ``[ \\t]*:?[ \\t]*\\Z`` backtracks quadratically on a long blank run."""
    t = s.rstrip(_BLANK)
    if t.endswith(":"):
        t = t[:-1].rstrip(_BLANK)
    for size in range(len(_OBSERVATION_WORD), 2, -1):
        if t[-size:].lower() == _OBSERVATION_WORD[:size]:
            before = t[:-size]
            line_start = before.rstrip(_BLANK)
            if line_start.endswith("\n"):  # on its own line
                return line_start[:-1]
            if before and not before[-1].isspace():  # glued to the input
                return before
            return s
    return s


def _clean_input(raw: str) -> str:
    """The input text: stop-sequence residue, fences, markdown emphasis left around a JSON
    value (``Action Input:** {...}``) and an imagined Observation removed."""
    s = raw.strip()
    for _ in range(2):  # residue can sit outside a fence and, once it is gone, inside it
        s = _drop_residue(s).strip()
        s = _strip_fences_around(s)
    return _cut_inline_observation(_strip_emphasis_around_json(s))


def _strip_emphasis_around_json(s: str) -> str:
    """``** {"a": 1}**`` -> ``{"a": 1}``: emphasis marks (at most three) before a JSON object or
    array, and the same after its end. Text that is not JSON keeps its marks."""
    body = s.lstrip("*_")
    if not 0 < len(s) - len(body) <= 3:
        return s
    body = body.lstrip(" \t")
    if not body.startswith(("{", "[")):
        return s
    end = body.rstrip("*_")
    return end.rstrip(" \t") if len(body) - len(end) <= 3 else body


def _cut_inline_observation(raw: str) -> str:
    """Drop an imagined ``Observation:`` on the input's own line, unless it is inside JSON."""
    if raw[:1] in ("{", "[", '"'):
        try:
            json.JSONDecoder(strict=False).raw_decode(raw)
            return raw
        except (ValueError, RecursionError):
            pass
    m = _INLINE_OBSERVATION_RE.search(raw)
    return raw[: m.start()].strip() if m else raw


def _strip_fences_around(text: str) -> str:
    """Remove a code fence wrapping the whole text (```json ... ```), or single backticks."""
    if text.startswith(("```", "~~~")):
        fence = text[:3]
        body = text.split("\n", 1)[1] if "\n" in text else text.lstrip(fence[0])
        close = body.rfind(fence)
        if close != -1:
            body = body[:close]
        return body.strip()
    if len(text) >= 2 and text[0] == "`" and text[-1] == "`" and "\n" not in text:
        return text.strip("`").strip()
    return text


_ESCAPED = tuple("\\" + ch for ch in "_*`[]()#-")  # markdown escapes: \_ is _


def _unescape(text: str) -> str:
    for pair in _ESCAPED:  # str.replace, not re.sub: a template per match costs ~3 µs
        text = text.replace(pair, pair[1])
    return text
_CALL_TRIM = " \t*`\"'"  # decoration around a name or a call; brackets may be the call's
_NAME_TRIM = _CALL_TRIM + "[]"
_NO_NAMES = frozenset({"none", "n/a", "na", "null", "nothing", "no_tool", "no_action", "-"})
# Names copied from a format's template instead of a tool's name ("Action: tool_name",
# "Action: the action to take, should be one of [...]"), once normalised.
_PLACEHOLDERS = frozenset({"tool_name", "toolname", "tool", "action", "action_name", "name",
                           "function_name", "tool_to_use", "the_tool_name", "your_tool_name",
                           "name_of_the_tool", "name_of_tool", "the_tool", "tool_name_here"})
_PLACEHOLDER_RE = re.compile(r"x{3,}|the_action_to_take.*|.*should_be_one_of.*")


def _is_placeholder(name: str, names: tuple[str, ...]) -> bool:
    """True for a template's placeholder written as the name (never a registered tool's)."""
    if _resolve(name, names) in names:
        return False
    key = _normalize(name.strip("<>{}[]$ "))
    return key in _PLACEHOLDERS or _PLACEHOLDER_RE.fullmatch(key[:200]) is not None
_FINAL_NAMES = frozenset({"final_answer", "finalanswer", "final", "answer", "finish"})


def _split_call(text: str) -> tuple[str, str | None]:
    """The tool name and, for ``tool(args)``, ``tool[text]``, ``tool {json}`` or a bare JSON
    blob, the argument text. The name is the whole text less decoration, never a first word."""
    s = _unescape(text).strip(_CALL_TRIM)
    if not s:
        return "", None
    if s.startswith("{"):
        return "", s
    for opener, closer in (("(", ")"), ("[", "]")):
        if s.endswith(closer) and (at := s.find(opener)) > 0:
            return _clean_name(s[:at]), s[at + 1: -1]
    if (brace := s.find("{")) > 0:
        return _clean_name(s[:brace]), s[brace:]
    return _clean_name(s), None


# Control and format characters (C0, C1, zero-width, bidi marks, BOM) and lone surrogates
# are invisible: never part of a tool name, and a name of nothing else is no name.
_INVISIBLE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u202a-\u202e"
                           "\u2060-\u2064\ufeff\ud800-\udfff]")


def _clean_name(text: str) -> str:
    visible = _INVISIBLE_RE.sub("", _unescape(text))
    return visible.strip().strip(_NAME_TRIM).rstrip(".,:;").strip(_NAME_TRIM).strip()


_NAME_CHARS = 256  # longer names match no tool (the registry's are at most 64 characters)


def _normalize(name: str) -> str:
    """Case, spacing and separators folded: "Search the Internet" ~ "search_the_internet".
    Past _NAME_CHARS only a prefix is folded, marked so that it equals no short name."""
    if len(name) > _NAME_CHARS:
        name = name[:_NAME_CHARS] + "\x00"
    folded = unicodedata.normalize("NFKC", name).casefold()
    return re.sub(r"[\s_.\-]+", "_", folded.strip(_NAME_TRIM)).strip("_")


def _resolve(name: str, names: tuple[str, ...]) -> str:
    """The registry's name for ``name``: exact, else the one tool it matches once normalised."""
    if not names or name in names:
        return name
    key = _normalize(name)
    matches = [n for n in names if _normalize(n) == key]
    return matches[0] if len(matches) == 1 else name


def _json_object(raw: str) -> dict[str, Any] | None:
    value = _load_json(raw)
    return value if isinstance(value, dict) else None


_MISSING = object()


def load_json(text: str, default: Any = None) -> Any:
    """The JSON value ``text`` holds, read as an Action Input is: strict JSON (its first value),
    a Python literal, then json_repair within ``REPAIR_BUDGET`` and only up to
    ``MAX_REPAIR_CHARS``; ``default`` when it holds none. Never raises, whatever the nesting."""
    value = _load_json(text) if isinstance(text, str) else _MISSING
    return default if value is _MISSING else value
_NUMBER_RE_FULL = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _load_json(raw: str) -> Any:
    """Strict JSON first (the first value, ignoring trailing text), then a Python literal
    (``{'a': True}``, read by Python's own parser at C speed, whatever its length), then
    json_repair within its budget."""
    s = raw.strip()
    if not s or s[0] not in "{[\"":
        if s in ("true", "false", "null") or _NUMBER_RE_FULL.fullmatch(s[:400]):
            try:
                return json.loads(s)
            except (ValueError, RecursionError):
                return _MISSING
        return _MISSING
    try:
        return json.JSONDecoder(strict=False).raw_decode(s)[0]
    except (ValueError, RecursionError):
        pass
    if len(s) > MAX_REPAIR_CHARS:
        return _MISSING
    if s[0] != '"' and (value := _python_literal(s)) is not _MISSING:
        return value
    try:
        repaired = _bounded_repair(s)
    except (_OverBudget, Exception):  # json_repair may also raise on hostile input
        return _MISSING
    if repaired == "" and s[0] != '"':
        return _MISSING
    return repaired


def _python_literal(s: str) -> Any:
    """The JSON value a Python literal denotes; _MISSING when ``s`` is none, or holds what JSON
    cannot (a set, bytes)."""
    try:
        return json.loads(json.dumps(ast.literal_eval(s)))
    except Exception:  # SyntaxError, ValueError, TypeError, MemoryError, RecursionError, warnings
        return _MISSING


class _OverBudget(BaseException):
    """json_repair ran more than REPAIR_BUDGET lines on one input. A BaseException, so that
    json_repair's own ``except Exception`` handlers do not swallow it."""


def _bounded_repair(s: str) -> Any:
    """``json_repair.loads(s)``, given up after REPAIR_BUDGET traced lines (raises _OverBudget).

    json_repair looks ahead from each quote or unquoted word to the end of the text, so a few
    kilobytes of broken JSON written for it (``{{{{x"x"x"...``) take seconds, and it has no time
    limit of its own (mangiucugna/json_repair#203). A size cap low enough to bound that would
    refuse ordinary inputs, so its work is counted instead: a trace function sees every line
    it runs in this thread (its look-ahead loops included) and ends it past the budget. Lines,
    not a clock: the same input is repaired, or not, on any machine. The caller's trace
    function (a debugger, coverage) is put back afterwards.
    """
    lines = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal lines
        lines += 1
        if lines > REPAIR_BUDGET:
            raise _OverBudget
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        return json_repair.loads(s)
    finally:
        sys.settrace(previous)


_NO_INPUT = frozenset({"", "null", "none", "n/a", "nothing", "no input", '""', "''", "{}"})


# An input written as a call, ``SomeTool({"a": 1})`` or ``SomeTool(a=1)``, under an Action line.
_WRAPPED_RE = re.compile(r"([A-Za-z_][\w.-]{0,63})[ \t]*\((.*)\)", re.DOTALL)


def _arguments(raw: str) -> dict[str, Any]:
    if raw.strip().lower().rstrip(".") in _NO_INPUT:
        return {}
    value = _load_json(raw)
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return _string_arguments(value)
    if value is _MISSING and (unwrapped := _unwrapped_arguments(raw.strip())) is not None:
        return unwrapped
    return {"input": raw.strip()}


def _unwrapped_arguments(raw: str) -> dict[str, Any] | None:
    """The arguments inside a call wrapper, when they are a JSON object or keyword arguments.

    The Action line names the tool and wins over the wrapper's name, which models fill with
    anything (a schema's class name, the tool in another spelling, another tool): the protocol
    asks for the tool on the Action line and only its arguments below it. A wrapper around
    plain values (``sqrt(16)`` for a calculator) is the input itself and stays text."""
    if len(raw) > MAX_REPAIR_CHARS or (m := _WRAPPED_RE.fullmatch(raw)) is None:
        return None
    inner = m.group(2).strip()
    if inner.startswith("{"):
        value = _load_json(inner)
        return value if isinstance(value, dict) else None
    if "=" not in inner:
        return None
    args = _call_arguments(inner)
    return args if args and "input" not in args else None


def _string_arguments(text: str) -> dict[str, Any]:
    """A string input; a JSON object written as a string is the object."""
    if text.lstrip().startswith("{"):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            return value
    return {"input": text}


def _call_arguments(text: str) -> dict[str, Any]:
    """Arguments written as a call: ``{json}``, ``a=1, b="x"``, ``key: 'v'`` pairs, or text."""
    t = text.strip()
    if not t:
        return {}
    if t[0] in "{\"":
        value = _load_json(t)
        if isinstance(value, dict):
            return value
        if isinstance(value, str):
            return _string_arguments(value)
    if len(t) > MAX_REPAIR_CHARS:
        return {"input": t}
    # Python's own parser reads keyword arguments; no home-made tokenizer for them.
    try:
        call = ast.parse(f"f({t})", mode="eval").body
        if isinstance(call, ast.Call) and call.keywords and not call.args and all(
                k.arg for k in call.keywords):
            return {str(k.arg): ast.literal_eval(k.value) for k in call.keywords}
        if isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords:
            value = ast.literal_eval(call.args[0])
            return {"input": value if isinstance(value, str) else json.dumps(value)}
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        pass
    if ":" in t:
        pairs = _load_json("{" + t + "}")
        if isinstance(pairs, dict) and pairs:
            return pairs
    return {"input": t.strip("\"'")}


def _answer_from_args(args: dict[str, Any], raw: str | None) -> str:
    if len(args) == 1:
        (value,) = args.values()
        return value.strip() if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return (raw or "").strip()
