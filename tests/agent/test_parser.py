"""The ReAct reply parser: every rule of the DESIGN.md contract, one test each."""

from __future__ import annotations

import sys

import pytest

from agent.parser import MAX_REPAIR_CHARS, ParsedReply, parse_response


def action_of(reply: ParsedReply) -> tuple[str | None, dict | None]:
    return reply.action, reply.action_input


# --- the plain protocol --------------------------------------------------------------------


def test_thought_action_and_json_input() -> None:
    reply = parse_response(
        'Thought: I need to compute.\nAction: calculator\nAction Input: {"expression": "2+2"}'
    )
    assert reply.thought == "I need to compute."
    assert action_of(reply) == ("calculator", {"expression": "2+2"})
    assert reply.raw_action_input == '{"expression": "2+2"}'
    assert reply.is_final is False and reply.final_answer is None
    assert reply.extra_actions == 0 and reply.error is None


def test_final_answer_with_thought() -> None:
    reply = parse_response("Thought: I know this.\nFinal Answer: Paris is the capital.")
    assert reply.is_final
    assert reply.final_answer == "Paris is the capital."
    assert reply.thought == "I know this."
    assert reply.action is None and reply.action_input is None and reply.error is None


def test_multi_line_final_answer_is_kept_whole() -> None:
    reply = parse_response("Final Answer: Steps:\n1. mix\n2. bake\n\nEnjoy!")
    assert reply.final_answer == "Steps:\n1. mix\n2. bake\n\nEnjoy!"


# --- hallucinated observations ------------------------------------------------------------


def test_imagined_observation_and_everything_after_it_are_dropped() -> None:
    reply = parse_response(
        "Thought: let me compute\n"
        "Action: calculator\n"
        'Action Input: {"expression": "6*7"}\n'
        "Observation: 42\n"
        "Thought: I now know\n"
        "Final Answer: 42"
    )
    assert not reply.is_final
    assert action_of(reply) == ("calculator", {"expression": "6*7"})


def test_actions_after_an_imagined_observation_are_not_counted() -> None:
    reply = parse_response(
        "Action: a\nAction Input: {}\nObservation: x\nAction: b\nAction Input: {}"
    )
    assert reply.action == "a" and reply.extra_actions == 0


def test_observation_on_the_input_line_ends_the_input() -> None:
    reply = parse_response('Action: calculator\nAction Input: {"expression": "1"} Observation: 1')
    assert reply.action_input == {"expression": "1"}


def test_observation_before_any_action_does_not_cut() -> None:
    reply = parse_response("Observation: earlier result was 3\nThought: fine\nFinal Answer: 3")
    assert reply.final_answer == "3"


# --- final answer wins ---------------------------------------------------------------------


def test_final_answer_wins_over_a_later_action_its_text_mentions() -> None:
    reply = parse_response(
        "Final Answer: To call a tool, write\nAction: <name>\nAction Input: {...}"
    )
    assert reply.is_final
    assert reply.final_answer == "To call a tool, write\nAction: <name>\nAction Input: {...}"


def test_final_answer_wins_over_an_earlier_action_without_observation() -> None:
    reply = parse_response(
        'Action: calculator\nAction Input: {"expression": "2+2"}\nFinal Answer: 4'
    )
    assert reply.is_final and reply.final_answer == "4"
    assert reply.action is None


def test_final_answer_mentioning_observation_keeps_it() -> None:
    reply = parse_response("Final Answer: The word Observation: is a keyword.\nObservation: yes")
    assert reply.final_answer == "The word Observation: is a keyword.\nObservation: yes"


# --- only the first action runs ------------------------------------------------------------


def test_extra_actions_are_counted_not_run() -> None:
    reply = parse_response(
        'Action: calculator\nAction Input: {"expression": "1+1"}\n'
        'Action: current_time\nAction Input: {"timezone": "UTC"}\n'
        'Action: weather\nAction Input: {"place": "Oslo"}'
    )
    assert action_of(reply) == ("calculator", {"expression": "1+1"})
    assert reply.extra_actions == 2


def test_second_action_input_is_not_taken_for_the_first_action() -> None:
    reply = parse_response('Action: current_time\nAction: calculator\nAction Input: {"x": 1}')
    assert reply.action is None and reply.error is not None
    assert reply.named_tool == "current_time"
    assert reply.extra_actions == 1


