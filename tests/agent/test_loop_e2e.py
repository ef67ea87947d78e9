"""End to end: Agent -> LLMClient -> real openai client -> HTTP -> FakeOpenAI, for every parser
situation, both protocols, tool errors and timeouts, nudges, limits and endpoint failures."""

from __future__ import annotations

import asyncio
import socket

import pytest

from agent.errors import LLMError
from agent.events import (
    AnswerDelta, FinalAnswer, ModelCalled, Nudge, RunEnded, ToolFinished, ToolStarted, Usage,
)
from agent.llm import LLMClient
from agent.loop import Agent
from agent.tools.registry import ToolRegistry
from tests.agent.conftest import CTX


def make_registry() -> ToolRegistry:
    registry = ToolRegistry(default_timeout_s=2.0)

    @registry.tool
    async def multiply(a: int, b: int) -> int:
        """Multiply two integers exactly.

        Args:
            a: The first factor.
            b: The second factor.
        """
        return a * b

    @registry.tool
    async def lookup(query: str) -> str:
        """Look a word up.

        Args:
            query: What to look up.
        """
        return f"definition of {query}"

    @registry.tool
    async def explode(reason: str = "none") -> str:
        """A tool that always fails."""
        raise RuntimeError(f"boom ({reason})")

    @registry.tool(timeout_s=0.1)
    async def crawl() -> str:
        """A tool slower than its timeout."""
        await asyncio.sleep(5)
        return "never"

    return registry


async def run_agent(llm: LLMClient, question: str = "What is 6 times 7?", **options):
    agent = Agent(llm, make_registry(), **options)
    return [event async for event in agent.run(question, context=CTX)]


def of(events, kind):
    return [e for e in events if isinstance(e, kind)]


MULTIPLY = 'Thought: I multiply.\nAction: multiply\nAction Input: {"a": 6, "b": 7}'


async def test_two_step_answer_through_http(fake_openai, make_llm):
    fake_openai.reply(MULTIPLY, usage={"prompt_tokens": 100, "completion_tokens": 20})
    fake_openai.reply("Thought: I know.\nFinal Answer: 42", usage={"prompt_tokens": 130, "completion_tokens": 8})

    events = await run_agent(make_llm())

    kinds = [type(e) for e in events]
    assert [k for k in kinds if k is not AnswerDelta] == [
        ModelCalled, ToolStarted, ToolFinished, ModelCalled, FinalAnswer, RunEnded,
    ]
    deltas = of(events, AnswerDelta)  # streamed before the second ModelCalled, in order
    assert kinds.index(AnswerDelta) > kinds.index(ToolFinished)
    assert {d.step for d in deltas} == {2} and "".join(d.text for d in deltas) == "42"
    assert of(events, ToolFinished)[0].observation == "42"
    end = events[-1]
    assert (end.outcome, end.answer, end.steps, end.usage) == ("answered", "42", 2, Usage(230, 28))
    second = fake_openai.requests[1]
    assert second["stop"] == ["Observation:"]
    assert second["messages"][-1] == {"role": "user", "content": "Observation: 42"}
    assert "### multiply" in second["messages"][0]["content"]


async def test_hallucinated_observation_and_imagined_final_answer_run_the_action(fake_openai, make_llm):
    fake_openai.reply(MULTIPLY + "\nObservation: 48\nThought: easy.\nFinal Answer: 48")
    fake_openai.reply("Final Answer: 42")

    events = await run_agent(make_llm())

    assert of(events, ToolFinished)[0].observation == "42"
    assert events[-1].answer == "42"
    assert "48" not in fake_openai.requests[1]["messages"][-2]["content"]


async def test_hallucinated_observation_with_a_server_that_honours_stop(fake_openai, make_llm):
    fake_openai.honor_stop = True
    fake_openai.reply(MULTIPLY + "\nObservation: 48\nFinal Answer: 48").reply("Final Answer: 42")

    events = await run_agent(make_llm())

    assert of(events, ToolFinished)[0].observation == "42"
    assert events[-1].answer == "42"


