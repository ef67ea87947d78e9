"""LLMClient.stream against the loopback FakeOpenAI, through the real openai client (SSE)."""

from __future__ import annotations

import asyncio
import json
import itertools
import math

import pytest

from agent.errors import LLMError
from agent.events import Usage
from agent.llm import CHARS_PER_TOKEN, STREAM_YIELD_EVERY, Completion, Delta, ToolCall

MESSAGES = [{"role": "user", "content": "What is two plus two?"}]
TOOLS = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]


async def collect(llm, **kwargs) -> tuple[list[Delta], Completion]:
    parts = [part async for part in llm.stream(MESSAGES, **kwargs)]
    assert isinstance(parts[-1], Completion) and all(isinstance(p, Delta) for p in parts[:-1])
    return parts[:-1], parts[-1]


def local_prompt_tokens() -> int:
    return math.ceil(sum(len(json.dumps(m["content"])) for m in MESSAGES) / CHARS_PER_TOKEN)


async def test_chunks_arrive_as_deltas_in_order_and_join_to_the_completion(fake_openai, make_llm):
    pieces = ["Thought: add.\n", "Final ", "Answer", ": 4"]
    fake_openai.reply(chunks=pieces, usage={"prompt_tokens": 12, "completion_tokens": 5})

    deltas, completion = await collect(make_llm())

    assert [d.content for d in deltas] == pieces
    assert completion == Completion("Thought: add.\nFinal Answer: 4", usage=Usage(12, 5), finish_reason="stop")
    sent = fake_openai.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


async def test_a_delta_arrives_before_the_server_has_finished(fake_openai, make_llm):
    fake_openai.reply(chunks=["Final Answer: ", "4"], pause_after=2)  # role chunk, first piece
    parts = make_llm().stream(MESSAGES)

    first = await anext(parts)
    assert first == Delta(content="Final Answer: ")
    assert fake_openai.paused.is_set() and fake_openai.streams == 0
    fake_openai.resume()
    rest = [part async for part in parts]

    assert rest[0] == Delta(content="4") and rest[-1].content == "Final Answer: 4"
    assert fake_openai.streams == 1


async def test_reasoning_deltas_are_read(fake_openai, make_llm):
    fake_openai.reply("Final Answer: 4", reasoning="two and two make four")

    deltas, completion = await collect(make_llm())

    assert "".join(d.reasoning for d in deltas) == "two and two make four" == completion.reasoning
    assert deltas[0].reasoning and not deltas[0].content  # the reasoning channel comes first


async def test_tool_calls_are_joined_from_their_pieces(fake_openai, make_llm):
    fake_openai.reply(tool_calls=[
        {"id": "call_a", "name": "calculator", "arguments": '{"expression": "2+2"}'},
        {"id": "call_b", "name": "clock", "arguments": ""},
    ])

    deltas, completion = await collect(make_llm(), tools=TOOLS)

    assert completion.tool_calls == [
        ToolCall("call_a", "calculator", '{"expression": "2+2"}'), ToolCall("call_b", "clock", ""),
    ]
    assert completion.finish_reason == "tool_calls" and all(d.tool_call for d in deltas)
    assert fake_openai.requests[0]["tools"] == TOOLS


async def test_usage_is_counted_locally_when_the_server_sends_none(fake_openai, make_llm):
    fake_openai.stream_usage = "never"
    fake_openai.reply(chunks=["Final", " Answer:", " 4"], usage={"prompt_tokens": 99, "completion_tokens": 99})

    _, completion = await collect(make_llm())

    assert completion.usage == Usage(local_prompt_tokens(), 3)  # one token per text chunk


async def test_a_server_refusing_stream_options_streams_without_them(fake_openai, make_llm):
    fake_openai.stream_mode = "reject_options"
    fake_openai.replies("Final Answer: 4", "Final Answer: 5")
    llm = make_llm()

    deltas, first = await collect(llm)
    _, second = await collect(llm)

    assert deltas and (first.content, second.content) == ("Final Answer: 4", "Final Answer: 5")
    assert first.usage == Usage(local_prompt_tokens(), len(deltas))
    assert [("stream" in r, "stream_options" in r) for r in fake_openai.requests] == [
        (True, True), (True, False), (True, False),
    ]