# --- preambles and decoration --------------------------------------------------------------


def test_preamble_before_the_keywords_becomes_thought() -> None:
    reply = parse_response(
        "Sure! Let me help with that.\n\nAction: calculator\nAction Input: {\"expression\": \"3\"}"
    )
    assert reply.action == "calculator"
    assert reply.thought == "Sure! Let me help with that."


@pytest.mark.parametrize(
    "text",
    [
        '**Action:** calculator\n**Action Input:** {"expression": "9"}',
        '**Action**: calculator\n**Action Input**: {"expression": "9"}',
        'Action 1: calculator\nAction Input 1: {"expression": "9"}',
        'ACTION : calculator\nACTION INPUT : {"expression": "9"}',
        'action:calculator\naction input:{"expression": "9"}',
        '   Action:    calculator   \n  Action Input:   {"expression": "9"}  ',
        '- Action: calculator\n- Action Input: {"expression": "9"}',
        '> **Action:** `calculator`\n> **Action Input:** `{"expression": "9"}`',
        '### Action: calculator\n### Action Input: {"expression": "9"}',
        'Action: calculator\nAction_Input: {"expression": "9"}',
        'Action: "calculator"\nAction Input: {"expression": "9"}',
        'Action: calculator.\nAction Input: {"expression": "9"}',
        'Action:\ncalculator\nAction Input: {"expression": "9"}',
        'Action: calculator Action Input: {"expression": "9"}',
    ],
)
def test_decorated_action_keywords_are_tolerated(text: str) -> None:
    reply = parse_response(text)
    assert action_of(reply) == ("calculator", {"expression": "9"}), reply


@pytest.mark.parametrize(
    "text",
    [
        "### Final Answer\nIt is 9.",
        "**Final Answer:** It is 9.",
        "**Final Answer**\nIt is 9.",
        "FINAL ANSWER: It is 9.",
        "final answer : It is 9.",
        "Final_Answer: It is 9.",
        "Thought: easy. Final Answer: It is 9.",
        "1. Final Answer: It is 9.",
    ],
)
def test_decorated_final_answer_is_tolerated(text: str) -> None:
    assert parse_response(text).final_answer == "It is 9."


def test_words_that_only_start_with_a_keyword_are_not_keywords() -> None:
    reply = parse_response("Actions: none needed\nAction items follow:\nFinal answers vary.")
    assert reply.error is not None
    assert reply.action is None and not reply.is_final


def test_keywords_inside_a_code_fence_in_a_preamble_are_ignored() -> None:
    reply = parse_response(
        "The format is:\n```\nAction: tool\nAction Input: {}\n```\nFinal Answer: understood"
    )
    assert reply.final_answer == "understood"


def test_a_reply_wholly_inside_a_code_fence_is_still_read() -> None:
    reply = parse_response('```\nAction: calculator\nAction Input: {"expression": "2"}\n```')
    assert action_of(reply) == ("calculator", {"expression": "2"})


def test_a_fence_in_the_final_answer_is_kept() -> None:
    assert parse_response("Final Answer:\n```\nprint(1)\n```").final_answer == "```\nprint(1)\n```"


# --- action input forms --------------------------------------------------------------------


def test_fenced_json_input() -> None:
    reply = parse_response(
        'Action: calculator\nAction Input:\n```json\n{"expression": "2**10"}\n```'
    )
    assert reply.action_input == {"expression": "2**10"}
    assert reply.raw_action_input == '{"expression": "2**10"}'


def test_multi_line_json_input() -> None:
    reply = parse_response(
        'Action: weather\nAction Input: {\n  "place": "Oslo",\n  "days": 2\n}\nThought: wait'
    )
    assert reply.action_input == {"place": "Oslo", "days": 2}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"place": "Oslo", "days": 2,}', {"place": "Oslo", "days": 2}),
        ("{'place': 'Oslo'}", {"place": "Oslo"}),
        ('{place: "Oslo", days: 2}', {"place": "Oslo", "days": 2}),
        ('{"place": "Oslo"', {"place": "Oslo"}),
        ('{"place": "Oslo", "note": "say \\"hi\\""}', {"place": "Oslo", "note": 'say "hi"'}),
    ],
)
def test_broken_json_is_repaired(raw: str, expected: dict) -> None:
    assert parse_response(f"Action: weather\nAction Input: {raw}").action_input == expected


