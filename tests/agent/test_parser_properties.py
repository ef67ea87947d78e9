"""Property-based tests of the parser: no input makes it raise, results keep their invariants."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent.parser import parse_response
from tests.agent.test_parser import check_invariants

pytestmark = pytest.mark.slow  # runs thousands of generated replies: handed out first (tests/conftest.py)

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Pieces that make the parser's life hard: keywords, decoration, fences, broken JSON.
PIECES = st.sampled_from([
    "Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:", "**Action:**",
    "Action 1:", "ACTION :", "### Final Answer", "**", "```", "```json", "~~~", "\n", "\n\n",
    " ", "\t", "{", "}", "[", "]", '"', "'", ":", ",", "(", ")", "calculator", "x", "2+2",
    '{"a": 1', "{'a': 'b',}", "null", "None", "#", ">", "- ", "1. ", "Final", "Answer", "\r\n",
    "\u200b", "\u202e", "é", "🙂",
])
KEYWORDISH = st.lists(PIECES, max_size=40).map("".join)
ANY_TEXT = st.one_of(st.text(max_size=400), KEYWORDISH)


@SETTINGS
@given(ANY_TEXT)
def test_no_string_makes_it_raise_and_invariants_hold(content: str) -> None:
    check_invariants(parse_response(content))


@SETTINGS
@given(ANY_TEXT, st.one_of(st.none(), ANY_TEXT))
def test_no_content_and_reasoning_pair_makes_it_raise(content: str, reasoning: str | None) -> None:
    reply = parse_response(content, reasoning)
    check_invariants(reply)
    if reply.from_reasoning:
        assert parse_response(content).error is not None


# not the words that mean an answer, nor those that real replies use for "no tool" ("Action: None"),
# which the parser reads as naming no tool on purpose
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,19}", fullmatch=True).filter(
    lambda n: n not in ("final", "answer", "final_answer", "finalanswer",
                        "none", "na", "null", "nothing", "no_tool", "no_action")
)
JSON_VALUES = st.one_of(
    st.integers(-10**6, 10**6), st.booleans(), st.text(max_size=30),
    st.lists(st.integers(), max_size=3),
)
ARGS = st.dictionaries(st.from_regex(r"[a-z_]{1,10}", fullmatch=True), JSON_VALUES, max_size=4)
PLAIN_THOUGHT = st.from_regex(r"[A-Za-z ,.!?]{0,80}", fullmatch=True)


@SETTINGS
@given(PLAIN_THOUGHT, NAMES, ARGS)
def test_a_well_formed_action_round_trips(thought: str, name: str, args: dict) -> None:
    text = f"Thought: {thought}\nAction: {name}\nAction Input: {json.dumps(args)}"
    reply = parse_response(text)
    assert (reply.action, reply.action_input) == (name, args)
    assert reply.thought == thought.strip()
    assert reply.extra_actions == 0


@SETTINGS
@given(PLAIN_THOUGHT, st.text(alphabet=st.characters(blacklist_characters="`~\r"), max_size=200)
       .filter(lambda s: s.strip()))
@example("", "0 \x850")
def test_a_well_formed_final_answer_round_trips(thought: str, answer: str) -> None:
    reply = parse_response(f"Thought: {thought}\nFinal Answer: {answer}")
    assert reply.is_final
    # the text after the marker loses its spaces and tabs at both ends, on the marker's line too
    # when more lines follow ("0 \x850" is "0" and "0": CI once drew that one)
    first, *rest = answer.splitlines()
    assert reply.final_answer == "\n".join([first.strip(" \t"), *rest]).strip()


# --- with a tool list, on hostile input (issue 8) -----------------------------------------

TOOL_NAMES = st.lists(st.text(min_size=1, max_size=30), max_size=6)


@SETTINGS
@given(ANY_TEXT, st.one_of(st.none(), ANY_TEXT), TOOL_NAMES)
@example("Action: \x1f\nAction Input: ", None, [])  # issue 28: the name was "\x1f"
def test_no_content_reasoning_and_tool_list_makes_it_raise(content: str, reasoning: str | None,
                                                          tools: list[str]) -> None:
    reply = parse_response(content, reasoning, tools=tools)
    check_invariants(reply)
    if reply.named_tool is not None:
        assert reply.error is not None and reply.action is None


REGISTERED = st.sampled_from(["Search the internet", "read_file", "fetch-url", "github.list_issues"])


def _respell(name: str, data: st.DataObject) -> str:
    """The name as models write it: other case, other separators, decoration or quotes."""
    words = name.replace("_", " ").replace("-", " ").replace(".", " ").split()
    words = [data.draw(st.sampled_from([w, w.upper(), w.capitalize(), w.lower()])) for w in words]
    joined = data.draw(st.sampled_from([" ", "_", "  ", "-"])).join(words)
    wrap = data.draw(st.sampled_from(["{}", "`{}`", "**{}**", '"{}"', "'{}'", " {} "]))
    return wrap.format(joined)


@SETTINGS
@given(REGISTERED, st.data())
def test_a_respelled_registered_name_resolves_to_it(name: str, data: st.DataObject) -> None:
    written = _respell(name, data)
    reply = parse_response(f"Action: {written}\nAction Input: {{}}",
                           tools=["Search the internet", "read_file", "fetch-url", "github.list_issues"])
    assert reply.action == name, written


# One character from each Unicode plane (0-16), lone surrogates included.
PLANE_CHARS = st.integers(0, 16).flatmap(
    lambda plane: st.integers(plane * 0x10000, plane * 0x10000 + 0xFFFF)).map(chr)
HOSTILE_PIECES = st.one_of(PIECES, PLANE_CHARS, st.sampled_from([
    "<think>", "</think>", "Obs", "Observ", "{", "[", "(", "((", '{"a": ', "'", "\\_", "：",
    "Action: f(", "Action Input: {", "```json\n", "~~~\n", "**Action Input**:", "Input:",
]))
HOSTILE = st.lists(HOSTILE_PIECES, min_size=1, max_size=30).map("".join)

# Linear time is checked as a bound, not a timing: a hostile piece repeated to a few hundred
# kilobytes must parse within the suite's timeout, which a quadratic step would blow through.
BIG = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@BIG
@given(HOSTILE, st.integers(2_000, 20_000))
def test_a_hostile_piece_repeated_to_hundreds_of_kilobytes_parses(piece: str, times: int) -> None:
    text = (piece * times)[:300_000]
    check_invariants(parse_response(text, text[:1000], tools=["f", "Search the internet"]))


@BIG
@given(st.sampled_from(["{", "[", "(", '{"a": ', "[{", "<think>", "```\n", "> ", "**"]),
       st.integers(1_000, 100_000))
def test_deep_nesting_and_unbalanced_fences_parse(opener: str, depth: int) -> None:
    for text in (f"Action: f\nAction Input: {opener * depth}", f"Action: f({opener * depth})",
                 opener * depth, f"```\nAction: f\nAction Input: {opener * depth}"):
        check_invariants(parse_response(text))


@SETTINGS
@given(st.lists(PLANE_CHARS, max_size=200).map("".join), st.lists(PLANE_CHARS, max_size=40).map("".join))
def test_every_unicode_plane_in_names_inputs_and_answers(text: str, name: str) -> None:
    for content in (text, f"Action: {name}\nAction Input: {text}", f"Final Answer: {text}",
                    f"Action: {name}({text})"):
        check_invariants(parse_response(content, tools=[name] if name.strip() else None))
