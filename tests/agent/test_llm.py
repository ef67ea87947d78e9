"""LLMClient against the loopback FakeOpenAI, through the real openai client."""

from __future__ import annotations

import socket

import pytest

from agent.config import load_agent_settings
from agent.errors import LLMError
from agent.events import Usage
from agent.llm import LLMClient, ToolCall

MESSAGES = [{"role": "user", "content": "What is two plus two?"}]


async def test_content_usage_and_request_shape(fake_openai, make_llm):
    fake_openai.reply("Final Answer: 4", usage={"prompt_tokens": 12, "completion_tokens": 3})
    llm = make_llm(temperature=0.7)

    completion = await llm.complete(MESSAGES)

    assert completion.content == "Final Answer: 4"
    assert completion.usage == Usage(12, 3)
    assert completion.tool_calls == []
    assert completion.finish_reason == "stop"
    sent = fake_openai.requests[0]
    assert sent["model"] == "fake-model"
    assert sent["messages"] == MESSAGES
    assert sent["temperature"] == 0.7
    assert "stop" not in sent and "tools" not in sent
    assert fake_openai.headers[0]["Authorization"] == "Bearer sk-test-secret-key"


async def test_reasoning_content_is_read(fake_openai, make_llm):
    fake_openai.reply("", reasoning="Thought: add them.\nFinal Answer: 4")

    completion = await make_llm().complete(MESSAGES)

    assert completion.content == ""
    assert completion.reasoning == "Thought: add them.\nFinal Answer: 4"


async def test_missing_usage_counts_as_zero(fake_openai, make_llm):
    fake_openai.reply("hi", usage=None)

    completion = await make_llm().complete(MESSAGES)

    assert completion.usage == Usage(0, 0)


async def test_tool_calls_are_returned_raw(fake_openai, make_llm):
    tools = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]
    fake_openai.reply(
        tool_calls=[{"id": "call_a", "name": "calculator", "arguments": '{"expression": "2+2"}'}]
    )

    completion = await make_llm().complete(MESSAGES, tools=tools)

    assert completion.tool_calls == [ToolCall("call_a", "calculator", '{"expression": "2+2"}')]
    assert completion.finish_reason == "tool_calls"
    assert fake_openai.requests[0]["tools"] == tools


async def test_empty_reply_is_a_normal_completion(fake_openai, make_llm):
    fake_openai.reply(None)

    completion = await make_llm().complete(MESSAGES)

    assert completion.content == "" and completion.reasoning is None and completion.tool_calls == []


async def test_stop_is_sent_and_enforced_client_side(fake_openai, make_llm):
    fake_openai.reply('Action: calculator\nAction Input: {"expression": "2+2"}\nObservation: 5\nFinal Answer: 5')

    completion = await make_llm().complete(MESSAGES, stop=["Observation:"])

    assert fake_openai.requests[0]["stop"] == ["Observation:"]
    assert completion.content == 'Action: calculator\nAction Input: {"expression": "2+2"}\n'


async def test_server_rejecting_stop_gets_one_retry_without_it_then_never_again(fake_openai, make_llm):
    fake_openai.reject_stop = True
    fake_openai.replies("Thought: x\nObservation: imagined", "second")
    llm = make_llm()

    first = await llm.complete(MESSAGES, stop=["Observation:"])
    second = await llm.complete(MESSAGES, stop=["Observation:"])

    assert first.content == "Thought: x\n"
    assert second.content == "second"
    assert ["stop" in r for r in fake_openai.requests] == [True, False, False]


async def test_other_bad_requests_are_not_retried(fake_openai, make_llm):
    fake_openai.error(400, body={"error": {"message": "context length exceeded"}})

    with pytest.raises(LLMError) as info:
        await make_llm(max_retries=3).complete(MESSAGES, stop=["Observation:"])

    assert info.value.kind == "bad_request"
    assert "context length exceeded" in str(info.value)
    assert len(fake_openai.requests) == 1


async def test_rate_limit_is_retried_by_the_library_then_succeeds(fake_openai, make_llm):
    fake_openai.error(429, headers={"retry-after-ms": "1"}).reply("Final Answer: ok")

    completion = await make_llm(max_retries=2).complete(MESSAGES)

    assert completion.content == "Final Answer: ok"
    assert len(fake_openai.requests) == 2