def test_plain_text_input_becomes_input_key() -> None:
    reply = parse_response("Action: weather\nAction Input: Paris, France")
    assert reply.action_input == {"input": "Paris, France"}
    assert reply.raw_action_input == "Paris, France"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [('"Paris"', {"input": "Paris"}), ("42", {"input": "42"}), ("[1, 2]", {"input": "[1, 2]"})],
)
def test_json_scalars_and_arrays_become_input_key(raw: str, expected: dict) -> None:
    assert parse_response(f"Action: calculator\nAction Input: {raw}").action_input == expected


@pytest.mark.parametrize("raw", ["", "{}", "None", "null", "N/A"])
def test_empty_or_null_input_means_no_arguments(raw: str) -> None:
    reply = parse_response(f"Action: current_time\nAction Input: {raw}")
    assert action_of(reply) == ("current_time", {})


def test_missing_action_input_is_an_error_that_names_the_tool() -> None:
    reply = parse_response("Thought: what time is it\nAction: current_time")
    assert action_of(reply) == (None, None)
    assert reply.named_tool == "current_time"
    assert "Action Input" in reply.error


def test_call_syntax_in_the_action_line() -> None:
    reply = parse_response("Action: calculator(2 + 3)")
    assert action_of(reply) == ("calculator", {"input": "2 + 3"})


def test_json_on_the_line_after_action() -> None:
    reply = parse_response('Action: calculator\n{"expression": "7"}')
    assert action_of(reply) == ("calculator", {"expression": "7"})


def test_langchain_json_blob() -> None:
    reply = parse_response(
        'Action:\n```json\n{"action": "calculator", "action_input": {"expression": "5"}}\n```'
    )
    assert action_of(reply) == ("calculator", {"expression": "5"})


def test_action_named_final_answer_is_a_final_answer() -> None:
    reply = parse_response('Action: Final Answer\nAction Input: "It is 5."')
    assert reply.is_final and reply.final_answer == "It is 5."


def test_first_json_value_is_taken_when_text_follows_it() -> None:
    reply = parse_response('Action: calculator\nAction Input: {"expression": "1"} (to add)')
    assert reply.action_input == {"expression": "1"}


def test_oversized_broken_json_is_not_repaired_but_passed_as_text() -> None:
    raw = '{"expression": "' + "1+" * MAX_REPAIR_CHARS
    reply = parse_response(f"Action: calculator\nAction Input: {raw}")
    assert reply.action == "calculator"
    assert reply.action_input == {"input": raw}


@pytest.mark.parametrize("raw", [
    "{" * 8 + 'x"' * 9_000,  # json_repair looks ahead from every quote: seconds for these
    "{" * 8 + "x " * 9_000,
    '{"q": "' + "a, " * 6_000,
])
def test_broken_json_that_json_repair_reads_slowly_is_passed_as_text(raw: str) -> None:
    assert len(raw) < MAX_REPAIR_CHARS
    reply = parse_response(f"Action: calculator\nAction Input: {raw}")
    assert reply.action == "calculator"
    assert reply.action_input == {"input": raw.strip()}


def test_the_repair_budget_leaves_the_callers_trace_function_in_place() -> None:
    events: list[str] = []

    def tracer(frame: object, event: str, arg: object) -> None:
        events.append(event)

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        reply = parse_response("Action: calculator\nAction Input: {" + "x " * 9_000)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(previous)
    assert reply.action == "calculator"
    assert events  # a debugger or coverage still sees the parser's calls around the repair


def test_a_long_python_literal_is_read_whatever_its_length() -> None:
    note = "call the plumber about the boiler; " * 300
    reply = parse_response(f"Action: remember\nAction Input: {{'note': '{note}', 'urgent': True}}")
    assert reply.action_input == {"note": note, "urgent": True}


@pytest.mark.parametrize("raw", ["[" * 5000, '{"a":' * 5000])
def test_deeply_nested_input_does_not_break_the_parser(raw: str) -> None:
    reply = parse_response(f"Action: calculator\nAction Input: {raw}")
    assert reply.action == "calculator"
    assert reply.action_input == {"input": raw}


# --- errors --------------------------------------------------------------------------------


def test_empty_reply_is_an_error_that_says_how_to_answer() -> None:
    reply = parse_response("   \n ")
    assert reply.error is not None and "empty" in reply.error
    assert "Final Answer:" in reply.error and "Action Input:" in reply.error


