"""FakeSearxNG: a loopback fake of a SearxNG instance's search API (aiohttp).

Real HTTP on 127.0.0.1 and a random port, for the web_search tool's real ``httpx`` client.

Endpoint
    GET /search?q=...&format=json   results for ``q``: ``fake.results[q]`` when set, else
                                    ``fake.default_count`` generated results; ``format``
                                    other than json (or ``json_enabled=False``) gives 403,
                                    as a real instance without the json format does

Use
    async with FakeSearxNG() as fake:
        register_web_search(reg, http=client, searxng_url=fake.base_url)
        fake.results["python"] = [{"title": ..., "url": ..., "content": ...}]
        fake.answers["python"] = ["A programming language."]
        fake.fail(500) / fake.garbage() / fake.delay(2.0)
        fake.redirect(url)                            # 302 to url (fake.admin_url: a local page)
        fake.flood(n)                                 # a body of n bytes, chunked, no length
        fake.requests                                 # [{query params}, ...]
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackServer

__all__ = ["FakeSearxNG"]


class FakeSearxNG(LoopbackServer):
    """Loopback SearxNG; see the module docstring."""

    def __init__(self, *, json_enabled: bool = True, default_count: int = 12) -> None:
        super().__init__()
        self.json_enabled = json_enabled
        self.default_count = default_count
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.answers: dict[str, list[Any]] = {}
        self.requests: list[dict[str, str]] = []
        self._override: tuple[int, str, str] | None = None
        self._delay = 0.0
        self._redirect: str | None = None
        self._flood = 0
        self.admin_visits = 0

    def fail(self, status: int, body: Any = None) -> FakeSearxNG:
        """Answer every later search with ``status``."""
        self._override = (status, json.dumps(body or {"error": "fake"}), "application/json")
        return self

    def garbage(self, text: str = "<html>maintenance</html>") -> FakeSearxNG:
        """Answer every later search with 200 and a non-JSON body."""
        self._override = (200, text, "text/html")
        return self

    def delay(self, seconds: float) -> FakeSearxNG:
        """Wait ``seconds`` before answering."""
        self._delay = seconds
        return self

    def redirect(self, location: str) -> FakeSearxNG:
        """Answer every later search with a 302 to ``location``."""
        self._redirect = location
        return self

    def flood(self, size: int) -> FakeSearxNG:
        """Answer every later search with 200 and ``size`` bytes, chunked (no Content-Length)."""
        self._flood = size
        return self

    @property
    def admin_url(self) -> str:
        """A page meant for the box's own admin, answering search-shaped JSON."""
        return f"{self.base_url}/admin"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/search", self._search)
        app.router.add_get("/admin", self._admin)

    async def _admin(self, request: web.Request) -> web.Response:
        self.admin_visits += 1
        return web.json_response({"results": [
            {"title": "admin panel", "url": "http://127.0.0.1/admin", "content": "root password"}]})

    async def _flood_response(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        chunk = b" " * 65536
        sent = 0
        while sent < self._flood:
            try:
                await response.write(chunk)
            except ConnectionError:  # the client stopped reading, as it should
                break
            sent += len(chunk)
        return response

    async def _search(self, request: web.Request) -> web.Response:
        self.requests.append(dict(request.query))
        if self._delay:
            await asyncio.sleep(self._delay)
        if self._redirect is not None:
            raise web.HTTPFound(self._redirect)
        if self._flood:
            return await self._flood_response(request)
        if self._override is not None:
            status, text, content_type = self._override
            return web.Response(status=status, text=text, content_type=content_type)
        if request.query.get("format") != "json" or not self.json_enabled:
            return web.Response(status=403, text="Forbidden")
        query = request.query.get("q", "")
        results = self.results.get(query)
        if results is None:
            results = [
                {"title": f"Result {i} about {query}", "url": f"https://example.org/{i}",
                 "content": f"Snippet {i} mentioning {query}.", "engine": "fake",
                 "score": 1.0 / i}
                for i in range(1, self.default_count + 1)
            ]
        return web.json_response({
            "query": query,
            "number_of_results": len(results),
            "results": results,
            "answers": self.answers.get(query, []),
            "suggestions": [],
            "infoboxes": [],
            "unresponsive_engines": [],
        })
