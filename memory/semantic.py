"""Per-user semantic memory on ChromaDB: what each person told the bot, found by meaning.

**contract** `open_user_memory(path, **options)` returns a `UserMemory` (the call opens the
store at once, so a bad folder or a server that is down fails here with StoreUnavailable
naming the path or host:port; the result may also be awaited or used with `async with`).

Rules, in one place:
- Every Chroma read and delete is filtered by `user_id`: one user's items never appear in
  another's results, and `delete(user_id, item_id)` cannot remove someone else's item.
- Scopes: `scope_for(guild_id)` gives "guild:<id>" or "dm". `search`, `list` and `forget`
  with `scope=None` cover all of the user's items; with a scope, exactly that scope.
  `add(..., scope=None)` stores the item unscoped (scope ""): such items are found only by
  searches and lists with `scope=None` (or `scope=""`), never inside a guild or a DM.
- Text: empty or whitespace-only text (after removing invisible format characters such as
  zero-width spaces and bidi marks) is refused on add with ValueError, and a search for it
  returns []. Text longer than MAX_TEXT_CHARS (8,000 characters) is TRUNCATED at a word
  boundary, not chunked, and the item's metadata records `truncated_from` (the original
  length): a memory is one exchange, and the embedding model reads only its first 256 tokens
  anyway. Stored text keeps the caller's characters; the embedded text drops invisible
  format characters (zero-width, bidi controls) so they do not change what matches.
- User ids: any non-empty string of at most 128 characters without control characters (a
  Discord snowflake, or the console's local user); anything else is refused with ValueError
  in every method alike.
- Metadata: items record `user_id`, `scope`, `created_at` (epoch seconds from `clock`, or
  the caller's own `created_at` number, for imports and evaluations) and the caller's
  metadata (channel_id, trace_id, kind, ...), whose values must be str, int, float or bool (None is dropped, a datetime becomes ISO-8601 text); nested values, other
  types, non-finite floats and the reserved keys are refused with ValueError.
- Search: `memory.ranking` plans the query (search text, time window, recency); dense
  candidates are the top max(50, 10k) of the user's items in the scope by exact cosine
  similarity (a dot product of unit vectors), keyword scores come from a BM25 index over
  all of them, and `ranking.fuse` orders them ("hybrid" by default; "dense" and "keyword"
  baselines). Chroma stores the items and vectors; a search reads ONE user's items with
  their vectors (`where user_id`, about 20 ms at 100,000 items) instead of asking Chroma
  for a filtered nearest-neighbour query, which took 105-140 ms at that size on the 2-core
  target because its HNSW graph spans every user. Each user's items, vectors and per-scope
  BM25 indexes are cached in this process: an LRU of `cache_size` users, extended
  by this object's adds, dropped by its deletes and forgets, and reloaded after
  `cache_ttl_s` (60 s) so that writes of other processes sharing a Chroma server are seen.
- Blocking work (embedding, Chroma) runs on this object's own thread pool; each call is
  bounded by `op_timeout_s` and a store failure raises StoreUnavailable, never hangs. When
  a Chroma server goes away, writes fail at once; a search of a user whose items are
  cached is still answered from the cache (until `cache_ttl_s`), others fail.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import threading
import time
import unicodedata
import uuid
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, TypeVar

import numpy as np

from memory import ranking
from memory.chroma_backend import ChromaStore, StoredItem
from memory.config import MemorySettings
from memory.embeddings import Embedder, OpenAIEmbedder, embedder_from_settings
from memory.errors import MemoryStoreError, StoreUnavailable

__all__ = [
    "MAX_TEXT_CHARS",
    "MemoryHit",
    "UserMemory",
    "open_user_memory",
    "scope_for",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_TEXT_CHARS = 8_000
MAX_USER_ID_CHARS = 128
MAX_METADATA_KEYS = 32
MAX_METADATA_TEXT = 2_000
DEFAULT_COLLECTION = "user_memory"
DENSE_CANDIDATES = 50
WORKERS = 4  # threads for embedding and Chroma calls
SEARCH_MODES = ("hybrid", "dense", "keyword")
RESERVED_KEYS = frozenset({"user_id", "scope", "truncated_from"})
_SCOPE = re.compile(r"^(?:|dm|guild:[^\s]{1,64})$")
AddItem = tuple[str, str, "dict[str, Any] | None", "str | None"]


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One remembered item: `score` is the fused ranking score of a search (0.0 in lists)."""

    id: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