async def test_a_server_refusing_to_stream_gets_whole_requests_from_then_on(fake_openai, make_llm):
    fake_openai.stream_mode = "reject"
    fake_openai.reply("Final Answer: 4", usage={"prompt_tokens": 7, "completion_tokens": 2}).reply("again")
    llm = make_llm()

    deltas, completion = await collect(llm)
    _, second = await collect(llm)

    assert deltas == [] and completion.content == "Final Answer: 4" and completion.usage == Usage(7, 2)
    assert second.content == "again"
    assert ["stream" in r for r in fake_openai.requests] == [True, False, False]


async def test_a_server_ignoring_stream_is_read_whole_and_not_asked_to_stream_again(fake_openai, make_llm):
    fake_openai.stream_mode = "ignore"
    fake_openai.reply("Final Answer: 4", reasoning="easy", usage={"prompt_tokens": 7, "completion_tokens": 2})
    fake_openai.reply("again")
    llm = make_llm()

    deltas, completion = await collect(llm)
    _, second = await collect(llm)

    assert deltas == []
    assert (completion.content, completion.reasoning, completion.usage) == ("Final Answer: 4", "easy", Usage(7, 2))
    assert second.content == "again"
    assert ["stream" in r for r in fake_openai.requests] == [True, False]


async def test_stop_is_cut_client_side_across_chunks_and_the_stream_ends_there(fake_openai, make_llm):
    fake_openai.reply(chunks=['Action: calculator\nAction Input: {"expression": "2+2"}\nObs', "ervation: 5\n",
                              "Final Answer: 5"])

    deltas, completion = await collect(make_llm(), stop=["Observation:"])

    assert completion.content == 'Action: calculator\nAction Input: {"expression": "2+2"}\n'
    assert "".join(d.content for d in deltas) == completion.content
    assert completion.finish_reason == "stop" and fake_openai.requests[0]["stop"] == ["Observation:"]


async def test_a_held_tail_that_is_not_a_stop_sequence_is_passed_on(fake_openai, make_llm):
    fake_openai.reply(chunks=["Final Answer: Obs", "cure, but Observ", "ant"])

    deltas, completion = await collect(make_llm(), stop=["Observation:"])

    assert [d.content for d in deltas] == ["Final Answer: ", "Obscure, but ", "Observant"]
    assert completion.content == "Final Answer: Obscure, but Observant"


async def test_a_stream_cut_after_text_was_passed_on_is_an_error_and_not_retried(fake_openai, make_llm):
    fake_openai.reply(chunks=["Final Answer: ", "the long ", "answer"], cut_after=3)
    got: list[Delta] = []

    with pytest.raises(LLMError) as info:
        async for part in make_llm(max_retries=3).stream(MESSAGES):
            got.append(part)

    assert [d.content for d in got] == ["Final Answer: ", "the long "]
    assert info.value.kind == "unreachable" and "the stream was cut after 3 chunks" in str(info.value)
    assert fake_openai.base_url in str(info.value) and "fake-model" in str(info.value)
    assert "sk-test-secret-key" not in str(info.value)
    assert len(fake_openai.requests) == 1


async def test_a_stream_cut_before_its_first_delta_is_asked_again_within_the_retries(fake_openai, make_llm):
    fake_openai.reply("Final Answer: lost", cut_after=1).reply("Final Answer: 4")

    deltas, completion = await collect(make_llm(max_retries=1))

    assert completion.content == "Final Answer: 4" and "".join(d.content for d in deltas) == "Final Answer: 4"
    assert len(fake_openai.requests) == 2


async def test_a_stream_cut_before_its_first_delta_with_no_retries_left_is_an_error(fake_openai, make_llm):
    fake_openai.reply("Final Answer: lost", cut_after=0).reply("never asked")

    with pytest.raises(LLMError) as info:
        await collect(make_llm(max_retries=0))

    assert info.value.kind == "unreachable" and len(fake_openai.requests) == 1