def test_plain_text_without_keywords_is_an_error() -> None:
    reply = parse_response("The answer is probably 4.")
    assert reply.error is not None and "No 'Action:' or 'Final Answer:'" in reply.error
    assert reply.thought == "The answer is probably 4."


def test_action_without_a_name_is_an_error() -> None:
    reply = parse_response('Action:\nAction Input: {"expression": "1"}')
    assert reply.action is None
    assert reply.error is not None and "no tool name" in reply.error


def test_action_input_without_action_is_an_error() -> None:
    reply = parse_response('Action Input: {"expression": "1"}')
    assert reply.error is not None and "without an 'Action:'" in reply.error


def test_empty_final_answer_is_an_error() -> None:
    reply = parse_response("Thought: done\nFinal Answer:   \n")
    assert not reply.is_final and reply.final_answer is None
    assert reply.error is not None and "'Final Answer:' was empty" in reply.error


def test_non_string_content_is_an_error_not_a_crash() -> None:
    reply = parse_response(None)  # type: ignore[arg-type]
    assert reply.error is not None


# --- reasoning channel ---------------------------------------------------------------------


def test_empty_content_falls_back_to_reasoning() -> None:
    reply = parse_response("", reasoning="Thought: sum\nAction: calculator\nAction Input: 1+1")
    assert action_of(reply) == ("calculator", {"input": "1+1"})
    assert reply.from_reasoning and reply.thought == "sum"


def test_unusable_content_falls_back_to_reasoning() -> None:
    reply = parse_response("Hmm, let me think.", reasoning="Final Answer: 12")
    assert reply.final_answer == "12" and reply.from_reasoning


def test_usable_content_wins_over_reasoning() -> None:
    reply = parse_response("Final Answer: from content", reasoning="Final Answer: from reasoning")
    assert reply.final_answer == "from content" and not reply.from_reasoning


def test_when_neither_is_usable_the_content_error_is_kept() -> None:
    reply = parse_response("", reasoning="just musing")
    assert reply.error is not None and "empty" in reply.error
    assert not reply.from_reasoning


# --- size ------------------------------------------------------------------------------------


def test_a_one_megabyte_reply_is_parsed() -> None:
    filler = ("lorem ipsum dolor sit amet " * 40 + "\n") * 930
    assert len(filler) > 1_000_000
    reply = parse_response(filler + 'Action: calculator\nAction Input: {"expression": "1"}')
    assert action_of(reply) == ("calculator", {"expression": "1"})


def check_invariants(reply: ParsedReply) -> None:
    """What every parse result satisfies, whatever the input."""
    assert isinstance(reply, ParsedReply)
    assert reply.is_final == (reply.final_answer is not None)
    assert isinstance(reply.thought, str)
    assert isinstance(reply.extra_actions, int) and reply.extra_actions >= 0
    outcomes = [reply.action is not None, reply.is_final, reply.error is not None]
    assert sum(outcomes) == 1, reply
    if reply.action is not None:
        assert reply.action.strip() and isinstance(reply.action_input, dict)
    else:
        assert reply.action_input is None and reply.raw_action_input is None
    if reply.is_final:
        assert reply.final_answer.strip() and reply.extra_actions == 0
    if reply.error is not None:
        assert reply.error.strip()


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        (" " * 1_000_000 + "x", "error"),
        ("*" * 1_000_000, "error"),
        ("#" * 1_000_000, "error"),
        ("\n" * 1_000_000, "error"),
        ("Action" + " \t" * 500_000 + ":", "error"),
        ("Action " + "1" * 1_000_000 + ":", "error"),
        ("Action: a\n" * 100_000, "error"),  # no Action Input: named_tool says "a"
        ("Observation: \n" * 70_000, "error"),
        ("```\n" * 250_000, "error"),
        ("x final answer" * 70_000, "error"),
        ("Final Answer: " + "y" * 1_000_000, "final"),
        ('Action: x\nAction Input: {' + '"a": 1, ' * 120_000, "action"),
        # issue 22: stop-word residue before a long blank run made the residue pattern quadratic
        ("Action: x\nAction Input: 1Obs" + " " * 1_000_000 + "x", "action"),
        ("Action: x\nAction Input: 1\nObs" + "\t" * 1_000_000 + "\nx", "action"),
        ("Action: x\nAction Input: 1Observation:" + " " * 1_000_000 + "x", "action"),
        ("Thought: x. Action: y. " * 45_000, "error"),
        ("*" * 1_000_000 + "Action: x", "error"),
        ("Action: " + "\\_" * 500_000, "error"),
        ("Action: x\nAction Input: 1\n" + "Observation: \n" * 70_000, "action"),
    ],
)
def test_pathological_megabyte_inputs_parse_quickly_and_cleanly(text: str, outcome: str) -> None:
    reply = parse_response(text)
    check_invariants(reply)
    kind = "action" if reply.action else "final" if reply.is_final else "error"
    assert kind == outcome


