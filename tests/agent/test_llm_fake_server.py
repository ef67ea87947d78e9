"""FakeOpenAI itself, as other helpers will use it: scripting, fallbacks, embeddings, models."""

from __future__ import annotations

import asyncio
import math

import httpx
import openai
import pytest

from tests.fakes.openai_server import FakeOpenAI

MESSAGES = [{"role": "user", "content": "one two three"}]


@pytest.fixture
async def client(fake_openai):
    c = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0, timeout=5)
    yield c
    await c.close()


async def chat(client, **extra):
    return await client.chat.completions.create(model="fake-model", messages=MESSAGES, **extra)


async def test_base_url_is_loopback_and_ends_with_v1(fake_openai):
    assert fake_openai.base_url.startswith("http://127.0.0.1:")
    assert fake_openai.base_url.endswith("/v1")


async def test_script_is_replayed_in_order_then_the_default(fake_openai, client):
    fake_openai.replies("first", "second")

    contents = [(await chat(client)).choices[0].message.content for _ in range(3)]

    assert contents == ["first", "second", "Final Answer: (fake default reply)"]
    assert fake_openai.remaining == 0
    assert [r["messages"] for r in fake_openai.requests] == [MESSAGES] * 3


async def test_default_usage_counts_words(fake_openai, client):
    fake_openai.reply("a b", reasoning="c")

    usage = (await chat(client)).usage

    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3, 3, 6)


async def test_sync_and_async_responders(fake_openai, client):
    fake_openai.responder = lambda body: f"echo: {body['messages'][-1]['content']}"
    assert (await chat(client)).choices[0].message.content == "echo: one two three"

    async def responder(body):
        return {"content": "", "tool_calls": [{"name": "t", "arguments": {"x": 1}}]}

    fake_openai.responder = responder
    message = (await chat(client)).choices[0].message
    assert message.tool_calls[0].function.name == "t"
    assert message.tool_calls[0].function.arguments == '{"x": 1}'

    fake_openai.responder = lambda body: FakeOpenAI.make_error(418)
    with pytest.raises(openai.APIStatusError) as info:
        await chat(client)
    assert info.value.status_code == 418


async def test_error_bodies_and_headers(fake_openai, client):
    fake_openai.error(400, body="plain text error").error(409, headers={"x-should-retry": "false"})

    with pytest.raises(openai.BadRequestError) as info:
        await chat(client)
    assert info.value.response.text == "plain text error"
    with pytest.raises(openai.ConflictError) as conflict:
        await chat(client)
    assert conflict.value.response.headers["x-should-retry"] == "false"
    assert conflict.value.response.json()["error"]["message"] == "scripted error 409"


async def test_honor_stop_cuts_at_the_stop_sequence(fake_openai, client):
    fake_openai.honor_stop = True
    fake_openai.reply("Action: x\nObservation: imagined")

    content = (await chat(client, stop=["Observation:"])).choices[0].message.content

    assert content == "Action: x\n"


async def test_reject_stop_answers_400_without_consuming_the_script(fake_openai, client):
    fake_openai.reject_stop = True
    fake_openai.reply("kept")

    with pytest.raises(openai.BadRequestError, match="stop"):
        await chat(client, stop=["Observation:"])
    assert (await chat(client)).choices[0].message.content == "kept"


async def test_delay_applies_to_the_next_entry_only(fake_openai, client):
    fake_openai.delay(0.3).reply("slow").reply("fast")

    loop = asyncio.get_running_loop()
    started = loop.time()
    assert (await chat(client)).choices[0].message.content == "slow"
    slow = loop.time() - started
    started = loop.time()
    assert (await chat(client)).choices[0].message.content == "fast"
    fast = loop.time() - started

    assert slow >= 0.3 > fast


async def test_non_json_request_body_is_a_400(fake_openai):
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{fake_openai.base_url}/chat/completions", content=b"{nope")

    assert response.status_code == 400
    assert response.json()["error"]["message"] == "request body is not JSON"


async def test_embeddings_float_and_base64_agree_and_are_unit_vectors(fake_openai, client):
    texts = ["I like green tea", "green tea is nice", "the stock market fell"]

    as_floats = await client.embeddings.create(model="e", input=texts, encoding_format="float")
    as_base64 = await client.embeddings.create(model="e", input=texts)  # the client's default

    for a, b in zip(as_floats.data, as_base64.data, strict=True):
        assert len(a.embedding) == 384
        assert math.isclose(sum(x * x for x in a.embedding), 1.0, rel_tol=1e-6)
        assert all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a.embedding, b.embedding, strict=True))
    vectors = [d.embedding for d in as_floats.data]
    dot = lambda u, v: sum(x * y for x, y in zip(u, v, strict=True))  # noqa: E731
    assert dot(vectors[0], vectors[1]) > dot(vectors[0], vectors[2])
    assert vectors[0] == fake_openai.embed("I like green tea")
    assert len(fake_openai.embedding_requests) == 2


