"""Property-based tests of the parser: no input makes it raise, results keep their invariants."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.parser import parse_response
from tests.agent.test_parser import check_invariants

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


NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,19}", fullmatch=True).filter(
    lambda n: n not in ("final", "answer", "final_answer", "finalanswer")
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
def test_a_well_formed_final_answer_round_trips(thought: str, answer: str) -> None:
    reply = parse_response(f"Thought: {thought}\nFinal Answer: {answer}")
    assert reply.is_final
    assert reply.final_answer == "\n".join(answer.splitlines()).strip()