async def test_server_errors_exhaust_retries_into_server_error(fake_openai, make_llm):
    for _ in range(3):
        fake_openai.error(500, headers={"retry-after-ms": "1"})

    with pytest.raises(LLMError) as info:
        await make_llm(max_retries=2).complete(MESSAGES)

    error = info.value
    assert error.kind == "server_error"
    assert len(fake_openai.requests) == 3
    assert "fake-model" in str(error) and fake_openai.base_url in str(error)
    assert error.model == "fake-model" and error.base_url == fake_openai.base_url


async def test_non_json_error_page_is_quoted_briefly(fake_openai, make_llm):
    fake_openai.error(502, body="<html><body>Bad Gateway from nginx</body></html>" + " " * 5000 + "tail")

    with pytest.raises(LLMError) as info:
        await make_llm().complete(MESSAGES)

    assert info.value.kind == "server_error"
    assert "(502): <html><body>Bad Gateway from nginx</body></html>" in str(info.value)
    assert len(str(info.value)) < 400


async def test_rate_limit_exhausted_is_rate_limited(fake_openai, make_llm):
    fake_openai.error(429, headers={"retry-after-ms": "1"}).error(429, headers={"retry-after-ms": "1"})

    with pytest.raises(LLMError) as info:
        await make_llm(max_retries=1).complete(MESSAGES)

    assert info.value.kind == "rate_limited"


async def test_refused_key_is_auth_and_the_key_never_appears(fake_openai, make_llm):
    fake_openai.error(401, body={"error": {"message": "Incorrect API key provided: sk-test-secret-key"}})

    with pytest.raises(LLMError) as info:
        await make_llm(max_retries=2).complete(MESSAGES)

    assert info.value.kind == "auth"
    assert "sk-test-secret-key" not in str(info.value)
    assert len(fake_openai.requests) == 1


async def test_connection_refused_is_unreachable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = LLMClient(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="m", max_retries=0)
    try:
        with pytest.raises(LLMError) as info:
            await llm.complete(MESSAGES)
    finally:
        await llm.aclose()

    assert info.value.kind == "unreachable"
    assert f"127.0.0.1:{port}" in str(info.value)


async def test_slow_reply_beyond_timeout_is_timeout(fake_openai, make_llm):
    fake_openai.delay(2.0).reply("too late")

    with pytest.raises(LLMError) as info:
        await make_llm(timeout_s=0.2).complete(MESSAGES)

    assert info.value.kind == "timeout"
    assert "0.2s" in str(info.value)


async def test_slow_reply_then_retry_succeeds(fake_openai, make_llm):
    fake_openai.delay(2.0).reply("too late").reply("Final Answer: in time")

    completion = await make_llm(timeout_s=0.3, max_retries=1).complete(MESSAGES)

    assert completion.content == "Final Answer: in time"


async def test_non_json_body_is_bad_response(fake_openai, make_llm):
    fake_openai.garbage("<html>gateway</html>")

    with pytest.raises(LLMError) as info:
        await make_llm().complete(MESSAGES)

    assert info.value.kind == "bad_response"


async def test_broken_json_body_is_bad_response(fake_openai, make_llm):
    fake_openai.garbage('{"choices": [', content_type="application/json")

    with pytest.raises(LLMError) as info:
        await make_llm().complete(MESSAGES)

    assert info.value.kind == "bad_response"


async def test_json_of_the_wrong_shape_is_bad_response(fake_openai, make_llm):
    fake_openai.garbage('{"hello": "world"}', content_type="application/json")

    with pytest.raises(LLMError) as info:
        await make_llm().complete(MESSAGES)

    assert info.value.kind == "bad_response"


async def test_empty_key_is_allowed_for_local_servers(fake_openai, make_llm):
    fake_openai.reply("ok")

    completion = await make_llm(api_key="").complete(MESSAGES)

    assert completion.content == "ok"


async def test_from_settings_uses_every_setting():
    settings = load_agent_settings(
        {
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/",
            "OPENAI_API_KEY": "sk-abc",
            "LLM_MODEL": "qwen",
            "LLM_TEMPERATURE": "0.5",
            "LLM_TIMEOUT_S": "7",
            "LLM_MAX_RETRIES": "1",
        }
    )
    llm = LLMClient.from_settings(settings)
    try:
        assert (llm.base_url, llm.model, llm.temperature, llm.timeout_s, llm.max_retries) == (
            "http://127.0.0.1:9/v1", "qwen", 0.5, 7.0, 1,
        )
        assert "sk-abc" not in repr(llm)
    finally:
        await llm.aclose()