def scope_for(guild_id: str | None) -> str:
    """The scope of a place: "guild:<id>" for a guild, "dm" for direct messages (None)."""
    if guild_id is None:
        return "dm"
    if not isinstance(guild_id, str):
        raise TypeError(f"guild_id must be a str or None, not {type(guild_id).__name__}")
    if not guild_id.strip() or any(ch.isspace() for ch in guild_id):
        raise ValueError(f"guild_id must be a non-empty id without spaces: {guild_id!r}")
    return f"guild:{guild_id}"


# -- validation ----------------------------------------------------------------------------


def _check_user(user_id: str) -> str:
    if not isinstance(user_id, str):
        raise TypeError(f"user_id must be a str, not {type(user_id).__name__}")
    if not user_id.strip():
        raise ValueError("user_id must not be empty")
    if len(user_id) > MAX_USER_ID_CHARS:
        raise ValueError(f"user_id is longer than {MAX_USER_ID_CHARS} characters")
    if any(unicodedata.category(ch) == "Cc" for ch in user_id):
        raise ValueError(f"user_id contains control characters: {user_id!r}")
    return user_id


def _check_scope(scope: str | None) -> str | None:
    if scope is None:
        return None
    if not isinstance(scope, str):
        raise TypeError(f"scope must be a str or None, not {type(scope).__name__}")
    if not _SCOPE.match(scope):
        raise ValueError(f"scope must be 'dm', 'guild:<id>' or '' (unscoped), not {scope!r}; use scope_for()")
    return scope


def _visible(text: str) -> str:
    """Text without invisible format characters (zero-width, bidi controls), spaces collapsed."""
    text = unicodedata.normalize("NFC", text)
    return " ".join("".join(ch for ch in text if unicodedata.category(ch) != "Cf").split())


def _truncate(text: str) -> tuple[str, int | None]:
    if len(text) <= MAX_TEXT_CHARS:
        return text, None
    cut = text[:MAX_TEXT_CHARS]
    space = cut.rfind(" ", MAX_TEXT_CHARS - 200)
    return (cut[:space] if space > 0 else cut).rstrip(), len(text)


def _check_text(text: str) -> tuple[str, str, int | None]:
    """(stored text, embedded text, original length if truncated); ValueError if blank."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    stored, original = _truncate(text)
    embedded = _visible(stored)
    if not embedded:
        raise ValueError("text is empty or only whitespace / invisible characters; nothing stored")
    return stored, embedded, original


def _check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, str | int | float | bool]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping, not {type(metadata).__name__}")
    if len(metadata) > MAX_METADATA_KEYS:
        raise ValueError(f"metadata has more than {MAX_METADATA_KEYS} keys")
    out: dict[str, str | int | float | bool] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"metadata keys must be non-empty strings: {key!r}")
        if key in RESERVED_KEYS:
            raise ValueError(f"metadata key {key!r} is reserved (set by the memory itself)")
        if value is None:
            continue
        if isinstance(value, (bool, int, str)):
            if isinstance(value, str) and len(value) > MAX_METADATA_TEXT:
                raise ValueError(f"metadata[{key!r}] is longer than {MAX_METADATA_TEXT} characters")
            out[key] = value
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"metadata[{key!r}] must be a finite number, not {value!r}")
            out[key] = value
        elif isinstance(value, (datetime, date)):
            out[key] = value.isoformat()
        elif isinstance(value, (Mapping, list, tuple, set, frozenset)):
            raise ValueError(
                f"metadata[{key!r}] is a nested {type(value).__name__}; values must be str, int, float or bool"
            )
        else:
            raise ValueError(
                f"metadata[{key!r}] is a {type(value).__name__}; values must be str, int, float or bool"
            )
    return out


def _where(user_id: str, scope: str | None) -> dict[str, Any]:
    if scope is None:
        return {"user_id": user_id}
    return {"$and": [{"user_id": user_id}, {"scope": scope}]}


def _created(item: StoredItem) -> float:
    value = item.metadata.get("created_at")
    return float(value) if isinstance(value, (int, float)) else 0.0


# -- the per-user cache --------------------------------------------------------------------


@dataclass(slots=True)
class _ScopeView:
    """A user's items in one scope: ids, their vectors (rows) and the BM25 index over them."""

    ids: list[str]
    matrix: np.ndarray
    index: ranking.KeywordIndex


