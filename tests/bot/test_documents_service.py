"""The /docs service adding a document from a URL, against a loopback web server (its address
allowed for the test, as a public one would be): HTML read with its headings, and one
sentence for a page that is missing, too big, or redirects to an address not allowed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from bot.knowledge.documents import DocumentsService
from memory.documents import DocumentLimits, DocumentRefused, ServerDocuments, open_server_documents
from memory.semantic.embeddings import OpenAIEmbedder
from memory.stores.database import Database
from tests.fakes.loopback import LoopbackServer
from tests.fakes.openai_server import FakeOpenAI

GUILD = "100000000000000001"
ADMIN = "200000000000000009"
FAQ_HTML = (b"<html><body><nav>Home | About</nav><h1>Guild FAQ</h1><h2>Raids</h2>"
            b"<p>Raids start every Saturday at 20:00 server time.</p></body></html>")


class Pages(LoopbackServer):
    """A few pages: an HTML FAQ, a 404, a large streamed body, a redirect to another host."""

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/faq", self._faq)
        app.router.add_get("/huge", self._huge)
        app.router.add_get("/away", self._away)

    async def _faq(self, request: web.Request) -> web.Response:
        return web.Response(body=FAQ_HTML, content_type="text/html")

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})  # no Content-Length
        await response.prepare(request)
        for _ in range(100):
            await response.write(b"x" * 1000)
        return response

    async def _away(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("http://10.0.0.1/secret")


@pytest.fixture
async def pages() -> AsyncIterator[Pages]:
    async with Pages() as server:
        yield server


@pytest.fixture
async def store(tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[ServerDocuments]:
    embedder = OpenAIEmbedder(base_url=fake.base_url, model="fake-embed")
    async with Database.open(tmp_path / "bot.sqlite3") as db:
        docs = await asyncio.to_thread(open_server_documents, db, embedder, path=tmp_path / "documents",
                                       limits=DocumentLimits(max_file_bytes=50_000))
        await docs.load()
        yield docs
        await docs.close()
    embedder.close()


@pytest.fixture
async def service(store: ServerDocuments) -> AsyncIterator[DocumentsService]:
    async with httpx.AsyncClient() as http:
        yield DocumentsService(store, http, address_allowed=lambda address: address.is_loopback)


async def test_a_page_is_added_with_its_headings_and_titled_by_its_path(
        service: DocumentsService, store: ServerDocuments, pages: Pages) -> None:
    doc = await service.add_url(GUILD, ADMIN, url=f"{pages.base_url}/faq", title=None)
    assert (doc.title, doc.kind, doc.source) == ("faq", "html", f"{pages.base_url}/faq")
    [hit, *_] = await store.search(GUILD, "when do raids start?")
    assert hit.section == "Guild FAQ > Raids"
    assert "Saturday at 20:00" in hit.text


async def test_a_missing_page_is_refused_with_its_status(service: DocumentsService, pages: Pages) -> None:
    with pytest.raises(DocumentRefused, match=r"^I did not add it: that address answered HTTP 404\.$"):
        await service.add_url(GUILD, ADMIN, url=f"{pages.base_url}/nothing", title=None)


async def test_a_body_past_the_file_limit_is_given_up(service: DocumentsService, pages: Pages) -> None:
    with pytest.raises(DocumentRefused, match="more than 50,000 bytes"):
        await service.add_url(GUILD, ADMIN, url=f"{pages.base_url}/huge", title=None)


async def test_a_redirect_to_a_private_address_is_not_followed(service: DocumentsService, pages: Pages) -> None:
    with pytest.raises(DocumentRefused, match="redirected to a local or private address"):
        await service.add_url(GUILD, ADMIN, url=f"{pages.base_url}/away", title=None)


async def test_by_default_a_loopback_url_is_refused_before_any_request(store: ServerDocuments, pages: Pages) -> None:
    async with httpx.AsyncClient() as http:
        service = DocumentsService(store, http)
        with pytest.raises(DocumentRefused, match="is a local or private address"):
            await service.add_url(GUILD, ADMIN, url=f"{pages.base_url}/faq", title=None)
