"""The ChromaDB seam of the semantic memory: open a collection, and translate failures.

`ChromaStore` wraps one collection of an embedded `PersistentClient` (a folder) or of a
Chroma server (`HttpClient`, host:port). Its methods are blocking (callers run them in a
worker thread) and take embeddings explicitly: Chroma's default embedding function, which
downloads a model, is never used. Storage failures (folder unusable, server down or gone,
HTTP timeouts) are raised as `StoreUnavailable` naming the folder or host:port; the
original error is chained.

Knows nothing of users or scopes: `memory.semantic` builds the filters. There is no query
method on purpose: a metadata-filtered HNSW query is slower than reading one user's items
with their vectors and searching them in this process (see memory.semantic). `log()` opens
the sibling collection that `memory.semantic.versions` keeps its records in; `delete_siblings()`
removes the ones an older version left.
Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
import os
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

__all__ = ["ChromaStore", "StoredItem"]

log = logging.getLogger(__name__)

DEFAULT_HTTP_TIMEOUT_S = 10.0


class StoredItem(NamedTuple):
    """One item as Chroma returns it (without its embedding). A tuple: a user's snapshot makes
    tens of thousands of them at once (`memory.semantic.snapshot`)."""

    id: str
    text: str
    metadata: dict[str, Any]


def _client_settings(auth_token: str | None = None) -> Settings:
    """The client's settings; with ``auth_token``, chromadb's own token provider sends it as
    "Authorization: Bearer <token>" (what its TokenAuthenticationServerProvider checks)."""
    if not auth_token:
        return Settings(anonymized_telemetry=False, allow_reset=False)
    return Settings(anonymized_telemetry=False, allow_reset=False,
                    chroma_client_auth_provider="chromadb.auth.token_authn.TokenAuthClientProvider",
                    chroma_client_auth_credentials=auth_token)


class ChromaStore:
    """One Chroma collection, with every failure translated to StoreUnavailable."""

    def __init__(self, client: Any, collection: Any, where: str) -> None:
        self._client = client
        self._collection = collection
        self.where = where

    @property
    def name(self) -> str:
        return str(self._collection.name)

    def log(self, suffix: str) -> ChromaStore:
        """The collection named after this one plus `suffix`, on the same client (created if
        missing): records without meaningful vectors, such as the version records."""
        with self._translating(self.where, "open the log collection of"):
            col = self._client.get_or_create_collection(name=self.name + suffix, embedding_function=None,
                                                        metadata={"purpose": "log of " + self.name})
        return ChromaStore(self._client, col, self.where)

    def delete_siblings(self, suffixes: Sequence[str]) -> list[str]:
        """Delete the collections named after this one plus each of `suffixes` that exist;
        returns the names deleted."""
        deleted = []
        for name in (self.name + suffix for suffix in suffixes):
            with self._translating(self.where, "delete a collection of"):
                try:
                    self._client.delete_collection(name)
                except NotFoundError:
                    continue
            deleted.append(name)
        return deleted

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, *, path: str | os.PathLike[str] | None, host: str | None, port: int | None,
             collection: str, embedder_name: str, dimension: int | None,
             http_timeout_s: float = DEFAULT_HTTP_TIMEOUT_S, auth_token: str | None = None) -> ChromaStore:
        """Connect (server) or open the folder (embedded) and get or create the collection.

        The collection records the embedder's name (and dimension when known); reopening it
        with another model raises ConfigError instead of mixing incomparable vectors.
        ``auth_token`` is sent to a server (CHROMA_AUTH_TOKEN); a folder needs none.
        """
        if host:
            where = f"Chroma server {host}:{port or 8000}"
            with cls._translating(where, "connect"):
                try:
                    client = chromadb.HttpClient(host=host, port=int(port or 8000),
                                                  settings=_client_settings(auth_token))
                except ValueError as exc:  # chromadb's "Could not connect to a Chroma server"
                    raise StoreUnavailable(f"{where} is unreachable: {exc}") from exc
                cls._set_http_timeout(client, http_timeout_s)
        else:
            if path is None:
                raise ConfigError("semantic memory needs a Chroma folder (DATA_DIR) or CHROMA_HOST")
            folder = Path(path)
            where = f"Chroma folder {str(folder)!r}"
            cls._check_folder(folder, where)
            with cls._translating(where, "open"):
                client = chromadb.PersistentClient(path=str(folder), settings=_client_settings())
        metadata: dict[str, Any] = {"hnsw:space": "cosine", "embedder": embedder_name}
        if dimension is not None:
            metadata["dimension"] = int(dimension)
        with cls._translating(where, "open the collection of"):
            col = client.get_or_create_collection(name=collection, metadata=metadata, embedding_function=None)
        meta = col.metadata or {}
        same_dimension = dimension is None or meta.get("dimension") in (None, int(dimension))
        if meta.get("embedder") not in (None, embedder_name) or not same_dimension:
            raise ConfigError(
                f"EMBEDDING_MODEL: collection {collection!r} in {where} holds vectors of "
                f"{meta.get('embedder')!r} ({meta.get('dimension')} dimensions), not of "
                f"{embedder_name!r} ({dimension}); use another collection name or the same model"
            )
        space = meta.get("hnsw:space", "l2")
        if space != "cosine":
            raise ConfigError(f"collection {collection!r} in {where} uses {space!r} distance, not cosine")
        log.info("semantic memory: collection %r in %s", collection, where)
        return cls(client, col, where)

    @staticmethod
    def _check_folder(folder: Path, where: str) -> None:
        if folder.exists() and not folder.is_dir():
            raise StoreUnavailable(f"{where} cannot be used: it is not a directory")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"{where} cannot be created: {exc.strerror or exc}") from exc
        if not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
            raise StoreUnavailable(f"{where} is not readable and writable by this process")

    @staticmethod
    def _set_http_timeout(client: Any, timeout_s: float) -> None:
        # chromadb's HTTP client builds its httpx session with timeout=None, so a server that
        # stops answering would block a worker thread forever; bound it where the session is
        # reachable (user_memory.py also bounds every call on the event-loop side).
        session = getattr(getattr(client, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):
            session.timeout = httpx.Timeout(timeout_s)

    @staticmethod
    @contextmanager
    def _translating(where: str, action: str) -> Iterator[None]:
        try:
            yield
        except (StoreUnavailable, ConfigError, InvalidArgumentError):
            raise
        except (httpx.HTTPError, OSError, ChromaError) as exc:
            raise StoreUnavailable(f"cannot {action} {where}: {type(exc).__name__}: {exc}") from exc

    # -- items -----------------------------------------------------------------------------

    def add(self, ids: Sequence[str], embeddings: Sequence[Sequence[float]] | np.ndarray, documents: Sequence[str],
            metadatas: Sequence[Mapping[str, Any]]) -> None:
        with self._translating(self.where, "write to"):
            self._collection.add(ids=list(ids), embeddings=np.asarray(embeddings, np.float32).tolist(),
                                 documents=list(documents), metadatas=[dict(m) for m in metadatas])

    def upsert(self, ids: Sequence[str], documents: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None:
        """Write records without meaningful vectors (a log's), replacing any of the same ids."""
        with self._translating(self.where, "write to"):
            self._collection.upsert(ids=list(ids), embeddings=[[0.0]] * len(ids), documents=list(documents),
                                    metadatas=[dict(m) for m in metadatas])

    def get(self, *, where: Mapping[str, Any], ids: Sequence[str] | None = None) -> list[StoredItem]:
        """All items matching `where` (and `ids` when given), in no particular order."""
        return self.get_with_embeddings(where=where, ids=ids, embeddings=False)[0]

    def ids(self, *, where: Mapping[str, Any]) -> list[str]:
        """The ids of the items matching `where` (nothing else read)."""
        with self._translating(self.where, "read from"):
            return list(self._collection.get(where=dict(where), include=[])["ids"])

    def get_with_embeddings(self, *, where: Mapping[str, Any] | None, ids: Sequence[str] | None = None,
                            embeddings: bool = True) -> tuple[list[StoredItem], np.ndarray]:
        """Items matching `where` (None: any) and their embeddings as a float32 matrix (row i =
        item i). Give `ids` without `where` for more than a few ids: Chroma's plan for both
        together grows badly with the number of ids."""
        include = ["documents", "metadatas", "embeddings"] if embeddings else ["documents", "metadatas"]
        with self._translating(self.where, "read from"):
            res = self._collection.get(ids=list(ids) if ids is not None else None, where=dict(where) if where else None,
                                       include=include)
        count = len(res["ids"])
        docs = res.get("documents") or [""] * count
        metas = res.get("metadatas") or [{}] * count
        items = [StoredItem(i, d or "", dict(m or {})) for i, d, m in zip(res["ids"], docs, metas, strict=True)]
        vectors = res.get("embeddings") if embeddings else None
        if vectors is None or not count:
            return items, np.zeros((0, 0), np.float32)
        return items, np.asarray(vectors, dtype=np.float32)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._translating(self.where, "delete from"):
            self._collection.delete(ids=list(ids))

    def close(self) -> None:
        """Release the client: chromadb keeps every embedded folder's system (its SQLite
        connections and HNSW files, open) in a process-wide cache until its last client closes.
        Its Rust bindings close the folder's files a few milliseconds after this returns."""
        with self._translating(self.where, "close"):
            self._client.close()

    def max_batch_size(self) -> int:
        with self._translating(self.where, "ask the batch size of"):
            return int(self._client.get_max_batch_size())