@dataclass(slots=True)
class _UserItems:
    """All of one user's items and their vectors, replaced (never edited) on a write; only `views`
    fills in, one scope view at a time, as searches ask for them."""

    version: int
    loaded_at: float
    items: dict[str, StoredItem]
    ids: list[str]
    matrix: np.ndarray                      # row i: the unit vector of items[ids[i]]
    views: dict[str | None, _ScopeView] = field(default_factory=dict)

    def view(self, scope: str | None) -> _ScopeView:
        """The scope's items (None = all) with their vectors and BM25 index (worker thread)."""
        found = self.views.get(scope)
        if found is not None:
            return found
        rows = [n for n, i in enumerate(self.ids) if scope is None or self.items[i].metadata.get("scope") == scope]
        ids = [self.ids[n] for n in rows]
        matrix = self.matrix[rows] if rows else np.zeros((0, 0), np.float32)
        view = _ScopeView(ids, matrix, ranking.KeywordIndex([(i, _visible(self.items[i].text)) for i in ids]))
        self.views[scope] = view
        return view

    def plus(self, added: Sequence[StoredItem], vectors: np.ndarray, version: int) -> _UserItems:
        """A new entry with `added` (and their vectors) appended."""
        items = {**self.items, **{it.id: it for it in added}}
        matrix = np.vstack([self.matrix, vectors]) if len(self.ids) else vectors
        return _UserItems(version, self.loaded_at, items, self.ids + [it.id for it in added], matrix)


