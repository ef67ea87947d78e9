"""get_json: one GET of a JSON object for the tools that call web services (weather, web_search).

Every failure becomes a ToolError the model can act on, naming the service as the tool calls
it ("the search service"): a timeout, a connection error, a status other than 200 (with the
body's "reason" when it gives one, as Open-Meteo does, or the tool's own message for that
status), a body that is not JSON or not a JSON object.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx

from agent.tools.registry import ToolError

log = logging.getLogger(__name__)

__all__ = ["get_json"]


async def get_json(
    http: httpx.AsyncClient,
    url: str,
    params: Mapping[str, Any],
    *,
    service: str,
    timeout_s: float,
    status_messages: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """GET ``url`` and return its JSON object; raise ToolError saying what went wrong."""
    try:
        response = await http.get(url, params=dict(params), timeout=timeout_s)
    except httpx.TimeoutException:
        raise ToolError(f"{service} timed out; try again later") from None
    except httpx.HTTPError as exc:
        log.warning("%s: request to %s failed: %s", service, url, exc)
        raise ToolError(
            f"{service} is unreachable ({type(exc).__name__}); try again later"
        ) from None
    if response.status_code != 200:
        if message := (status_messages or {}).get(response.status_code):
            raise ToolError(message)
        raise ToolError(f"{service} answered HTTP {response.status_code}{_reason(response)}")
    try:
        body = response.json()
    except ValueError:
        raise ToolError(f"{service} sent an unreadable reply") from None
    if not isinstance(body, dict):
        raise ToolError(f"{service} sent an unexpected reply")
    return body


def _reason(response: httpx.Response) -> str:
    """": <reason>" from an error body such as Open-Meteo's {"error": true, "reason": ...}."""
    try:
        body = response.json()
    except ValueError:
        return ""
    if isinstance(body, dict) and isinstance(body.get("reason"), str):
        return f": {body['reason'][:200]}"
    return ""
