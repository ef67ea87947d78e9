"""The `/docs` commands' service: a server's documents added from a file or a public URL,
listed, removed and exported, each refusal one sentence (memory.documents.DocumentRefused).

A URL is fetched with agent.tools.fetch.get_public: http or https only, every hop's address
public (no loopback, private, link-local or reserved address, the first hop included), the
body capped at the server's file limit. An attached file comes through Discord; its declared
size is checked before it is read.

Part of bot/: joins memory.documents and the fetch client; knows nothing of Discord.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable
from typing import Any

import httpx

from agent.tools.fetch import FetchLimits, IPAddress, get_public, is_public_address
from agent.tools.registry import ToolError
from memory.documents import DocumentInfo, DocumentRefused, ServerDocuments, kind_of

__all__ = ["DocumentsService"]

log = logging.getLogger(__name__)

FETCH_TIMEOUT_S = 20.0
SERVICE = "that address"


def _title_from(source: str) -> str:
    """A default title: a file's name without its suffix, or a URL's last path part or host."""
    if "://" in source:
        url = httpx.URL(source)
        last = url.path.rstrip("/").rsplit("/", 1)[-1]
        return last.rsplit(".", 1)[0] if last else (url.host or source)
    return source.rsplit(".", 1)[0] if "." in source else source


class DocumentsService:
    """What the `/docs` commands do, per server."""

    def __init__(self, documents: ServerDocuments, http: httpx.AsyncClient, *,
                 address_allowed: Callable[[IPAddress], bool] = is_public_address) -> None:
        self._documents = documents
        self._http = http
        self._allowed = address_allowed  # tests serve pages from loopback

    @property
    def max_file_bytes(self) -> int:
        return self._documents.limits.max_file_bytes

    async def add_file(self, guild_id: str, actor_id: str, *, filename: str, media_type: str | None,
                       data: bytes, title: str | None) -> DocumentInfo:
        """Add an attached file; DocumentRefused says why not."""
        kind = kind_of(filename, media_type)
        return await self._documents.add(guild_id, title=title or _title_from(filename), source=filename,
                                         kind=kind, data=data, added_by=actor_id)

    async def add_url(self, guild_id: str, actor_id: str, *, url: str, title: str | None) -> DocumentInfo:
        """Fetch a public page or file and add it; DocumentRefused says why not."""
        url = url.strip()
        limits = FetchLimits(max_bytes=self.max_file_bytes, redirect_allowed=self._allowed)
        try:
            fetched = await get_public(self._http, url, service=SERVICE, timeout_s=FETCH_TIMEOUT_S, limits=limits)
        except ToolError as exc:
            raise DocumentRefused(f"I did not add it: {exc}.") from None
        if fetched.status != 200:
            raise DocumentRefused(f"I did not add it: that address answered HTTP {fetched.status}.")
        path = httpx.URL(url).path
        name = path.rsplit("/", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
        kind = kind_of(name, fetched.content_type or "text/html")
        return await self._documents.add(guild_id, title=title or _title_from(url), source=url, kind=kind,
                                         data=fetched.content, added_by=actor_id)

    async def list(self, guild_id: str) -> list[DocumentInfo]:
        return await self._documents.list(guild_id)

    async def remove(self, guild_id: str, document_id: str) -> DocumentInfo | None:
        return await self._documents.remove(guild_id, document_id)

    async def export(self, guild_id: str) -> builtins.list[dict[str, Any]]:
        return await self._documents.export(guild_id)