class _RecentVectors:
    """The vectors of the last few search queries, by embedded text (thread-safe LRU).

    A turn searches memory with the person's message and then stores that same message: the
    add reuses the query's vector instead of running the model a second time. Texts are keyed
    by `ranking.search_form` (spaces folded, end punctuation trimmed, as plan_query does), so
    "Where to?" stored after searching "Where to?" hits; the vector is the search form's.
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        key = ranking.search_form(text)
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
            return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        key = ranking.search_form(text)
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)


class UserMemory:
    """A user-partitioned memory over one Chroma collection. Create with open_user_memory."""

    def __init__(self, store: ChromaStore, embedder: Embedder, *, search_mode: str = "hybrid",
                 clock: Callable[[], float] = time.time, op_timeout_s: float = 30.0,
                 cache_size: int = 256, cache_ttl_s: float = 60.0, owns_embedder: bool = False,
                 preload: bool = True) -> None:
        if search_mode not in SEARCH_MODES:
            raise ValueError(f"search_mode must be one of {', '.join(SEARCH_MODES)}: {search_mode!r}")
        self._store = store
        self._embedder = embedder
        self.search_mode = search_mode
        self._clock = clock
        self._op_timeout_s = op_timeout_s
        self._cache: OrderedDict[str, _UserItems] = OrderedDict()
        self._cache_size = max(1, cache_size)
        self._cache_ttl_s = cache_ttl_s
        self._versions: dict[str, int] = {}
        self._owns_embedder = owns_embedder
        self._executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="user-memory")
        self._recent_vectors = _RecentVectors()
        self._closed = False
        self._batch = min(256, store.max_batch_size())
        load = getattr(embedder, "load", None)
        self._loading: Future[None] | None = self._executor.submit(load) if preload and callable(load) else None

    @property
    def where(self) -> str:
        """The folder or host:port this memory lives in (for messages and logs)."""
        return self._store.where

    # -- lifecycle -----------------------------------------------------------------------

    def __await__(self) -> Generator[Any, None, UserMemory]:
        async def ready() -> UserMemory:
            return self
        return ready().__await__()

    async def __aenter__(self) -> UserMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the worker threads; idempotent. A shared embedder passed in is left open."""
        if self._closed:
            return
        self._closed = True
        self._cache.clear()
        # a worker may be waiting on a frozen server (up to http_timeout_s): wait off the loop
        await asyncio.to_thread(self._executor.shutdown, wait=True, cancel_futures=True)
        if self._owns_embedder and isinstance(self._embedder, OpenAIEmbedder):
            self._embedder.close()

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise MemoryStoreError("this user memory is closed")
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(loop.run_in_executor(self._executor, fn, *args), self._op_timeout_s)
        except TimeoutError:
            raise StoreUnavailable(f"{self.where} did not answer within {self._op_timeout_s:g} s") from None

    async def _embedder_ready(self) -> None:
        if self._loading is not None:
            await asyncio.wrap_future(self._loading)
            self._loading = None

    def _touched(self, user_id: str, added: Sequence[StoredItem] = (), vectors: np.ndarray | None = None) -> None:
        """A write of `user_id` ended: a current cache entry takes in what was `added`;
        otherwise (a delete, a failure, an entry already stale) the entry is dropped."""
        old = self._versions.get(user_id, 0)
        self._versions[user_id] = old + 1
        entry = self._cache.get(user_id)
        if entry is None:
            return
        if added and vectors is not None and entry.version == old:
            self._cache[user_id] = entry.plus(added, vectors, old + 1)
        else:
            del self._cache[user_id]

    # -- writing -------------------------------------------------------------------------

    def _prepare(self, user_id: str, text: str, metadata: Mapping[str, Any] | None,
                 scope: str | None, now: float) -> tuple[str, str, str, dict[str, Any]]:
        _check_user(user_id)
        scope = _check_scope(scope)
        stored, embedded, original = _check_text(text)
        meta: dict[str, Any] = _check_metadata(metadata)
        created = meta.get("created_at", now)
        if isinstance(created, bool) or not isinstance(created, (int, float)):
            raise ValueError(f"metadata['created_at'] must be epoch seconds, not {created!r}")
        meta.update(user_id=user_id, scope=scope or "", created_at=float(created))
        if original is not None:
            meta["truncated_from"] = original
        return uuid.uuid4().hex, stored, embedded, meta

    def _embed_and_add(self, rows: list[tuple[str, str, str, dict[str, Any]]]) -> np.ndarray:
        texts = [r[2] for r in rows]
        known = [self._recent_vectors.get(t) for t in texts]
        missing = [t for t, v in zip(texts, known, strict=True) if v is None]
        fresh = iter(np.asarray(self._embedder.embed(missing), dtype=np.float32) if missing else ())
        vectors = np.vstack([v if v is not None else next(fresh) for v in known])
        self._store.add([r[0] for r in rows], vectors.tolist(), [r[1] for r in rows], [r[3] for r in rows])
        return vectors

    async def add(self, user_id: str, text: str, metadata: dict[str, Any] | None = None,
                  scope: str | None = None) -> str:
        """Remember `text` for `user_id` in `scope` (None = unscoped ""); returns the item id."""
        row = self._prepare(user_id, text, metadata, scope, self._clock())
        await self._write([row])
        return row[0]

    async def add_many(self, items: Sequence[AddItem]) -> list[str]:
        """Add (user_id, text, metadata, scope) items, embedded and written in batches.

        Every item is validated first (a bad one raises ValueError naming its index and
        nothing is stored); a store failure part-way leaves the earlier batches stored.
        """
        now = self._clock()
        rows = []
        for n, item in enumerate(items):
            try:
                user_id, text, metadata, scope = item
                rows.append(self._prepare(user_id, text, metadata, scope, now))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"item {n}: {exc}") from None
        if rows:
            await self._write(rows)
        return [r[0] for r in rows]

    async def _write(self, rows: list[tuple[str, str, str, dict[str, Any]]]) -> None:
        """Embed and store prepared rows in batches; then each writer's cache entry takes in
        the new items (all written) or is dropped (a failure part-way)."""
        await self._embedder_ready()
        batches: list[np.ndarray] = []
        try:
            for start in range(0, len(rows), self._batch):
                batches.append(await self._run(self._embed_and_add, rows[start:start + self._batch]))
        finally:
            done = len(batches) * self._batch >= len(rows)
            by_user: dict[str, list[int]] = {}
            for n, row in enumerate(rows):
                by_user.setdefault(row[3]["user_id"], []).append(n)
            matrix = np.vstack(batches) if done else None
            for user_id, positions in by_user.items():
                self._touched(user_id, [StoredItem(rows[n][0], rows[n][1], rows[n][3]) for n in positions],
                              matrix[positions] if matrix is not None else None)

    # -- reading -------------------------------------------------------------------------

    async def _user_items(self, user_id: str) -> _UserItems:
        """All of the user's items and vectors: from the LRU cache when current, else Chroma."""
        version = self._versions.get(user_id, 0)
        entry = self._cache.get(user_id)
        if entry is not None and entry.version == version and time.monotonic() - entry.loaded_at <= self._cache_ttl_s:
            self._cache.move_to_end(user_id)
            return entry

        def load() -> _UserItems:
            items, matrix = self._store.get_with_embeddings(where={"user_id": user_id})
            return _UserItems(version, time.monotonic(), {it.id: it for it in items}, [it.id for it in items], matrix)

        entry = await self._run(load)
        if self._versions.get(user_id, 0) == version:
            self._cache[user_id] = entry
            self._cache.move_to_end(user_id)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return entry

    async def _view(self, user_id: str, scope: str | None) -> tuple[_UserItems, _ScopeView]:
        entry = await self._user_items(user_id)
        view = entry.views.get(scope)
        if view is None:
            view = await self._run(entry.view, scope)
        return entry, view

    async def _embed_query(self, text: str) -> np.ndarray:
        if (vector := self._recent_vectors.get(text)) is not None:
            return vector
        await self._embedder_ready()
        vector = await self._run(lambda: np.asarray(self._embedder.embed([text])[0], dtype=np.float32))
        self._recent_vectors.put(text, vector)
        return vector

    async def search(self, user_id: str, query: str, k: int = 5, scope: str | None = None) -> list[MemoryHit]:
        """The user's `k` items best matching `query` in `scope` (None = all), best first."""
        _check_user(user_id)
        scope = _check_scope(scope)
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, not {type(query).__name__}")
        if k <= 0 or not _visible(query):
            return []
        now = self._clock()
        plan = ranking.plan_query(_visible(query), now)
        search_text = _visible(plan.search_text) or _visible(query)
        mode = self.search_mode
        if mode == "keyword":
            (entry, view), vector = await self._view(user_id, scope), None
        else:
            (entry, view), vector = await asyncio.gather(self._view(user_id, scope), self._embed_query(search_text))
        dense: dict[str, float] = {}
        if vector is not None and view.ids:
            similarity = view.matrix @ vector
            n = min(len(view.ids), max(DENSE_CANDIDATES, 10 * k))
            top = np.argpartition(-similarity, n - 1)[:n] if n < len(view.ids) else range(len(view.ids))
            dense = {view.ids[r]: float(similarity[r]) for r in top}
        keyword = view.index.scores(search_text) if mode != "dense" else {}
        created = {i: _created(entry.items[i]) for i in view.ids}
        ranked = ranking.fuse(plan, dense=dense, keyword=keyword, created_at=created, now=now, k=k, mode=mode)
        return [MemoryHit(i, entry.items[i].text, float(score), dict(entry.items[i].metadata)) for i, score in ranked]

    async def list(self, user_id: str, scope: str | None = None) -> list[MemoryHit]:
        """All of the user's items in `scope` (None = all), oldest first, score 0.0."""
        _check_user(user_id)
        scope = _check_scope(scope)
        entry = await self._user_items(user_id)
        chosen = [it for it in entry.items.values() if scope is None or it.metadata.get("scope") == scope]
        chosen.sort(key=lambda it: (_created(it), it.id))
        return [MemoryHit(it.id, it.text, 0.0, dict(it.metadata)) for it in chosen]

    async def export(self, user_id: str, scope: str | None = None) -> list[dict[str, Any]]:
        """The user's items in `scope` (None = all) as JSON-safe dicts, oldest first.

        Each: {"id", "text", "scope", "created_at" (ISO-8601 UTC), "metadata" (the caller's)}.
        """
        out = []
        for hit in await self.list(user_id, scope):
            meta = dict(hit.metadata)
            created = float(meta.pop("created_at", 0.0))
            meta.pop("user_id", None)
            out.append({
                "id": hit.id,
                "text": hit.text,
                "scope": meta.pop("scope", ""),
                "created_at": datetime.fromtimestamp(created, tz=UTC).isoformat(),
                "metadata": meta,
            })
        return out

    # -- forgetting ----------------------------------------------------------------------

    async def delete(self, user_id: str, item_id: str) -> bool:
        """Delete one item of this user; False when the user has no item with that id."""
        _check_user(user_id)
        if not isinstance(item_id, str) or not item_id:
            return False

        def delete() -> bool:
            found = self._store.get(where={"user_id": user_id}, ids=[item_id])
            self._store.delete([it.id for it in found])
            return bool(found)

        try:
            return await self._run(delete)
        finally:
            self._touched(user_id)

    async def forget(self, user_id: str, scope: str | None = None) -> int:
        """Delete the user's items in `scope` (None = all of them); returns how many."""
        _check_user(user_id)
        scope = _check_scope(scope)

        def forget() -> int:
            ids = [it.id for it in self._store.get(where=_where(user_id, scope))]
            for start in range(0, len(ids), self._batch):
                self._store.delete(ids[start:start + self._batch])
            return len(ids)

        try:
            return await self._run(forget)
        finally:
            self._touched(user_id)


