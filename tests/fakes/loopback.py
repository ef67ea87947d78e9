"""LoopbackServer: the lifecycle the small HTTP fakes share.

An aiohttp application on 127.0.0.1 at a free port, started with `start()` or `async with`,
its address in `base_url`. A fake subclasses it and adds its routes in `add_routes`; one that
takes large bodies raises `client_max_size`. No access log; closing gives in-flight (delayed)
handlers 0.2 s.
"""

from __future__ import annotations

from typing import Self

from aiohttp import web
from aiohttp.test_utils import TestServer

__all__ = ["LoopbackServer"]


class LoopbackServer:
    """Start/stop and address of one loopback aiohttp server."""

    client_max_size = 1024**2  # aiohttp's default limit on a request body

    def __init__(self) -> None:
        self._server: TestServer | None = None

    def add_routes(self, app: web.Application) -> None:
        raise NotImplementedError(f"{type(self).__name__} must add its routes")

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started; use `async with` or start()")
        return str(self._server.make_url("")).rstrip("/")

    async def start(self) -> Self:
        app = web.Application(client_max_size=self.client_max_size)
        self.add_routes(app)
        self._server = TestServer(app, host="127.0.0.1", port=0)
        await self._server.start_server(access_log=None, shutdown_timeout=0.2)
        return self

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()
            self._server = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