async def test_final_answer_that_mentions_action_is_final(fake_openai, make_llm):
    fake_openai.reply("Thought: done.\nFinal Answer: The Action: multiply step gave 42.")

    events = await run_agent(make_llm())

    assert not of(events, ToolStarted)
    assert events[-1].answer == "The Action: multiply step gave 42."


async def test_preamble_before_the_action_is_ignored(fake_openai, make_llm):
    fake_openai.reply("Sure! Let me work this out for you.\n\n" + MULTIPLY).reply("Final Answer: 42")

    events = await run_agent(make_llm())

    assert of(events, ToolStarted)[0].args == {"a": 6, "b": 7}


async def test_markdown_decorated_keywords(fake_openai, make_llm):
    fake_openai.reply('**Thought:** multiply\n**Action 1:** multiply\n**Action Input:** {"a": 6, "b": 7}')
    fake_openai.reply("**Final Answer:** 42")

    events = await run_agent(make_llm())

    assert of(events, ToolFinished)[0].observation == "42"
    assert events[-1].answer == "42"


async def test_fenced_broken_json_input_is_repaired(fake_openai, make_llm):
    fake_openai.reply("Action: multiply\nAction Input:\n```json\n{'a': 6, b: 7,\n```").reply("Final Answer: 42")

    events = await run_agent(make_llm())

    assert of(events, ToolStarted)[0].args == {"a": 6, "b": 7}
    assert of(events, ToolFinished)[0].ok


async def test_plain_text_input_becomes_the_single_parameter(fake_openai, make_llm):
    fake_openai.reply("Action: lookup\nAction Input: serendipity").reply("Final Answer: a happy accident")

    events = await run_agent(make_llm(), "What is serendipity?")

    assert of(events, ToolStarted)[0].args == {"query": "serendipity"}  # as the tool took them
    assert of(events, ToolFinished)[0].observation == "definition of serendipity"


async def test_extra_actions_are_counted_not_run(fake_openai, make_llm):
    fake_openai.reply(MULTIPLY + '\nAction: lookup\nAction Input: {"query": "x"}').reply("Final Answer: 42")

    events = await run_agent(make_llm())

    assert [e.tool for e in of(events, ToolStarted)] == ["multiply"]
    assert "1 more were ignored" in fake_openai.requests[1]["messages"][-1]["content"]


async def test_empty_content_with_reasoning_content_is_parsed(fake_openai, make_llm):
    fake_openai.reply("", reasoning=MULTIPLY).reply("", reasoning="Thought: done\nFinal Answer: 42")

    events = await run_agent(make_llm())

    assert of(events, ToolFinished)[0].observation == "42"
    assert of(events, ModelCalled)[0].reasoning == MULTIPLY
    assert events[-1].answer == "42"


async def test_tool_error_is_observed_and_the_run_goes_on(fake_openai, make_llm):
    fake_openai.reply('Action: explode\nAction Input: {"reason": "test"}').reply("Final Answer: it failed")

    events = await run_agent(make_llm())

    finished = of(events, ToolFinished)[0]
    assert not finished.ok and finished.observation.startswith("Error:") and "boom (test)" in finished.observation
    assert fake_openai.requests[1]["messages"][-1]["content"].startswith("Observation: Error:")
    assert events[-1].outcome == "answered"


async def test_tool_timeout_is_observed(fake_openai, make_llm):
    fake_openai.reply("Action: crawl\nAction Input: {}").reply("Final Answer: too slow")

    events = await run_agent(make_llm())

    finished = of(events, ToolFinished)[0]
    assert not finished.ok and "timed out" in finished.observation


async def test_unknown_tool_and_bad_arguments_are_nudged(fake_openai, make_llm):
    fake_openai.reply('Action: divide\nAction Input: {"a": 1}')
    fake_openai.reply('Action: multiply\nAction Input: {"a": 6}')
    fake_openai.reply(MULTIPLY).reply("Final Answer: 42")

    events = await run_agent(make_llm())

    assert [n.problem for n in of(events, Nudge)] == ["unknown_tool", "bad_arguments"]
    assert "'b' is a required property" in fake_openai.requests[2]["messages"][-1]["content"]
    assert events[-1].answer == "42"


