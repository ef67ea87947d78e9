"""A server's documents: added, listed, removed, exported and searched, per server only.

Storage: SQLite (the bot's database file, tables `documents` and `document_passages`) holds
what was added and every passage's text, and is the truth; one Chroma collection
(`server_documents`, under DATA_DIR/documents or on the Chroma server) holds the passages'
vectors, each tagged with its server and document. An add embeds and writes the vectors
first, then the rows in one transaction (vectors of a failed add are deleted again); a remove
deletes the rows, then the vectors (vectors left by a failure there are never read: a search
takes only the passages SQLite knows). Every call names its server, and a search reads that
server's rows only: a server's documents are never found from another server.

Limits (`DocumentLimits`) are checked before anything is stored, each refusal one sentence
(`DocumentRefused`). Blocking work (extraction, embedding, Chroma, building and searching an
index) runs in worker threads, and an embedded Chroma folder may run in a child process
(`memory.semantic.chroma_process`, as the memory's does): its bindings hold the GIL while they
add or read, which would stall the event loop. A server's searchable index
(`memory.documents.index`) is built on its first search from pages of vectors and dropped
when its documents change. The servers that have documents are known in memory, so asking
whether a server has any costs no query.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memory.documents.extract import DocumentRefused, extract
from memory.documents.index import DOCS_RANKING, DocHit, IndexedPassage, PassageIndex
from memory.documents.limits import DocumentLimits
from memory.documents.passages import Passage, split_passages
from memory.errors import StoreUnavailable
from memory.keyed_locks import KeyedLocks
from memory.semantic.chroma_backend import ChromaStore, StoredItem
from memory.semantic.chroma_process import ChromaProcess
from memory.semantic.embeddings import Embedder
from memory.semantic.ranking import RankingConfig
from memory.stores.database import Database, epoch_us, from_epoch_us, require_id, storable_text

__all__ = ["COLLECTION", "DocumentInfo", "ServerDocuments", "open_server_documents", "too_big"]

log = logging.getLogger(__name__)

COLLECTION = "server_documents"
TITLE_MAX_CHARS = 100
EMBED_BATCH = 64
READ_PAGE = 500  # vectors per Chroma read when an index is built: bounds the time one read holds the GIL


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """One added document as listed."""

    id: str
    guild_id: str
    title: str
    source: str
    kind: str
    size_bytes: int
    chars: int
    passages: int
    added_by: str
    added_at: datetime


def _size(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 1_000_000 else f"{max(1, round(size / 1000))} KB"


def too_big(size: int, limit: int) -> DocumentRefused:
    """The refusal of a file of ``size`` bytes over ``limit``."""
    return DocumentRefused(f"That file is {_size(size)}; documents may be at most {_size(limit)}.")


class VectorsOnFirstUse:
    """The documents' Chroma collection, opened by the first call that needs it (from a worker
    thread): a bot whose servers have no documents starts no Chroma child process for them."""

    def __init__(self, open_store: Callable[[], ChromaStore | ChromaProcess]) -> None:
        self._open_store = open_store
        self._store: ChromaStore | ChromaProcess | None = None
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def opened(cls, store: ChromaStore | ChromaProcess) -> VectorsOnFirstUse:
        vectors = cls(lambda: store)
        vectors._store = store
        return vectors

    @property
    def is_open(self) -> bool:
        return self._store is not None

    def get(self) -> ChromaStore | ChromaProcess:
        """The store, opened now if it was not (blocking); StoreUnavailable once closed (a call
        still in a worker thread at shutdown starts no child that nothing would stop)."""
        with self._lock:
            if self._closed:
                raise StoreUnavailable("the server documents' store is closed")
            if self._store is None:
                self._store = self._open_store()
            return self._store

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._store is not None:
                self._store.close()


class ServerDocuments:
    """Every server's documents over one database and one Chroma collection."""

    def __init__(self, db: Database, vectors: VectorsOnFirstUse, embedder: Embedder, *,
                 limits: DocumentLimits | None = None, cached_servers: int = 16) -> None:
        self._db = db
        self._vectors = vectors
        self._embedder = embedder
        self.limits = limits or DocumentLimits()
        self._cached_servers = cached_servers
        self._indexes: OrderedDict[str, PassageIndex] = OrderedDict()
        self._changes: dict[str, int] = {}  # per server, bumped by every add and remove
        self._server_locks = KeyedLocks()  # one change to a server's documents at a time
        self._with_documents: set[str] = set()

    async def load(self) -> None:
        """Learn which servers have documents (once, at start)."""
        rows = await self._db.fetchall("SELECT DISTINCT guild_id FROM documents")
        self._with_documents = {r["guild_id"] for r in rows}

    def has_documents(self, guild_id: str | None) -> bool:
        """Whether a server has any document (no query: known in memory)."""
        return guild_id is not None and guild_id in self._with_documents

    # -- adding -------------------------------------------------------------------------

    async def add(self, guild_id: str, *, title: str, source: str, kind: str, data: bytes,
                  added_by: str) -> DocumentInfo:
        """Extract, split, embed and store a document; DocumentRefused (one sentence) when it
        is too big, unreadable, or over the server's limits."""
        require_id("guild_id", guild_id)
        limits = self.limits
        if len(data) > limits.max_file_bytes:
            raise too_big(len(data), limits.max_file_bytes)
        title = " ".join(storable_text(title).split())[:TITLE_MAX_CHARS] or "Untitled"
        chars, passages = await asyncio.to_thread(_passages_of, data, kind, limits)
        async with self._server_locks.held(guild_id):
            row = await self._db.fetchone(
                "SELECT (SELECT COUNT(*) FROM documents WHERE guild_id = ?) AS docs, "
                "(SELECT COUNT(*) FROM document_passages WHERE guild_id = ?) AS passages", (guild_id, guild_id))
            documents, stored = (int(row["docs"]), int(row["passages"])) if row else (0, 0)
            if documents >= limits.max_documents:
                raise DocumentRefused(f"This server already has {documents} documents, the most it may keep; "
                                      "remove one first.")
            if stored + len(passages) > limits.max_passages:
                raise DocumentRefused(f"That document would take {len(passages):,} passages and this server has "
                                      f"room for {max(0, limits.max_passages - stored):,} more; remove a "
                                      "document first or add a shorter one.")
            doc_id = uuid.uuid4().hex[:12]
            ids = [f"{doc_id}-{p.ordinal}" for p in passages]
            vectors = await asyncio.to_thread(self._embed, [p.indexed(title) for p in passages])
            # no text in Chroma: SQLite holds it (and a delete of vectors that fails leaves no words)
            await asyncio.to_thread(lambda: self._vectors.get().add(
                ids, vectors, [""] * len(passages), [{"guild_id": guild_id, "document_id": doc_id}] * len(passages)))
            added_at = datetime.now(UTC)
            try:
                async with self._db.transaction():
                    await self._db.execute(
                        "INSERT INTO documents (id, guild_id, title, source, kind, size_bytes, chars, added_by, "
                        "added_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (doc_id, guild_id, title, storable_text(source)[:2000], kind, len(data), chars,
                         added_by, epoch_us(added_at)))
                    await self._db.executemany(
                        "INSERT INTO document_passages (document_id, ordinal, guild_id, section, text) "
                        "VALUES (?, ?, ?, ?, ?)",
                        [(doc_id, p.ordinal, guild_id, storable_text(p.section), storable_text(p.text))
                         for p in passages])
            except BaseException:
                await asyncio.to_thread(lambda: self._vectors.get().delete(ids))
                raise
            self._changed(guild_id, present=True)
        log.info("server %s: added document %s (%s, %d passages)", guild_id, doc_id, kind, len(passages))
        return DocumentInfo(doc_id, guild_id, title, source, kind, len(data), chars, len(passages), added_by,
                            added_at)

    def _embed(self, texts: list[str]) -> np.ndarray:
        batches = [self._embedder.embed(texts[at:at + EMBED_BATCH]) for at in range(0, len(texts), EMBED_BATCH)]
        return np.concatenate(batches) if batches else np.zeros((0, 0), np.float32)

    def _changed(self, guild_id: str, *, present: bool) -> None:
        self._indexes.pop(guild_id, None)
        self._changes[guild_id] = self._changes.get(guild_id, 0) + 1
        if present:
            self._with_documents.add(guild_id)
        else:
            self._with_documents.discard(guild_id)

    # -- listing, removing, exporting ---------------------------------------------------

    async def list(self, guild_id: str) -> list[DocumentInfo]:
        """A server's documents, oldest first."""
        rows = await self._db.fetchall(
            "SELECT d.*, (SELECT COUNT(*) FROM document_passages p WHERE p.document_id = d.id) AS passages "
            "FROM documents d WHERE d.guild_id = ? ORDER BY d.added_at_us, d.id", (guild_id,))
        return [DocumentInfo(r["id"], r["guild_id"], r["title"], r["source"], r["kind"], r["size_bytes"],
                             r["chars"], r["passages"], r["added_by"], from_epoch_us(r["added_at_us"]))
                for r in rows]

    async def remove(self, guild_id: str, document_id: str) -> DocumentInfo | None:
        """Remove one of a server's documents; None when that server has no such document."""
        async with self._server_locks.held(guild_id):
            found = next((d for d in await self.list(guild_id) if d.id == document_id), None)
            if found is None:
                return None
            await self._db.execute("DELETE FROM documents WHERE guild_id = ? AND id = ?", (guild_id, document_id))
            remaining = await self._db.fetchone("SELECT 1 FROM documents WHERE guild_id = ? LIMIT 1", (guild_id,))
            self._changed(guild_id, present=remaining is not None)
        try:
            await asyncio.to_thread(lambda: self._vectors.get().delete([f"{document_id}-{n}" for n in range(found.passages)]))
        except Exception:  # the rows are gone, so these vectors are never read again
            log.warning("server %s: the vectors of removed document %s stay in Chroma", guild_id, document_id,
                        exc_info=True)
        return found

    async def export(self, guild_id: str) -> builtins.list[dict[str, Any]]:
        """What was added to a server, as JSON-safe dicts: each document's details and its
        passages (section and text)."""
        out = []
        for doc in await self.list(guild_id):
            rows = await self._db.fetchall(
                "SELECT section, text FROM document_passages WHERE document_id = ? ORDER BY ordinal", (doc.id,))
            out.append({"id": doc.id, "title": doc.title, "source": doc.source, "kind": doc.kind,
                        "size_bytes": doc.size_bytes, "chars": doc.chars, "added_by": doc.added_by,
                        "added_at": doc.added_at.isoformat(),
                        "passages": [{"section": r["section"], "text": r["text"]} for r in rows]})
        return out

    # -- searching ----------------------------------------------------------------------

    async def search(self, guild_id: str, query: str, *, k: int = 5, mode: str = "hybrid",
                     config: RankingConfig = DOCS_RANKING) -> builtins.list[DocHit]:
        """A server's best ``k`` passages for ``query``, best first (none for another server's);
        ``mode`` and ``config`` as `PassageIndex.search` takes them."""
        if not self.has_documents(guild_id) or not query.strip():
            return []
        index = await self._index(guild_id)
        vector = None if mode == "keyword" else (await asyncio.to_thread(self._embedder.embed, [query]))[0]
        return await asyncio.to_thread(index.search, query, vector, k=k, mode=mode, config=config)

    async def _index(self, guild_id: str) -> PassageIndex:
        if (index := self._indexes.get(guild_id)) is not None:
            self._indexes.move_to_end(guild_id)
            return index
        changes = self._changes.get(guild_id, 0)
        rows = await self._db.fetchall(
            "SELECT p.document_id, p.ordinal, p.section, p.text, d.title FROM document_passages p "
            "JOIN documents d ON d.id = p.document_id WHERE p.guild_id = ? ORDER BY p.document_id, p.ordinal",
            (guild_id,))
        # the vectors of the passages SQLite knows (of this server only), by id, a page per read
        wanted = [f"{r['document_id']}-{r['ordinal']}" for r in rows]
        pages = [await asyncio.to_thread(lambda at=at: self._vectors.get().get_with_embeddings(
                     where=None, ids=wanted[at:at + READ_PAGE])) for at in range(0, len(wanted), READ_PAGE)]
        index = await asyncio.to_thread(_built, rows, pages)  # tokenizes every passage: not on the event loop
        if self._changes.get(guild_id, 0) != changes:  # added or removed meanwhile: serve it, never keep it
            return index
        self._indexes[guild_id] = index
        while len(self._indexes) > self._cached_servers:
            self._indexes.popitem(last=False)
        return index

    async def close(self) -> None:
        """Release the Chroma client (stop its child), if it was opened."""
        await asyncio.to_thread(self._vectors.close)


