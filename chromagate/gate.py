"""The gate: an aiohttp server that checks the token and forwards to Chroma (see the package).

Listens on a socket systemd passed (socket activation: LISTEN_FDS, as
react-discord-bot-chroma-gate.socket does), or on a host and port. Bodies are read whole, up to
MAX_BODY_BYTES (Chroma's requests and answers are JSON of at most a few batches of vectors).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import socket
import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

__all__ = ["MAX_BODY_BYTES", "GateConfig", "build_app", "serve"]

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 256 * 2**20
SD_LISTEN_FDS_START = 3  # the first socket systemd passes (sd_listen_fds(3))
UPSTREAM_WAIT_S = 30.0  # a request waits this long for Chroma to accept connections (it starts with the gate)
# Not forwarded: per-connection headers, and the token itself (Chroma checks none).
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                  "trailer", "transfer-encoding", "upgrade", "host", "content-length", "authorization"})
_FORBIDDEN = {"error": "AuthError", "message": "Forbidden"}  # chromadb's body: its client raises ChromaAuthError


@dataclass(frozen=True, slots=True)
class GateConfig:
    upstream: str  # the Chroma server, e.g. http://127.0.0.1:8001
    token: str = field(repr=False)


def _allowed(request: web.Request, expected: bytes) -> bool:
    given = request.headers.get("Authorization", "").encode()
    return hmac.compare_digest(given, expected)


def build_app(config: GateConfig) -> web.Application:
    """The gate as an aiohttp application (its client session opens and closes with it)."""
    expected = f"Bearer {config.token}".encode()
    upstream = config.upstream.rstrip("/")
    app = web.Application(client_max_size=MAX_BODY_BYTES)

    async def session_context(app: web.Application):  # type: ignore[no-untyped-def]
        app["session"] = aiohttp.ClientSession(auto_decompress=False,
                                               timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        yield
        await app["session"].close()

    async def forward(request: web.Request) -> web.StreamResponse:
        if not _allowed(request, expected):
            log.info("refused %s %s from %s: no valid token", request.method, request.path, request.remote)
            return web.json_response(_FORBIDDEN, status=403)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        body = await request.read()
        deadline = time.monotonic() + UPSTREAM_WAIT_S
        while True:
            try:
                async with app["session"].request(request.method, upstream + request.path_qs, headers=headers,
                                                  data=body or None, allow_redirects=False) as answer:
                    payload = await answer.read()
                    kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
                    return web.Response(status=answer.status, body=payload, headers=kept)
            except aiohttp.ClientConnectorError as exc:  # nothing sent yet: Chroma is still starting
                if time.monotonic() >= deadline:
                    log.warning("Chroma at %s unreachable: %s", upstream, exc)
                    break
                await asyncio.sleep(0.2)
            except aiohttp.ClientError as exc:
                log.warning("Chroma at %s failed: %s", upstream, exc)
                break
        return web.json_response({"error": "ChromaError", "message": "Chroma is unreachable"}, status=502)

    app.cleanup_ctx.append(session_context)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


def listening_socket() -> socket.socket | None:
    """The socket systemd passed to this process, if it passed one."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()) or int(os.environ.get("LISTEN_FDS", "0")) < 1:
        return None
    return socket.socket(fileno=SD_LISTEN_FDS_START)


async def serve(config: GateConfig, *, host: str = "127.0.0.1", port: int = 8000) -> web.AppRunner:
    """Start the gate (systemd's socket, else host:port); the runner, to `cleanup()` it."""
    runner = web.AppRunner(build_app(config), access_log=None)
    await runner.setup()
    sock = listening_socket()
    site = web.SockSite(runner, sock) if sock is not None else web.TCPSite(runner, host, port)
    await site.start()
    log.info("gate to %s listening on %s", config.upstream, site.name)
    return runner