async def test_a_stream_that_stalls_mid_way_is_a_timeout(fake_openai, make_llm):
    fake_openai.reply(chunks=["Final Answer: ", "4"], pause_after=2)
    try:
        with pytest.raises(LLMError) as info:
            await collect(make_llm(timeout_s=0.3))
    finally:
        fake_openai.resume()

    assert info.value.kind == "timeout" and "stalled after 2 chunks" in str(info.value)


async def test_errors_before_the_stream_keep_the_library_retries_and_translation(fake_openai, make_llm):
    fake_openai.error(429, headers={"retry-after-ms": "1"}).reply("Final Answer: ok")
    _, completion = await collect(make_llm(max_retries=1))
    assert completion.content == "Final Answer: ok" and len(fake_openai.requests) == 2

    fake_openai.error(401)
    with pytest.raises(LLMError) as info:
        await collect(make_llm(max_retries=1))
    assert info.value.kind == "auth" and "sk-test-secret-key" not in str(info.value)


async def test_a_server_rejecting_stop_is_still_streamed_without_it(fake_openai, make_llm):
    fake_openai.reject_stop = True
    fake_openai.reply("Thought: x\nObservation: imagined")

    deltas, completion = await collect(make_llm(), stop=["Observation:"])

    assert completion.content == "Thought: x\n" == "".join(d.content for d in deltas)
    assert [("stop" in r, r.get("stream")) for r in fake_openai.requests] == [(True, True), (False, True)]


async def test_a_non_json_body_to_a_streaming_request_is_bad_response(fake_openai, make_llm):
    fake_openai.garbage("<html>502</html>")

    with pytest.raises(LLMError) as info:
        await collect(make_llm())

    assert info.value.kind == "bad_response" and "<html>502</html>" in str(info.value)


async def test_concurrent_streams_do_not_mix(fake_openai, make_llm):
    fake_openai.responder = lambda body: body["messages"][-1]["content"] * 3
    llm = make_llm()

    async def one(text: str) -> tuple[str, str]:
        parts = [p async for p in llm.stream([{"role": "user", "content": text}])]
        return "".join(p.content for p in parts[:-1]), parts[-1].content

    results = await asyncio.gather(*(one(f"<{i}>") for i in range(8)))

    assert results == [(f"<{i}>" * 3, f"<{i}>" * 3) for i in range(8)]


@pytest.mark.parametrize("body", ['data: {"broken\n\n', 'data: {"choices": 7}\n\ndata: [DONE]\n\n'])
async def test_a_malformed_event_stream_is_bad_response(fake_openai, make_llm, body):
    fake_openai.garbage(body, content_type="text/event-stream")

    with pytest.raises(LLMError) as info:
        await collect(make_llm())

    assert info.value.kind == "bad_response" and "not a chat completion chunk" in str(info.value)


async def test_an_empty_event_stream_is_bad_response(fake_openai, make_llm):
    fake_openai.garbage("data: [DONE]\n\n", content_type="text/event-stream")

    with pytest.raises(LLMError) as info:
        await collect(make_llm())

    assert info.value.kind == "bad_response" and "before its first chunk" in str(info.value)


async def test_a_buffered_burst_of_chunks_gives_the_event_loop_a_turn_every_few_chunks(fake_openai, make_llm):
    # A hostile reply streamed as thousands of tiny chunks arrives faster than it is decoded:
    # read from the socket's buffer, no chunk waits, so without a yield the whole burst (the
    # openai library's decoding of each chunk, and the consumer's work on each delta) would
    # run in one iteration of the loop, and a gateway heartbeat would wait behind it.
    pieces = ["ab"] * 3000
    fake_openai.reply(chunks=pieces)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    counting = asyncio.create_task(ticker())
    seen: list[int] = []
    try:
        async for part in make_llm().stream(MESSAGES):
            if isinstance(part, Delta):
                seen.append(ticks)
    finally:
        counting.cancel()

    longest_run = max(sum(1 for _ in run) for _, run in itertools.groupby(seen))
    assert len(seen) == len(pieces)
    assert longest_run <= STREAM_YIELD_EVERY
