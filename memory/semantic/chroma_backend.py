"""The ChromaDB seam of the semantic memory: a collection per person and scope, failures translated.

`connect` builds the client (an embedded `PersistentClient` on a folder, or an `HttpClient` for
a Chroma server); `ChromaStore` holds it and gives each scope of each person its own
collection, named `<prefix>.<digest of the user id>.<digest of the scope>`, so that a search is
Chroma's own HNSW over only the items it may return, with no `where` filter (a filter on the
scope or the person was 10-30 times slower at 50,000 items: docs/decisions/0024-memory-engine.md).
The collection named `<prefix>` is the directory: one record per person and scope (a vector of
one dimension, never searched), so that every process can list a person's scopes; its metadata
records the embedding model, so that opening the memory with another model fails instead of
mixing incomparable vectors.

Methods are blocking (callers run them in worker threads) and take embeddings explicitly:
Chroma's default embedding function, which downloads a model, is never used. Storage failures
(folder unusable, server down or gone, HTTP timeouts) are raised as `StoreUnavailable` naming
the folder or host:port, the original error chained. Knows nothing of ranking.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import chromadb
import httpx
import numpy as np
from chromadb.config import Settings
from chromadb.errors import ChromaError, InvalidArgumentError, NotFoundError

from memory.errors import ConfigError, StoreUnavailable

__all__ = ["ChromaStore", "Neighbour", "StoredItem", "connect"]

log = logging.getLogger(__name__)

DEFAULT_HTTP_TIMEOUT_S = 10.0
# Each person's collection: cosine distance; a search breadth above the memory's widest dense
# candidate list (10 k, k <= 20), so that the approximate search keeps near-exact candidates.
PERSON_METADATA = {"hnsw:space": "cosine", "hnsw:search_ef": 200}


class StoredItem(NamedTuple):
    """One item as Chroma returns it (without its embedding)."""

    id: str
    text: str
    metadata: dict[str, Any]


class Neighbour(NamedTuple):
    """One item of a nearest-neighbour search, with its cosine similarity to the query."""

    item: StoredItem
    similarity: float


def connect(*, path: str | os.PathLike[str] | None, host: str | None, port: int | None,
            http_timeout_s: float = DEFAULT_HTTP_TIMEOUT_S) -> tuple[Any, str]:
    """(client, where): a Chroma server's client when `host` is set, else the embedded client
    on the folder `path`; `where` names it for messages. Raises StoreUnavailable or ConfigError."""
    if host:
        where = f"Chroma server {host}:{port or 8000}"
        with _translating(where, "connect"):
            try:
                client = chromadb.HttpClient(host=host, port=int(port or 8000), settings=_client_settings())
            except ValueError as exc:  # chromadb's "Could not connect to a Chroma server"
                raise StoreUnavailable(f"{where} is unreachable: {exc}") from exc
        # chromadb's HTTP client builds its httpx session with timeout=None, so a server that
        # stops answering would block a worker thread forever: bound it where it is reachable
        session = getattr(getattr(client, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):
            session.timeout = httpx.Timeout(http_timeout_s)
        return client, where
    if path is None:
        raise ConfigError("semantic memory needs a Chroma folder (DATA_DIR) or CHROMA_HOST")
    folder = Path(path)
    where = f"Chroma folder {str(folder)!r}"
    _check_folder(folder, where)
    with _translating(where, "open"):
        return chromadb.PersistentClient(path=str(folder), settings=_client_settings()), where


def _client_settings() -> Settings:
    return Settings(anonymized_telemetry=False, allow_reset=False)


def _check_folder(folder: Path, where: str) -> None:
    if folder.exists() and not folder.is_dir():
        raise StoreUnavailable(f"{where} cannot be used: it is not a directory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailable(f"{where} cannot be created: {exc.strerror or exc}") from exc
    if not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
        raise StoreUnavailable(f"{where} is not readable and writable by this process")


@contextmanager
def _translating(where: str, action: str) -> Iterator[None]:
    try:
        yield
    except (StoreUnavailable, ConfigError, InvalidArgumentError, NotFoundError):
        raise
    except (httpx.HTTPError, OSError, ChromaError) as exc:
        raise StoreUnavailable(f"cannot {action} {where}: {type(exc).__name__}: {exc}") from exc


def _items(ids: Sequence[str], docs: Sequence[str | None] | None,
           metas: Sequence[Mapping[str, Any] | None] | None) -> list[StoredItem]:
    docs = docs or [None] * len(ids)
    metas = metas or [None] * len(ids)
    return [StoredItem(i, d or "", dict(m or {})) for i, d, m in zip(ids, docs, metas, strict=True)]


class ChromaStore:
    """A Chroma client on which each person has a collection per scope; every failure is
    StoreUnavailable. A person's scopes are listed in the directory collection.

    Collections are looked up once and kept; one that another process deleted (a forget) is
    looked up again on the next call, and a scope without one reads as having no items."""

    def __init__(self, client: Any, where: str, prefix: str, directory: Any) -> None:
        self._client = client
        self._directory = directory
        self.where = where
        self.prefix = prefix
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, *, path: str | os.PathLike[str] | None, host: str | None, port: int | None,
             collection: str, embedder_name: str, dimension: int | None,
             http_timeout_s: float = DEFAULT_HTTP_TIMEOUT_S) -> ChromaStore:
        """Connect, and check (or record) the embedding model in the collection `collection`."""
        client, where = connect(path=path, host=host, port=port, http_timeout_s=http_timeout_s)
        metadata: dict[str, Any] = {"embedder": embedder_name}
        if dimension is not None:
            metadata["dimension"] = int(dimension)
        with _translating(where, "open the collection of"):
            col = client.get_or_create_collection(name=collection, metadata=metadata, embedding_function=None)
        meta = col.metadata or {}
        same_dimension = dimension is None or meta.get("dimension") in (None, int(dimension))
        if meta.get("embedder") not in (None, embedder_name) or not same_dimension:
            raise ConfigError(
                f"EMBEDDING_MODEL: collection {collection!r} in {where} holds vectors of "
                f"{meta.get('embedder')!r} ({meta.get('dimension')} dimensions), not of "
                f"{embedder_name!r} ({dimension}); use another collection name or the same model"
            )
        log.info("semantic memory: collections %r.* in %s", collection, where)
        return cls(client, where, collection, col)

    # -- collections -----------------------------------------------------------------------

    def _name(self, user_id: str, scope: str | None) -> str:
        """The person's name in the directory (scope None), or the name of their scope's collection:
        digests, so that any id makes a valid name."""
        person = f"{self.prefix}.{hashlib.sha256(user_id.encode()).hexdigest()[:32]}"
        return person if scope is None else f"{person}.{hashlib.sha256(scope.encode()).hexdigest()[:16]}"

    def _collection(self, name: str, *, create: bool) -> Any | None:
        with self._lock:
            col = self._collections.get(name)
        if col is not None:
            return col
        with _translating(self.where, "open a collection of"):
            if create:
                col = self._client.get_or_create_collection(name=name, metadata=PERSON_METADATA,
                                                            embedding_function=None)
            else:
                try:
                    col = self._client.get_collection(name=name, embedding_function=None)
                except (NotFoundError, ValueError):  # chromadb raises either, by version and client
                    return None
        with self._lock:
            self._collections[name] = col
        return col

    def _call(self, name: str, action: str, fn: Any, *, empty: Any = None, create: bool = False) -> Any:
        """fn(collection); a collection deleted meanwhile (another process's forget) is looked up
        once more; without one, `empty` (or it is created, with `create`)."""
        for attempt in (1, 2):
            col = self._collection(name, create=create)
            if col is None:
                return empty
            try:
                with _translating(self.where, action):
                    return fn(col)
            except (NotFoundError, InvalidArgumentError) as exc:
                gone = isinstance(exc, NotFoundError) or "does not exist" in str(exc)
                if not gone:
                    raise
                with self._lock:
                    self._collections.pop(name, None)
                if attempt == 2:
                    raise StoreUnavailable(f"cannot {action} {self.where}: {exc}") from exc
        raise AssertionError("unreachable")

    def scopes(self, user_id: str) -> list[str]:
        """The scopes the person has (or had) items in, from the directory."""
        with _translating(self.where, "read the directory of"):
            found = self._directory.get(where={"person": self._name(user_id, None)}, include=["documents"])
        return sorted(found.get("documents") or [])

    def _names(self, user_id: str, scope: str | None) -> list[str]:
        return [self._name(user_id, s) for s in ([scope] if scope is not None else self.scopes(user_id))]

    # -- items -----------------------------------------------------------------------------

    def add(self, user_id: str, scope: str, ids: Sequence[str], vectors: np.ndarray, documents: Sequence[str],
            metadatas: Sequence[Mapping[str, Any]]) -> None:
        """Write items of one scope; the scope is (again) entered in the person's directory first,
        so that a directory another process deleted meanwhile gets it back."""
        with _translating(self.where, "write the directory of"):
            self._directory.upsert(ids=[self._name(user_id, scope)], embeddings=np.ones((1, 1), np.float32),
                                   documents=[scope], metadatas=[{"person": self._name(user_id, None)}])
        self._call(self._name(user_id, scope), "write to", lambda col: col.add(
            ids=list(ids), embeddings=np.asarray(vectors, np.float32), documents=list(documents),
            metadatas=[dict(m) for m in metadatas]), create=True)

    def nearest(self, user_id: str, scope: str | None, vector: np.ndarray, n: int) -> list[Neighbour]:
        """The person's `n` items in `scope` (None: all) nearest to `vector`, nearest first."""
        def query(col: Any) -> list[Neighbour]:
            res = col.query(query_embeddings=[np.asarray(vector, np.float32)], n_results=n,
                            include=["documents", "metadatas", "distances"])
            found = _items(res["ids"][0], (res.get("documents") or [None])[0], (res.get("metadatas") or [None])[0])
            distances = (res.get("distances") or [[]])[0]
            return [Neighbour(it, 1.0 - float(d)) for it, d in zip(found, distances, strict=True)]

        merged = [hit for name in self._names(user_id, scope) for hit in self._call(name, "search", query, empty=[])]
        return sorted(merged, key=lambda hit: -hit.similarity)[:n]

    def get(self, user_id: str, scope: str | None, ids: Sequence[str] | None = None) -> list[StoredItem]:
        """The person's items in `scope` (None: all), only those with `ids` when given; unordered."""
        if ids is not None and not ids:
            return []

        def get(col: Any) -> list[StoredItem]:
            res = col.get(ids=list(ids) if ids is not None else None, include=["documents", "metadatas"])
            return _items(res["ids"], res.get("documents"), res.get("metadatas"))

        return [it for name in self._names(user_id, scope) for it in self._call(name, "read from", get, empty=[])]

    def ids(self, user_id: str, scope: str, where: Mapping[str, Any] | None = None) -> list[str]:
        """The ids of the person's items in `scope` matching `where` (None: all); nothing else is read."""
        return self._call(self._name(user_id, scope), "read from", lambda col: list(col.get(
            where=dict(where) if where else None, include=[])["ids"]), empty=[])

    def count(self, user_id: str, scope: str) -> int:
        return int(self._call(self._name(user_id, scope), "count the items of", lambda col: col.count(), empty=0))

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Delete these ids from every scope of the person (ids they do not have are ignored)."""
        if ids:
            for name in self._names(user_id, None):
                self._call(name, "delete from", lambda col: col.delete(ids=list(ids)))

    def drop(self, user_id: str, scope: str | None) -> None:
        """Delete the collection of the person's `scope` (None: all of theirs, and the directory)."""
        scopes = [scope] if scope is not None else self.scopes(user_id)
        for name in [self._name(user_id, s) for s in scopes]:
            self._drop(name)
        with _translating(self.where, "write the directory of"):
            self._directory.delete(ids=[self._name(user_id, s) for s in scopes])

    def _drop(self, name: str) -> None:
        with self._lock:
            self._collections.pop(name, None)
        with _translating(self.where, "delete a collection of"):
            try:
                self._client.delete_collection(name=name)
            except (NotFoundError, ValueError):
                pass