def test_observation_inside_a_json_string_is_kept() -> None:
    reply = parse_response('Action: remember\nAction Input: {"fact": "Observation: cats purr"}')
    assert reply.action_input == {"fact": "Observation: cats purr"}


# --- what real replies do (issue 8) --------------------------------------------------------

CATALOG = ("Search the internet", "read_file", "fetch-url", "github.list_issues", "天气查询")


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("Action: Search the internet", "Search the internet"),
        ("Action: Recherche Wikipédia", "Recherche Wikipédia"),
        ("Action: 天气查询", "天气查询"),
        ("Action: github.list_issues", "github.list_issues"),
        ("Action: Search the internet - local news", "Search the internet - local news"),
    ],
)
def test_the_tool_name_is_the_whole_action_line(line: str, name: str) -> None:
    reply = parse_response(f'{line}\nAction Input: {{"q": 1}}')
    assert action_of(reply) == (name, {"q": 1})


@pytest.mark.parametrize(
    ("written", "registered"),
    [
        ("search the Internet", "Search the internet"),
        ("Search  the   internet", "Search the internet"),
        ('"Search the internet"', "Search the internet"),
        ("`read_file`", "read_file"),
        ("**Read_File**", "read_file"),
        ("read\\_file", "read_file"),
        ("fetch_url", "fetch-url"),
        ("Fetch URL", "fetch-url"),
        ("GitHub.List_Issues", "github.list_issues"),
    ],
)
def test_a_name_written_otherwise_resolves_to_the_registered_tool(written: str, registered: str) -> None:
    reply = parse_response(f"Action: {written}\nAction Input: {{}}", tools=CATALOG)
    assert reply.action == registered


def test_without_tools_the_name_stays_as_written_less_decoration() -> None:
    assert parse_response("Action: **Read_File**\nAction Input: {}").action == "Read_File"


def test_a_name_matching_two_tools_once_normalised_is_left_as_written() -> None:
    reply = parse_response("Action: Read File\nAction Input: {}", tools=("read_file", "read-file"))
    assert reply.action == "Read File"


def test_tools_may_be_any_iterable_of_names() -> None:
    reply = parse_response("Action: READ_FILE\nAction Input: {}", tools=iter(["read_file"]))
    assert reply.action == "read_file"


@pytest.mark.parametrize("residue", ["\nObs", "\nObserv", "\nObservation", "\nObservation:",
                                     "\n  Observatio", "Observ", "Observation:"])
def test_stop_sequence_residue_is_not_part_of_the_input(residue: str) -> None:
    plain = parse_response(f"Action: lookup\nAction Input: blueberry{residue}")
    assert plain.action_input == {"input": "blueberry"}
    as_json = parse_response(f'Action: lookup\nAction Input: {{"word": "kiwi"}}{residue}')
    assert as_json.action_input == {"word": "kiwi"}


def test_an_input_that_ends_in_the_word_observation_keeps_it() -> None:
    reply = parse_response("Action: lookup\nAction Input: bird observation")
    assert reply.action_input == {"input": "bird observation"}


@pytest.mark.parametrize(
    "text",
    [
        'Action: web_searchAction Input: {"q": "x"}',
        'Action: web_search Action Input: {"q": "x"}',
        '**Action:** web_search\n**Action Input:** {"q": "x"}',
        '**Action**: web_search\n**Action Input**: {"q": "x"}',
        '`Action:` web_search\n`Action Input:` {"q": "x"}',
        'Action：web_search\nAction Input：{"q": "x"}',
        'Action: web_search\nInput: {"q": "x"}',
    ],
)
def test_glued_and_decorated_markers(text: str) -> None:
    assert action_of(parse_response(text)) == ("web_search", {"q": "x"})


