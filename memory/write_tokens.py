"""Per-user write tokens: whether a user's items in Chroma may have changed, in one small read.

Every process that writes a user's items (add, delete, forget) keeps, in a sibling collection
`<collection>__tokens` of the same Chroma (folder or server), two kinds of record per user:
- a *mark* for each write in progress, added BEFORE the write touches the items and deleted
  after it, and
- the user's *token*, set to a new random value AFTER every write (before its mark goes).

So for any two reads of the user's records that both see no mark and the same token, no write
of that user ended between them, and none was in progress at either (a write adds its mark
before it changes anything). `memory.snapshot` keeps with a user's snapshot the token read
before the snapshot's items were checked against the ids Chroma had; a cold load that reads
that same token and no mark needs no id read. Anything else (a mark, another token, no
token) means "unknown": the load checks the ids as before. Values are never reused, so a
token cannot come back to an older value.

Crashes: a write that dies after adding its mark leaves the mark, which makes every load of
that user check ids. A mark older than `stale_after_s` (far beyond any call's time bound) is
taken as a dead writer's: the reader sets a new token first, then deletes the mark, so a
snapshot taken while it stood can never match. A failure to set the token or remove a mark
after a write is logged and left: it can only make loads check ids.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from memory.chroma_backend import StoredItem
from memory.errors import StoreUnavailable

__all__ = ["TOKEN_SUFFIX", "TokenLog", "WriteTokens"]

log = logging.getLogger(__name__)

TOKEN_SUFFIX = "__tokens"
STALE_AFTER_S = 600.0


class TokenLog(Protocol):
    """What the tokens need of a Chroma collection (`ChromaStore` or `ChromaProcess`)."""

    def add(self, ids: Sequence[str], embeddings: Sequence[Sequence[float]], documents: Sequence[str],
            metadatas: Sequence[Mapping[str, Any]]) -> None: ...

    def upsert(self, ids: Sequence[str], documents: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None: ...

    def get(self, *, where: Mapping[str, Any], ids: Sequence[str] | None = None) -> list[StoredItem]: ...

    def delete(self, ids: Sequence[str]) -> None: ...


def _token_id(user_id: str) -> str:
    return "t:" + hashlib.sha256(user_id.encode()).hexdigest()[:40]


class WriteTokens:
    """The marks and tokens of every user in one collection (blocking; run in a worker thread)."""

    def __init__(self, store: TokenLog, *, stale_after_s: float = STALE_AFTER_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._stale_after_s = stale_after_s
        self._clock = clock

    @contextmanager
    def writing(self, user_ids: Iterable[str]) -> Iterator[dict[str, str]]:
        """Around one write of these users' items: marks before, new tokens and no marks after
        (also when the write failed: whether it landed is unknown, so the token changes). The
        dict yielded holds, once the block is left, each user's new token (none that failed)."""
        users = sorted(set(user_ids))
        marks = ["w:" + uuid.uuid4().hex for _ in users]
        at = self._clock()
        self._store.add(marks, [[0.0]] * len(marks), [""] * len(marks),
                        [{"user_id": u, "kind": "mark", "at": at} for u in users])
        renewed: dict[str, str] = {}
        try:
            yield renewed
        finally:
            try:
                renewed.update(self._renew(users))
                self._store.delete(marks)
            except StoreUnavailable as exc:
                log.warning("semantic memory: write tokens of %d user(s) not renewed (%s); their loads "
                            "will check ids", len(users), exc)

    def _renew(self, users: Sequence[str]) -> dict[str, str]:
        at = self._clock()
        tokens = {u: uuid.uuid4().hex for u in users}
        self._store.upsert([_token_id(u) for u in users], [""] * len(users),
                           [{"user_id": u, "kind": "token", "token": tokens[u], "at": at} for u in users])
        return tokens

    def current(self, user_id: str, *, create: bool = False) -> str | None:
        """The user's token when no write of theirs is in progress, else None. A user with no
        token yet has None too, unless `create` (then one is set: that changes nothing else)."""
        records = self._store.get(where={"user_id": user_id})
        now = self._clock()
        marks = [r for r in records if r.metadata.get("kind") == "mark"]
        if marks:
            stale = [r.id for r in marks if now - float(r.metadata.get("at", now)) > self._stale_after_s]
            if stale:
                log.warning("semantic memory: %d write mark(s) of a user older than %g s taken as a dead "
                            "writer's; token renewed", len(stale), self._stale_after_s)
                self._renew([user_id])
                self._store.delete(stale)
            return None
        tokens = [str(r.metadata.get("token", "")) for r in records if r.metadata.get("kind") == "token"]
        if tokens and tokens[0]:
            return tokens[0]
        if create:
            self._renew([user_id])
            return self.current(user_id)
        return None