def _passages_of(data: bytes, kind: str, limits: DocumentLimits) -> tuple[int, list[Passage]]:
    """A document's characters of text and its passages; DocumentRefused when it is unreadable
    or holds more text than a document may."""
    sections = extract(data, kind)
    chars = sum(len(s.text) for s in sections)
    if chars > limits.max_document_chars:
        raise DocumentRefused(f"That document holds {chars:,} characters of text; the limit is "
                              f"{limits.max_document_chars:,} per document.")
    return chars, split_passages(sections, max_chars=limits.passage_chars)


def _built(rows: list[Any], pages: list[tuple[list[StoredItem], np.ndarray]]) -> PassageIndex:
    """The index of a server's passages (SQLite rows) that have their vector (in ``pages`` as
    Chroma read them); a passage without one (a lost write) is left out, not guessed."""
    vectors = {item.id: matrix[n] for items, matrix in pages for n, item in enumerate(items)}
    passages, kept = [], []
    for r in rows:
        pid = f"{r['document_id']}-{r['ordinal']}"
        if pid in vectors:
            passages.append(IndexedPassage(pid, r["document_id"], r["title"], r["section"], r["text"]))
            kept.append(vectors[pid])
    dimension = len(kept[0]) if kept else 0
    return PassageIndex(passages, np.asarray(kept, np.float32).reshape(len(kept), dimension))


