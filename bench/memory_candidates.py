"""The per-user memory designs the memory bench compares, behind one small async interface.

Each candidate stores a person's items and answers `search(user, query, scope)` with the ids of
the nearest items, embedding the query with the real model (the embedding is part of the
search's time). Blocking work (the model, Chroma) runs in worker threads, as the bot runs it.

- `engine`: the project's `memory.semantic` through its contract (`open_user_memory` with the
  bot's default settings under a data folder, plus those the JSON object in the environment
  variable `SETTINGS_VAR` names; `add`, `add_many`, `search`, `close`): whichever engine the
  worker's PYTHONPATH imports (today's on main, or a new one).
- `per-person`: Chroma's own HNSW, one collection per person; a search is one `query` of the
  person's collection (`where` on the scope when the search has one).
- `per-scope`: one collection per person and scope, so that a scoped search needs no filter
  (an unscoped one queries each of the person's collections and merges by distance);
- `shared`: one collection for everyone; a search filters with `where` on a small `user` key
  (and the scope); `search_unfiltered` is the same query with no filter at all, the floor a
  filter adds to (its hits are anyone's: not a design, a reference).

Every Chroma query asks for `N_RESULTS` hits: the candidates a hybrid ranking would fuse with
the keyword side's, as the engine's own ranking does.
"""

from __future__ import annotations

import asyncio
import json
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Protocol

import numpy as np

N_RESULTS = 50
SETTINGS_VAR = "MEMORY_BENCH_SETTINGS"  # memory settings of the engine candidate (a JSON object)


class Candidate(Protocol):
    label: str

    async def open(self, folder: Path) -> None:
        """Open (or reopen) the store kept in `folder`."""

    async def bulk(self, items: list[tuple[str, str, str]], vectors: np.ndarray) -> None:
        """Store many (person, text, scope) items, whose vectors are already known."""

    async def add(self, user: str, text: str, scope: str) -> None:
        """Store one item, embedding it (what the bot does once per turn)."""

    async def search(self, user: str, query: str, scope: str | None) -> list[str]:
        """The texts of the person's nearest items, best first (the query embedded here)."""

    async def close(self) -> None:
        """Let go of the store (a later `open` is a cold start)."""


class KnownVectors:
    """The real embedder, answering texts whose vectors the bench already has from its table.

    Only the engine candidate needs it: its `add_many` embeds inside; every other text (queries,
    single adds) runs the model."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.known: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        if texts and all(t in self.known for t in texts):
            return np.stack([self.known.pop(t) for t in texts])
        return self.inner.embed(texts)


class EngineCandidate:
    """The project's memory engine, through `memory.semantic`'s contract."""

    label = "engine"

    def __init__(self, embedder: Any) -> None:
        self.embedder = KnownVectors(embedder)
        self.memory: Any = None

    async def open(self, folder: Path) -> None:
        from memory.config import load_memory_settings
        from memory.semantic import open_user_memory

        settings = load_memory_settings({**json.loads(os.environ.get(SETTINGS_VAR) or "{}"), "DATA_DIR": str(folder)})
        self.memory = await asyncio.to_thread(open_user_memory, settings=settings, embedder=self.embedder)

    async def bulk(self, items: list[tuple[str, str, str]], vectors: np.ndarray) -> None:
        self.embedder.known.update((text, vector) for (_, text, _), vector in zip(items, vectors, strict=True))
        rows = [(user, text, {"kind": "exchange"}, scope) for user, text, scope in items]
        if hasattr(self.memory, "add_many"):
            await self.memory.add_many(rows)
        else:
            for row in rows:
                await self.memory.add(*row)

    async def add(self, user: str, text: str, scope: str) -> None:
        await self.memory.add(user, text, {"kind": "exchange"}, scope)

    async def search(self, user: str, query: str, scope: str | None) -> list[str]:
        return [hit.text for hit in await self.memory.search(user, query, k=5, scope=scope)]

    async def close(self) -> None:
        if self.memory is not None:
            await self.memory.close()
            self.memory = None


class _Chroma(ABC):
    """What both Chroma candidates share: the embedded client and the blocking calls."""

    label = ""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.client: Any = None
        self.collections: dict[str, Any] = {}
        self.added = 0

    async def open(self, folder: Path) -> None:
        import chromadb
        from chromadb.config import Settings

        self.client = await asyncio.to_thread(chromadb.PersistentClient, path=str(folder / "chroma"),
                                              settings=Settings(anonymized_telemetry=False))

    def _collection(self, name: str) -> Any:
        collection = self.collections.get(name)
        if collection is None:
            collection = self.client.get_or_create_collection(name, metadata={"hnsw:space": "cosine"},
                                                              embedding_function=None)
            self.collections[name] = collection
        return collection

    def _put(self, name: str, items: list[tuple[str, str, str]], vectors: np.ndarray) -> None:
        ids = [f"{user}-{self.added + n}" for n, (user, _, _) in enumerate(items)]
        self.added += len(items)
        texts = [text for _, text, _ in items]
        metadatas = [{"user": user, "scope": scope} for user, _, scope in items]
        collection = self._collection(name)
        step = self.client.get_max_batch_size()
        for start in range(0, len(ids), step):
            end = start + step
            collection.add(ids=ids[start:end], documents=texts[start:end], metadatas=metadatas[start:end],
                           embeddings=vectors[start:end])

    def _query(self, name: str, query: str, where: dict[str, Any] | None) -> list[str]:
        vector = self.embedder.embed([query])
        found = self._collection(name).query(query_embeddings=vector, n_results=N_RESULTS, where=where,
                                             include=["documents"])
        return found["documents"][0][:5]

    @abstractmethod
    def _name(self, user: str, scope: str) -> str:
        """The collection that holds ``user``'s items said in ``scope``."""

    @abstractmethod
    def _where(self, user: str, scope: str | None) -> dict[str, Any] | None:
        """The filter a search of ``user`` (in ``scope``) needs in that collection, if any."""

    async def bulk(self, items: list[tuple[str, str, str]], vectors: np.ndarray) -> None:
        """One call per collection: the items of each person, or everyone's at once."""
        by_name: dict[str, list[int]] = {}
        for n, (user, _, scope) in enumerate(items):
            by_name.setdefault(self._name(user, scope), []).append(n)
        for name, rows in by_name.items():
            await asyncio.to_thread(self._put, name, [items[n] for n in rows], vectors[rows])

    async def add(self, user: str, text: str, scope: str) -> None:
        def add() -> None:
            self._put(self._name(user, scope), [(user, text, scope)], self.embedder.embed([text]))

        await asyncio.to_thread(add)

    async def search(self, user: str, query: str, scope: str | None) -> list[str]:
        name = self._name(user, scope or "")
        return await asyncio.to_thread(self._query, name, query, self._where(user, scope))

    async def close(self) -> None:
        from chromadb.api.shared_system_client import SharedSystemClient

        self.collections.clear()
        self.client = None
        SharedSystemClient.clear_system_cache()  # the next open builds a new client from the folder


