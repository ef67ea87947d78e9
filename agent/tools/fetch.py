"""get_json: one GET of a JSON object for the tools that call web services (weather, web_search);
get_public: one GET of a URL a person gave (a server document), its first hop checked too.

Every failure becomes a ToolError the model can act on, naming the service as the tool calls
it ("the search service"): a timeout, a connection error, a status other than 200 (with the
body's "reason" when it gives one, as Open-Meteo does, or the tool's own message for that
status), a body that is not JSON or not a JSON object.

What a service sends is bounded (`FetchLimits`): the body is streamed and given up past
``max_bytes``, and redirects are followed here, not by the client, at most ``max_redirects``
of them, each only to an address ``redirect_allowed`` accepts (by default a public one: no
loopback, private, link-local, shared or reserved address, IPv4 inside IPv6 included). Every
hop's host is resolved and its addresses checked before the request, and the address the
connection really reached is checked again before its body is read (a name that resolves
differently the second time gains nothing). The configured URL itself is the operator's
choice and may be local (a SearxNG on the same box); only where it redirects to is checked.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from agent.tools.registry import ToolError

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_LIMITS", "Fetched", "FetchLimits", "get_json", "get_public", "is_public_address"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def is_public_address(address: IPAddress) -> bool:
    """True for an address on the public internet (``is_global``), an IPv4 one written inside
    IPv6 (``::ffff:127.0.0.1``) judged as itself."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """What one service call may cost: body size, redirects, and where redirects may lead."""

    max_bytes: int = 4_000_000
    max_redirects: int = 3
    redirect_allowed: Callable[[IPAddress], bool] = is_public_address


DEFAULT_LIMITS = FetchLimits()


@dataclass(frozen=True, slots=True)
class Fetched:
    """The last hop's answer: status, media type (Content-Type, may be empty) and body."""

    status: int
    content_type: str
    content: bytes


async def get_public(http: httpx.AsyncClient, url: str, *, service: str, timeout_s: float,
                     limits: FetchLimits = DEFAULT_LIMITS) -> Fetched:
    """GET a URL someone gave (not the operator): unlike `get_json`, its first hop is checked
    like a redirect (http or https, an allowed address), then the same limits apply. Every
    failure is a ToolError saying what went wrong, in a sentence."""
    try:
        target = httpx.URL(url)
    except httpx.InvalidURL:
        raise ToolError(f"{service} is not a valid address") from None
    try:
        return await _fetch(http, target, {}, service, timeout_s, limits, check_first=True)
    except httpx.TimeoutException:
        raise ToolError(f"{service} timed out; try again later") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"{service} is unreachable ({type(exc).__name__})") from None


async def get_json(
    http: httpx.AsyncClient,
    url: str,
    params: Mapping[str, Any],
    *,
    service: str,
    timeout_s: float,
    status_messages: Mapping[int, str] | None = None,
    limits: FetchLimits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    """GET ``url`` and return its JSON object; raise ToolError saying what went wrong."""
    try:
        fetched = await _fetch(http, httpx.URL(url), params, service, timeout_s, limits)
        status, content = fetched.status, fetched.content
    except httpx.TimeoutException:
        raise ToolError(f"{service} timed out; try again later") from None
    except httpx.HTTPError as exc:
        log.warning("%s: request to %s failed: %s", service, url, exc)
        raise ToolError(
            f"{service} is unreachable ({type(exc).__name__}); try again later"
        ) from None
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    if status != 200:
        if message := (status_messages or {}).get(status):
            raise ToolError(message)
        raise ToolError(f"{service} answered HTTP {status}{_reason(body)}")
    if body is None:
        raise ToolError(f"{service} sent an unreadable reply")
    if not isinstance(body, dict):
        raise ToolError(f"{service} sent an unexpected reply")
    return body


async def _fetch(http: httpx.AsyncClient, url: httpx.URL, params: Mapping[str, Any], service: str,
                 timeout_s: float, limits: FetchLimits, *, check_first: bool = False) -> Fetched:
    """The last hop's answer, redirects followed under ``limits`` (the first hop checked too
    with ``check_first``)."""
    target = url.copy_merge_params(dict(params)) if params else url
    for hop in range(limits.max_redirects + 1):
        if hop or check_first:
            await _check_target(target, service, limits, redirected=bool(hop))
        async with http.stream("GET", target, timeout=timeout_s, follow_redirects=False) as response:
            if hop or check_first:
                _check_peer(response, service, limits, "redirected to" if hop else "is")
            if response.is_redirect:
                target = response.url.join(response.headers["location"])
                continue
            return Fetched(response.status_code, response.headers.get("content-type", ""),
                           await _read(response, service, limits.max_bytes))
    raise ToolError(f"{service} redirected more than {limits.max_redirects} times")


async def _check_target(url: httpx.URL, service: str, limits: FetchLimits, *, redirected: bool = True) -> None:
    """Refuse a hop to another scheme, or to a host with an address not allowed."""
    went = "redirected to" if redirected else "is"
    if url.scheme not in ("http", "https"):
        raise ToolError(f"{service} {went} a {url.scheme or 'relative'} address, not http or https")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            url.host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise ToolError(f"{service} {went} a host that does not resolve") from None
    for *_, sockaddr in infos:
        _check_address(str(sockaddr[0]), service, limits, went)


def _check_peer(response: httpx.Response, service: str, limits: FetchLimits, went: str) -> None:
    """Refuse a response from an address not allowed (what the connection really reached)."""
    stream = response.extensions.get("network_stream")
    peer = stream.get_extra_info("server_addr") if stream is not None else None
    if peer:
        _check_address(str(peer[0]), service, limits, went)


def _check_address(text: str, service: str, limits: FetchLimits, went: str = "redirected to") -> None:
    address = ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 scope ("%eth0") aside
    if not limits.redirect_allowed(address):
        log.warning("%s: a request to %s refused", service, address)
        raise ToolError(f"{service} {went} a local or private address; not followed")


async def _read(response: httpx.Response, service: str, max_bytes: int) -> bytes:
    """The body, streamed; refused past ``max_bytes`` (said by Content-Length or counted)."""
    too_big = ToolError(f"{service} sent more than {max_bytes:,} bytes; not read")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_big
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _reason(body: Any) -> str:
    """": <reason>" from an error body such as Open-Meteo's {"error": true, "reason": ...}."""
    if isinstance(body, dict) and isinstance(body.get("reason"), str):
        return f": {body['reason'][:200]}"
    return ""