def open_server_documents(db: Database, embedder: Embedder, *, path: str | Path | None,
                          host: str | None = None, port: int | None = None, auth_token: str | None = None,
                          limits: DocumentLimits | None = None, chroma_process: bool = False,
                          op_timeout_s: float = 30.0) -> ServerDocuments:
    """The documents store over ``db`` and the Chroma folder ``path`` (or the server at
    ``host``:``port``). With ``chroma_process`` an embedded folder runs in a child process
    (`memory.semantic.chroma_process.ChromaProcess`, started by the first add or search that
    needs the vectors; a call not answered within ``op_timeout_s`` fails with StoreUnavailable),
    so that its work never holds the event loop. Blocking (opens Chroma): call it in a worker
    thread; then `load()`."""
    dimension = getattr(embedder, "known_dimension", None) if hasattr(embedder, "known_dimension") \
        else embedder.dimension
    options: dict[str, Any] = {"path": path, "host": host, "port": port, "collection": COLLECTION,
                               "embedder_name": embedder.name, "dimension": dimension, "auth_token": auth_token}
    if chroma_process and not host:  # the child starts with the first add or search
        vectors = VectorsOnFirstUse(lambda: ChromaProcess.open(call_timeout_s=op_timeout_s, **options))
    else:
        vectors = VectorsOnFirstUse.opened(ChromaStore.open(**options))
    return ServerDocuments(db, vectors, embedder, limits=limits)
