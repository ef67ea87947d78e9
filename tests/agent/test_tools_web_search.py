"""The web_search tool against a loopback fake of SearxNG, through a real httpx client."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator

import httpx
import pytest

from agent.tools.fetch import DEFAULT_LIMITS, FetchLimits, is_public_address
from agent.tools.registry import ToolContext, ToolRegistry
from agent.tools.web_search import register_web_search, search_endpoint
from tests.fakes.searxng import FakeSearxNG

CTX = ToolContext(user_id="1", channel_id="2", guild_id=None)


@pytest.fixture
async def searx() -> AsyncIterator[FakeSearxNG]:
    async with FakeSearxNG() as fake:
        yield fake


@pytest.fixture
async def registry(searx: FakeSearxNG) -> AsyncIterator[ToolRegistry]:
    async with httpx.AsyncClient(follow_redirects=True) as http:  # as the bot's client is made
        reg = ToolRegistry(default_timeout_s=5)
        register_web_search(reg, http=http, searxng_url=searx.base_url + "/",
                            request_timeout_s=0.5)
        yield reg


async def test_top_results_with_title_url_and_snippet(
    registry: ToolRegistry, searx: FakeSearxNG
) -> None:
    searx.results["python release"] = [
        {"title": "Python 3.13 released", "url": "https://python.org/a", "content": "It is out."},
        {"title": "What's new", "url": "https://docs.python.org/b", "content": ""},
    ]
    result = await registry.call("web_search", {"query": "python release"}, CTX)
    assert result.ok
    assert result.observation == (
        "1. Python 3.13 released\n   https://python.org/a\n   It is out.\n"
        "2. What's new\n   https://docs.python.org/b"
    )


async def test_query_parameters_sent(registry: ToolRegistry, searx: FakeSearxNG) -> None:
    await registry.call("web_search", {"query": "  café  au lait "}, CTX)
    assert searx.requests == [{"q": "café au lait", "format": "json"}]


async def test_result_count_is_limited(registry: ToolRegistry) -> None:
    default = await registry.call("web_search", {"query": "x"}, CTX)
    assert [ln for ln in default.observation.splitlines() if ln[0].isdigit()][-1].startswith("5.")
    three = await registry.call("web_search", {"query": "x", "max_results": 3}, CTX)
    assert three.observation.count("https://example.org/") == 3


async def test_answers_come_first_and_duplicates_and_junk_are_skipped(
    registry: ToolRegistry, searx: FakeSearxNG
) -> None:
    searx.answers["capital of norway"] = ["Oslo"]
    searx.results["capital of norway"] = [
        {"title": "Oslo", "url": "https://a.example", "content": "Capital."},
        {"title": "Oslo again", "url": "https://a.example", "content": "Dup."},
        {"title": "no url"},
        "not a dict",
        {"title": "", "url": "https://b.example", "content": "x" * 1000},
    ]
    result = await registry.call("web_search", {"query": "capital of norway"}, CTX)
    lines = result.observation.splitlines()
    assert lines[0] == "Answer: Oslo"
    assert lines[1:4] == ["1. Oslo", "   https://a.example", "   Capital."]
    assert lines[4:6] == ["2. https://b.example", "   https://b.example"]
    assert len(lines[6]) == 3 + 300 and lines[6].endswith("…")
    assert len(lines) == 7


async def test_no_results_says_so(registry: ToolRegistry, searx: FakeSearxNG) -> None:
    searx.results["zzqx"] = []
    result = await registry.call("web_search", {"query": "zzqx"}, CTX)
    assert result.ok and result.observation == "No results for 'zzqx'. Try other words."


async def test_json_format_disabled_tells_the_operator_what_to_do(
    registry: ToolRegistry, searx: FakeSearxNG
) -> None:
    searx.json_enabled = False
    result = await registry.call("web_search", {"query": "x"}, CTX)
    assert not result.ok
    assert "HTTP 403" in result.observation and "enable the json format" in result.observation


@pytest.mark.parametrize(
    ("status", "message"),
    [(429, "Error: the search service is rate limiting (HTTP 429); try again later"),
     (502, "Error: the search service answered HTTP 502")],
)
async def test_http_errors_are_reported(
    registry: ToolRegistry, searx: FakeSearxNG, status: int, message: str
) -> None:
    searx.fail(status)
    assert (await registry.call("web_search", {"query": "x"}, CTX)).observation == message


async def test_unreadable_reply_is_reported(registry: ToolRegistry, searx: FakeSearxNG) -> None:
    searx.garbage()
    result = await registry.call("web_search", {"query": "x"}, CTX)
    assert result.observation == "Error: the search service sent an unreadable reply"


async def test_slow_service_times_out(registry: ToolRegistry, searx: FakeSearxNG) -> None:
    searx.delay(3.0)
    result = await registry.call("web_search", {"query": "x"}, CTX)
    assert result.observation == "Error: the search service timed out; try again later"


@pytest.mark.parametrize(
    ("args", "message"),
    [({"query": " "}, "Error: query is empty; say what to search for"),
     ({"query": "q" * 1000}, "Error: query is too long (1000 characters; limit 400)"),
     ({"query": "x", "max_results": 50}, "Error: max_results must be between 1 and 10, got 50")],
)
async def test_bad_arguments_are_refused_without_searching(
    registry: ToolRegistry, searx: FakeSearxNG, args: dict, message: str
) -> None:
    result = await registry.call("web_search", args, CTX)
    assert result.observation == message
    assert searx.requests == []


@pytest.mark.parametrize(
    ("base", "endpoint"),
    [("https://s.example", "https://s.example/search"),
     ("https://s.example/", "https://s.example/search"),
     ("https://s.example/searx/", "https://s.example/searx/search"),
     ("https://s.example/search", "https://s.example/search")],
)
def test_search_endpoint_accepts_common_url_forms(base: str, endpoint: str) -> None:
    assert search_endpoint(base) == endpoint


# --- what the service may send back (issue 22) ---------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]"])
async def test_a_redirect_to_a_loopback_page_is_not_followed(
    registry: ToolRegistry, searx: FakeSearxNG, host: str
) -> None:
    # the address as written, a name that resolves to it, and IPv4 written inside IPv6
    searx.redirect(searx.admin_url.replace("127.0.0.1", host))
    result = await registry.call("web_search", {"query": "x"}, CTX)
    assert not result.ok
    assert "redirected to a local or private address" in result.observation
    assert searx.admin_visits == 0 and "root password" not in result.observation


async def test_a_redirect_to_another_scheme_is_not_followed(
    registry: ToolRegistry, searx: FakeSearxNG
) -> None:
    searx.redirect("file:///etc/passwd")
    result = await registry.call("web_search", {"query": "x"}, CTX)
    assert not result.ok and "redirected to a file address" in result.observation


async def test_an_allowed_redirect_is_followed_and_redirect_loops_end(searx: FakeSearxNG) -> None:
    loopback_allowed = FetchLimits(redirect_allowed=lambda address: address.is_loopback)
    async with httpx.AsyncClient(follow_redirects=True) as http:
        reg = ToolRegistry(default_timeout_s=5)
        register_web_search(reg, http=http, searxng_url=searx.base_url, limits=loopback_allowed)
        searx.redirect(searx.admin_url)
        followed = await reg.call("web_search", {"query": "x"}, CTX)
        searx.redirect(searx.base_url + "/search")
        looped = await reg.call("web_search", {"query": "x"}, CTX)
    assert followed.ok and "admin panel" in followed.observation
    assert not looped.ok and "redirected more than 3 times" in looped.observation


async def test_a_body_past_the_byte_cap_is_not_read(searx: FakeSearxNG) -> None:
    async with httpx.AsyncClient() as http:
        reg = ToolRegistry(default_timeout_s=10)
        register_web_search(reg, http=http, searxng_url=searx.base_url,
                            limits=FetchLimits(max_bytes=200_000))
        searx.flood(50_000_000)
        result = await reg.call("web_search", {"query": "x"}, CTX)
    assert not result.ok and "sent more than 200,000 bytes" in result.observation


def test_the_default_cap_and_rule_refuse_local_addresses() -> None:
    assert DEFAULT_LIMITS.max_bytes <= 10_000_000 and DEFAULT_LIMITS.max_redirects <= 5
    for text in ("127.0.0.1", "10.0.0.5", "192.168.1.1", "169.254.169.254", "100.64.0.1", "::1",
                 "fd00:ec2::254", "fe80::1", "::ffff:10.0.0.1", "0.0.0.0"):
        assert not is_public_address(ipaddress.ip_address(text)), text
    assert is_public_address(ipaddress.ip_address("93.184.216.34"))