class PerPerson(_Chroma):
    """One Chroma collection per person."""

    label = "per-person"

    def _name(self, user: str, scope: str) -> str:
        return f"u{user}"

    def _where(self, user: str, scope: str | None) -> dict[str, Any] | None:
        return {"scope": scope} if scope is not None else None


class PerScope(_Chroma):
    """One Chroma collection per person and scope (a guild, or DMs): a scoped search queries one
    collection with no filter; an unscoped one queries each of the person's and keeps the nearest."""

    label = "per-scope"

    def __init__(self, embedder: Any) -> None:
        super().__init__(embedder)
        self.scopes: dict[str, set[str]] = {}

    def _name(self, user: str, scope: str) -> str:
        self.scopes.setdefault(user, set()).add(scope)
        return f"u{user}-{scope.replace(':', '-')}"

    def _where(self, user: str, scope: str | None) -> dict[str, Any] | None:
        return None  # the collection is the scope

    def _nearest(self, user: str, query: str, scopes: list[str]) -> list[str]:
        vector = self.embedder.embed([query])
        found: list[tuple[float, str]] = []
        for scope in scopes:
            got = self._collection(self._name(user, scope)).query(
                query_embeddings=vector, n_results=N_RESULTS, include=["documents", "distances"])
            found += zip(got["distances"][0], got["documents"][0], strict=True)
        return [text for _, text in sorted(found)[:5]]

    async def search(self, user: str, query: str, scope: str | None) -> list[str]:
        scopes = [scope] if scope is not None else sorted(self.scopes.get(user, ()))
        return await asyncio.to_thread(self._nearest, user, query, scopes)


class Shared(_Chroma):
    """One Chroma collection for everyone, filtered by `where` on the person."""

    label = "shared"

    def _name(self, user: str, scope: str) -> str:
        return "memory"

    def _where(self, user: str, scope: str | None) -> dict[str, Any] | None:
        return {"$and": [{"user": user}, {"scope": scope}]} if scope is not None else {"user": user}

    async def search_unfiltered(self, query: str) -> list[str]:
        return await asyncio.to_thread(self._query, "memory", query, None)


CANDIDATES = {"engine": EngineCandidate, "per-person": PerPerson, "per-scope": PerScope, "shared": Shared}