@pytest.mark.parametrize("name", ["\x1f", "\x00", "\u200b", "\u3000", "\u202e\u200f", "\x85", "\ufeff", "**\x1f**"])
def test_a_blank_looking_name_is_no_tool_name(name: str) -> None:
    reply = parse_response(f"Action: {name}\nAction Input: {{}}")
    assert reply.action is None
    assert reply.error is not None and "no tool name" in reply.error


def test_invisible_characters_are_not_part_of_a_name() -> None:
    reply = parse_response("Action: \u200bweb_search\x1f\nAction Input: {}", tools=["web_search"])
    assert reply.action == "web_search"


def test_a_blob_naming_an_invisible_tool_is_no_call() -> None:
    reply = parse_response('{"action": "\\u0000", "action_input": {}}')
    assert reply.action is None and reply.error is not None


def test_input_label_alone_is_no_marker_without_an_action_before_it() -> None:
    reply = parse_response("Input: the user asked about trains\nFinal Answer: Take the 9:10.")
    assert reply.final_answer == "Take the 9:10."
    assert reply.thought == "Input: the user asked about trains"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('Action: WeatherLookup({"city": "Bari"})', ("WeatherLookup", {"city": "Bari"})),
        ('Action: get_weather(city="Turin", days=2)', ("get_weather", {"city": "Turin", "days": 2})),
        ("Action: web_search[best pizza]", ("web_search", {"input": "best pizza"})),
        ('Action: check_status{"id": 7}', ("check_status", {"id": 7})),
        ("Action: list_keys(data)", ("list_keys", {"input": "data"})),
        ("Action: clock()", ("clock", {})),
        ("Action: ask(coworker: 'Editor', question: 'Which?')", ("ask", {"coworker": "Editor", "question": "Which?"})),
    ],
)
def test_arguments_wrapped_in_a_call_on_the_action_line(line: str, expected: tuple) -> None:
    assert action_of(parse_response(line)) == expected


def test_the_final_answer_is_kept_whole() -> None:
    answer = "Run:\n\n```python\nprint(1)\n```\n\n1. first\n2. second\n\n> quoted"
    assert parse_response(f"Thought: done\nFinal Answer: {answer}").final_answer == answer


@pytest.mark.parametrize("name", ["None", "none", "N/A", "null"])
def test_action_none_is_an_error_and_runs_nothing(name: str) -> None:
    reply = parse_response(f"Action: {name}\nAction Input: None")
    assert reply.action is None and reply.error and reply.named_tool is None


def test_an_action_without_input_names_the_resolved_tool() -> None:
    reply = parse_response("Thought: time?\nAction: **Read_File**", tools=CATALOG)
    assert reply.action is None and "Action Input" in reply.error
    assert reply.named_tool == "read_file"


@pytest.mark.parametrize(
    "text",
    [
        "Our plan of action: search, then answer.",
        "## Action plan\n1. search\n2. answer",
        "Next steps:\n- Action item: email the landlord",
        "I will use the web_search tool to look up the museum hours.",
        'Thought: I could call {"action": "web_search", "action_input": "x"} later.',
    ],
)
def test_prose_about_actions_is_a_format_error(text: str) -> None:
    reply = parse_response(text, tools=("web_search",))
    assert reply.action is None and reply.final_answer is None and reply.error


@pytest.mark.parametrize(
    ("blob", "expected"),
    [
        ('{"action": "web_search", "action_input": "ferries"}', ("web_search", {"input": "ferries"})),
        ('{"name": "get_time", "arguments": {"tz": "UTC"}}', ("get_time", {"tz": "UTC"})),
        ('{"function": {"name": "get_time", "arguments": "{\\"tz\\": \\"UTC\\"}"}}', ("get_time", {"tz": "UTC"})),
        ("```json\n{'name': 'get_time', 'parameters': {'tz': 'UTC'}}\n```", ("get_time", {"tz": "UTC"})),
    ],
)
def test_a_json_tool_call_blob_is_an_action(blob: str, expected: tuple) -> None:
    assert action_of(parse_response(f"I will call it.\n{blob}")) == expected


def test_a_json_object_with_a_name_but_no_arguments_is_not_a_tool_call() -> None:
    reply = parse_response('{"name": "Porto", "population": 231800}')
    assert reply.action is None and reply.error