async def test_format_errors_then_no_answer(fake_openai, make_llm):
    fake_openai.default_content = "I refuse to follow any format."

    events = await run_agent(make_llm(), max_consecutive_nudges=3)

    assert len(of(events, Nudge)) == 3
    assert events[-1].outcome == "no_answer"
    assert len(fake_openai.requests) == 3


async def test_step_limit_through_http(fake_openai, make_llm):
    fake_openai.default_content = MULTIPLY

    events = await run_agent(make_llm(), max_steps=3)

    assert events[-1].outcome == "step_limit"
    assert len(fake_openai.requests) == 3


async def test_native_protocol_through_http(fake_openai, make_llm):
    fake_openai.reply(
        tool_calls=[
            {"id": "call_x", "name": "multiply", "arguments": {"a": 6, "b": 7}},
            {"id": "call_y", "name": "lookup", "arguments": '{"query": "answer"}'},
        ]
    )
    fake_openai.reply("6 times 7 is 42.")

    events = await run_agent(make_llm(), protocol="native")

    assert [(e.tool, e.observation) for e in of(events, ToolFinished)] == [
        ("multiply", "42"), ("lookup", "definition of answer"),
    ]
    assert events[-1].answer == "6 times 7 is 42."
    first, second = fake_openai.requests
    assert "stop" not in first
    assert [t["function"]["name"] for t in first["tools"]] == ["multiply", "lookup", "explode", "crawl"]
    assert second["messages"][-2:] == [
        {"role": "tool", "tool_call_id": "call_x", "content": "42"},
        {"role": "tool", "tool_call_id": "call_y", "content": "definition of answer"},
    ]
    assert second["messages"][-3]["tool_calls"][0]["function"] == {
        "name": "multiply", "arguments": '{"a": 6, "b": 7}',
    }


async def test_native_tool_error_and_timeout(fake_openai, make_llm):
    fake_openai.reply(tool_calls=[{"name": "explode", "arguments": {}}, {"name": "crawl", "arguments": ""}])
    fake_openai.reply("Both failed.")

    events = await run_agent(make_llm(), protocol="native")

    finished = of(events, ToolFinished)
    assert [f.ok for f in finished] == [False, False]
    assert "boom" in finished[0].observation and "timed out" in finished[1].observation


async def test_native_step_limit(fake_openai, make_llm):
    fake_openai.responder = lambda request: {"tool_calls": [{"name": "multiply", "arguments": {"a": 1, "b": 1}}]}

    events = await run_agent(make_llm(), protocol="native", max_steps=2)

    assert events[-1].outcome == "step_limit"


async def test_rate_limit_then_success_is_invisible_to_the_run(fake_openai, make_llm):
    fake_openai.error(429, headers={"retry-after-ms": "1"}).reply("Final Answer: 42")

    events = await run_agent(make_llm(max_retries=2))

    assert events[-1].answer == "42"
    assert len(of(events, ModelCalled)) == 1
    assert len(fake_openai.requests) == 2


async def test_server_errors_exhausted_raise_after_the_events_so_far(fake_openai, make_llm):
    fake_openai.reply(MULTIPLY)
    for _ in range(3):
        fake_openai.error(503, headers={"retry-after-ms": "1"})
    events = []

    with pytest.raises(LLMError) as info:
        async for event in Agent(make_llm(max_retries=2), make_registry()).run("q", context=CTX):
            events.append(event)

    assert info.value.kind == "server_error"
    assert [type(e) for e in events] == [ModelCalled, ToolStarted, ToolFinished]


async def test_unreachable_endpoint_raises_unreachable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = LLMClient(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="m", max_retries=0)
    try:
        with pytest.raises(LLMError) as info:
            await run_agent(llm)
    finally:
        await llm.aclose()

    assert info.value.kind == "unreachable"