def open_user_memory(path: str | os.PathLike[str] | None = None, *, host: str | None = None,
                     port: int | None = None, embedder: Embedder | None = None,
                     collection: str = DEFAULT_COLLECTION, search_mode: str = "hybrid",
                     clock: Callable[[], float] = time.time, settings: MemorySettings | None = None,
                     op_timeout_s: float = 30.0, http_timeout_s: float = 10.0,
                     cache_size: int = 256, cache_ttl_s: float = 60.0, preload: bool = True) -> UserMemory:
    """**contract** Open the per-user semantic memory.

    `path` is the embedded Chroma folder (default `settings.chroma_path`); `host`/`port`
    (default `settings.chroma_host`/`chroma_port`) use a Chroma server instead. `embedder`
    defaults to the one `settings` asks for (offline all-MiniLM-L6-v2 without settings);
    with `preload` a local model starts loading in the background now. `clock` returns
    epoch seconds (for tests and evaluations of time questions). Raises StoreUnavailable
    naming the folder or host:port when the store cannot be opened, ConfigError when the
    collection holds vectors of another model.
    """
    if search_mode not in SEARCH_MODES:
        raise ValueError(f"search_mode must be one of {', '.join(SEARCH_MODES)}: {search_mode!r}")
    if settings is not None:
        path = path if path is not None else settings.chroma_path
        if host is None and settings.chroma_host:
            host, port = settings.chroma_host, port if port is not None else settings.chroma_port
    owns = embedder is None
    if embedder is None:
        embedder = embedder_from_settings(settings or MemorySettings())
    # an endpoint's dimension is learned from its first answer: opening makes no request
    dimension = embedder.known_dimension if hasattr(embedder, "known_dimension") else embedder.dimension
    store = ChromaStore.open(path=path, host=host, port=port, collection=collection,
                             embedder_name=embedder.name, dimension=dimension,
                             http_timeout_s=http_timeout_s)
    return UserMemory(store, embedder, search_mode=search_mode, clock=clock, op_timeout_s=op_timeout_s,
                      cache_size=cache_size, cache_ttl_s=cache_ttl_s, owns_embedder=owns, preload=preload)
