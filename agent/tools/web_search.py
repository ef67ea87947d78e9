"""The web_search tool: top results from a SearxNG instance's JSON API.

``GET {SEARXNG_URL}/search?q=...&format=json`` over the ``httpx.AsyncClient`` it is given;
each result is shown as title, URL and a trimmed snippet. The tool is registered only when an
instance URL is configured. SearxNG serves JSON only when its settings enable the ``json``
format; a 403 says so, so that the operator can fix it.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from typing import Any

import httpx

from agent.tools.fetch import DEFAULT_LIMITS, FetchLimits, get_json
from agent.tools.registry import ToolError, ToolRegistry

__all__ = ["MAX_RESULTS", "register_web_search", "search_endpoint"]

MAX_RESULTS = 10
MAX_QUERY_CHARS = 400
SNIPPET_CHARS = 300
_STATUS_MESSAGES = {
    403: "the search service refused the request (HTTP 403); its operator must enable the "
    "json format in SearxNG's settings",
    429: "the search service is rate limiting (HTTP 429); try again later",
}


def search_endpoint(base_url: str) -> str:
    """The ``/search`` URL of an instance given as ``https://host[/prefix][/search]``."""
    url = base_url.strip().rstrip("/")
    return url if url.endswith("/search") else f"{url}/search"


def register_web_search(
    registry: ToolRegistry,
    *,
    http: httpx.AsyncClient,
    searxng_url: str,
    request_timeout_s: float = 10.0,
    limits: FetchLimits = DEFAULT_LIMITS,
) -> None:
    """Add the ``web_search`` tool, querying the SearxNG instance at ``searxng_url`` (its
    replies bounded by ``limits``: size, redirects and where they may lead)."""
    endpoint = search_endpoint(searxng_url)

    @registry.tool(name="web_search")
    async def web_search(query: str, max_results: int = 5) -> str:
        """Search the web and get the top results (title, URL, snippet). Use it for recent
        events or facts you are not sure of.

        Args:
            query: What to search for, e.g. "Python 3.13 release date".
            max_results: How many results to return, 1 to 10.
        """
        text = " ".join(query.split())
        if not text:
            raise ToolError("query is empty; say what to search for")
        if len(text) > MAX_QUERY_CHARS:
            raise ToolError(f"query is too long ({len(text)} characters; limit {MAX_QUERY_CHARS})")
        if not 1 <= max_results <= MAX_RESULTS:
            raise ToolError(f"max_results must be between 1 and {MAX_RESULTS}, got {max_results}")
        body = await get_json(
            http, endpoint, {"q": text, "format": "json"},
            service="the search service", timeout_s=request_timeout_s,
            status_messages=_STATUS_MESSAGES, limits=limits,
        )
        return _describe(text, body, max_results)


def _clip(text: Any, limit: int) -> str:
    words = " ".join(str(text or "").split())
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


def _describe(query: str, body: dict[str, Any], max_results: int) -> str:
    lines: list[str] = []
    answers = body.get("answers")
    if isinstance(answers, list):
        for answer in answers[:2]:
            text = answer.get("answer") if isinstance(answer, dict) else answer
            if text:
                lines.append(f"Answer: {_clip(text, SNIPPET_CHARS)}")
    results = body.get("results")
    shown = 0
    seen: set[str] = set()
    for result in results if isinstance(results, list) else []:
        if shown >= max_results:
            break
        if not isinstance(result, dict) or not isinstance(result.get("url"), str):
            continue
        url = result["url"]
        if url in seen:
            continue
        seen.add(url)
        shown += 1
        title = _clip(result.get("title") or url, 200)
        lines.append(f"{shown}. {title}\n   {url}")
        if snippet := _clip(result.get("content"), SNIPPET_CHARS):
            lines.append(f"   {snippet}")
    if not lines:
        return f"No results for {query!r}. Try other words."
    return "\n".join(lines)