async def test_slow_model_raises_timeout(fake_openai, make_llm):
    fake_openai.delay(2.0).reply("Final Answer: late")

    with pytest.raises(LLMError) as info:
        await run_agent(make_llm(timeout_s=0.2))

    assert info.value.kind == "timeout"


async def test_garbage_body_raises_bad_response(fake_openai, make_llm):
    fake_openai.garbage("<html>proxy error</html>")

    with pytest.raises(LLMError) as info:
        await run_agent(make_llm())

    assert info.value.kind == "bad_response"


async def test_server_rejecting_stop_still_runs_the_action(fake_openai, make_llm):
    fake_openai.reject_stop = True
    fake_openai.reply(MULTIPLY + "\nObservation: 48\nFinal Answer: 48").reply("Final Answer: 42")

    events = await run_agent(make_llm())

    assert of(events, ToolFinished)[0].observation == "42"
    assert events[-1].answer == "42"
    assert ["stop" in r for r in fake_openai.requests] == [True, False, False]


# -- streaming through HTTP ------------------------------------------------------------------


def answer_of(events) -> str:
    return "".join(e.text for e in of(events, AnswerDelta))


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_the_answer_streams_through_http_in_both_protocols(fake_openai, make_llm, protocol):
    if protocol == "text":
        fake_openai.reply(MULTIPLY)
        label = "Thought: done.\nFinal Answer: "
    else:
        fake_openai.reply(tool_calls=[{"name": "multiply", "arguments": {"a": 6, "b": 7}}])
        label = ""
    fake_openai.reply(label + "6 times 7 is 42, as the tool says.", usage={"prompt_tokens": 50, "completion_tokens": 9})

    events = await run_agent(make_llm(), protocol=protocol)

    deltas = of(events, AnswerDelta)
    assert len(deltas) > 3 and {d.step for d in deltas} == {2}
    assert answer_of(events) == "6 times 7 is 42, as the tool says." == events[-1].answer
    assert all(r["stream"] is True for r in fake_openai.requests)
    assert of(events, ModelCalled)[1].usage == Usage(50, 9)


async def test_usage_without_include_usage_is_counted_locally_in_the_run(fake_openai, make_llm):
    fake_openai.stream_usage = "never"
    fake_openai.reply(MULTIPLY).reply("Final Answer: 42")

    events = await run_agent(make_llm())

    calls = of(events, ModelCalled)
    assert all(c.usage.prompt_tokens > 0 and c.usage.completion_tokens > 0 for c in calls)
    assert events[-1].usage == calls[0].usage + calls[1].usage


async def test_a_server_that_refuses_to_stream_still_answers_the_turn(fake_openai, make_llm):
    fake_openai.stream_mode = "reject"
    fake_openai.reply(MULTIPLY).reply("Final Answer: 42")

    events = await run_agent(make_llm())

    assert events[-1].outcome == "answered" and events[-1].answer == "42" and not of(events, AnswerDelta)
    assert ["stream" in r for r in fake_openai.requests] == [True, False, False]


async def test_a_stream_cut_mid_answer_raises_after_the_events_so_far(fake_openai, make_llm):
    fake_openai.reply(MULTIPLY).reply(chunks=["Final Answer: ", "forty", "-two"], cut_after=3)
    events = []

    with pytest.raises(LLMError) as info:
        async for event in Agent(make_llm(max_retries=2), make_registry()).run("6*7?", context=CTX):
            events.append(event)

    assert info.value.kind == "unreachable"
    assert [type(e) for e in events] == [ModelCalled, ToolStarted, ToolFinished, AnswerDelta]
    assert events[-1] == AnswerDelta(2, "forty")
    assert len(fake_openai.requests) == 2


async def test_stream_off_sends_whole_requests(fake_openai, make_llm):
    fake_openai.reply("Final Answer: 42")

    events = await run_agent(make_llm(), stream=False)

    assert events[-1].answer == "42" and not of(events, AnswerDelta)
    assert "stream" not in fake_openai.requests[0]