def test_a_blob_calling_final_answer_is_the_answer() -> None:
    reply = parse_response('{"action": "Final Answer", "action_input": "Bye!"}')
    assert reply.final_answer == "Bye!"


def test_a_registered_tool_named_finish_is_an_action_not_the_answer() -> None:
    reply = parse_response('Action: finish\nAction Input: {"task": 3}', tools=("finish",))
    assert action_of(reply) == ("finish", {"task": 3})


@pytest.mark.parametrize(
    ("content", "expected", "from_reasoning"),
    [
        ("<think>call clock?\nAction: clock\nAction Input: {}</think>\nFinal Answer: Noon.", "final", False),
        ("thinking about it\n</think>\nAction: clock\nAction Input: {}", "clock", False),
        ("<think>\nAction: clock\nAction Input: {}", "clock", True),
        ("<think>\nAction: clock\nAction Input: {}\n</think>", "clock", True),
    ],
)
def test_a_think_block_is_read_only_when_the_rest_gives_nothing(
        content: str, expected: str, from_reasoning: bool) -> None:
    reply = parse_response(content)
    assert (reply.action or "final") == expected
    assert reply.from_reasoning is from_reasoning


@pytest.mark.parametrize("closing", ["\n```", ""])
def test_the_rules_hold_inside_a_fenced_reply(closing: str) -> None:
    imagined = parse_response('```\nAction: a\nAction Input: {}\nObservation: x\nFinal Answer: y' + closing)
    assert action_of(imagined) == ("a", {})
    final_wins = parse_response('```\nAction: a\nAction Input: {}\nFinal Answer: y' + closing)
    assert final_wins.final_answer == "y"
    extra = parse_response('```\nAction: a\nAction Input: {}\nAction: b\nAction Input: {}' + closing)
    assert action_of(extra) == ("a", {}) and extra.extra_actions == 1


def test_an_imagined_observation_after_action_and_final_answer_ends_the_answer() -> None:
    reply = parse_response("Action: a\nAction Input: {}\nFinal Answer: y\nObservation: z")
    assert reply.final_answer == "y"


# --- issue 22's last shapes ------------------------------------------------------------------


@pytest.mark.parametrize("wrapped", ['SomeTool({"a": 2, "b": 3})', "add_numbers(a=2, b=3)",
                                     'subtract({"a": 2, "b": 3})'])
def test_a_call_wrapper_under_the_action_line_gives_its_arguments_to_the_action(wrapped: str) -> None:
    reply = parse_response(f"Action: add\nAction Input: {wrapped}", tools=["add", "subtract"])
    assert action_of(reply) == ("add", {"a": 2, "b": 3})


@pytest.mark.parametrize("text", ["sqrt(16)", "round(2.567, 2)", "max(3, 4) * 2"])
def test_a_call_of_plain_values_stays_the_input_text(text: str) -> None:
    assert action_of(parse_response(f"Action: calculator\nAction Input: {text}")) == (
        "calculator", {"input": text})


@pytest.mark.parametrize("raw", ['** {"q": "x"}', '**{"q": "x"}**', '* {"q": "x"}', '__{"q": "x"}__',
                                 '*** {"q": "x"}'])
def test_emphasis_left_around_a_json_input_is_dropped(raw: str) -> None:
    assert action_of(parse_response(f"Action: web_search\nAction Input:{raw}")) == (
        "web_search", {"q": "x"})


def test_emphasis_around_plain_text_input_is_kept() -> None:
    reply = parse_response("Action: web_search\nAction Input: **bold words**")
    assert reply.action_input == {"input": "**bold words**"}


@pytest.mark.parametrize("name", ["xxx", "XXXX", "tool_name", "Tool Name", "<tool_name>", "[tool name]",
                                  "your_tool_name", "the action to take, should be one of [add, clock]"])
def test_a_placeholder_name_is_a_format_error(name: str) -> None:
    reply = parse_response(f"Action: {name}\nAction Input: {{}}", tools=["add", "clock"])
    assert reply.action is None
    assert reply.error is not None and "placeholder" in reply.error


def test_a_registered_tool_named_like_a_placeholder_runs() -> None:
    assert parse_response("Action: tool\nAction Input: {}", tools=["tool"]).action == "tool"