async def test_embeddings_refuse_bad_input(fake_openai):
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{fake_openai.base_url}/embeddings", json={"input": [1, 2]})

    assert response.status_code == 400


async def test_models_are_listed(fake_openai, client):
    fake_openai.models = ["a", "b"]

    models = await client.models.list()

    assert [m.id for m in models.data] == ["a", "b"]


async def test_concurrent_requests_each_get_one_entry(fake_openai, client):
    fake_openai.replies(*(f"r{i}" for i in range(20)))

    results = await asyncio.gather(*(chat(client) for _ in range(20)))

    assert sorted(r.choices[0].message.content for r in results) == sorted(f"r{i}" for i in range(20))


async def test_base_url_before_start_is_an_error():
    with pytest.raises(RuntimeError, match="not started"):
        FakeOpenAI().base_url


async def stream_chunks(client, **extra):
    stream = await chat(client, stream=True, **extra)
    return [chunk async for chunk in stream], stream.response.headers["content-type"]


async def test_a_streaming_request_gets_server_sent_events_as_openai_sends_them(fake_openai, client):
    fake_openai.reply(chunks=["Final ", "Answer: 3"], reasoning="count", usage={"prompt_tokens": 3, "completion_tokens": 2})

    chunks, content_type = await stream_chunks(client, stream_options={"include_usage": True})

    assert content_type.startswith("text/event-stream")
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].delta.model_extra.get("reasoning_content") for c in chunks[1:3]] == ["coun", "t"]
    assert [c.choices[0].delta.content for c in chunks[3:5]] == ["Final ", "Answer: 3"]
    assert chunks[5].choices[0].finish_reason == "stop"
    assert chunks[6].choices == [] and chunks[6].usage.prompt_tokens == 3
    assert fake_openai.streams == 1


async def test_usage_is_streamed_only_when_asked_for_or_never_when_so_set(fake_openai, client):
    fake_openai.replies("a", "b")
    unasked, _ = await stream_chunks(client)
    fake_openai.stream_usage = "never"
    refused, _ = await stream_chunks(client, stream_options={"include_usage": True})

    assert all(c.usage is None for c in unasked + refused)


async def test_tool_calls_stream_as_indexed_pieces(fake_openai, client):
    fake_openai.chunk_chars = 5
    fake_openai.reply(tool_calls=[{"id": "c1", "name": "calc", "arguments": '{"e": "1+1"}'}])

    chunks, _ = await stream_chunks(client)

    calls = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert (calls[0].id, calls[0].function.name, calls[0].function.arguments) == ("c1", "calc", "")
    assert "".join(c.function.arguments for c in calls[1:]) == '{"e": "1+1"}'
    assert {c.index for c in calls} == {0} and chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_stream_modes_ignore_and_reject(fake_openai, client):
    fake_openai.stream_mode = "ignore"
    fake_openai.reply("whole")
    stream = await chat(client, stream=True)
    assert stream.response.headers["content-type"].startswith("application/json")
    await stream.close()

    fake_openai.stream_mode = "reject"
    with pytest.raises(openai.BadRequestError) as info:
        await chat(client, stream=True)
    assert info.value.param == "stream" and fake_openai.remaining == 0

    fake_openai.stream_mode = "reject_options"
    with pytest.raises(openai.BadRequestError) as info:
        await chat(client, stream=True, stream_options={"include_usage": True})
    assert info.value.param == "stream_options"


async def test_cut_after_drops_the_connection_mid_stream(fake_openai, client):
    fake_openai.reply("Final Answer: a long answer", cut_after=2)
    stream = await chat(client, stream=True)
    got = []

    with pytest.raises(openai.APIConnectionError):
        async for chunk in stream:
            got.append(chunk)

    assert len(got) == 2 and fake_openai.streams == 0
