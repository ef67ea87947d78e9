"""Per-user write tokens: whether a user's items in Chroma may have changed, in one small read.

Every process that writes a user's items (add, delete, forget) keeps, in a sibling collection
`<collection>__tokens` of the same Chroma (folder or server), two kinds of record per user:
- a *mark* while this process has written or is writing the user's items: put BEFORE the first
  write touches them (`begin`) and kept through the writes that follow, and
- the user's *token*, set to a new random value when the process *settles* the user (`settle`:
  no write of theirs running here), just before its mark is removed.

So for any two reads of the user's records that both see no mark and the same token, no write
of that user ended between them, and none was running at either. `memory.semantic.snapshot` keeps with
a user's snapshot a token the snapshot's items are known to be current for; a cold load that
reads that same token and no mark needs no id read. Anything else (a mark, another token, no
token) means "unknown": the load checks the ids as before. Values are never reused, so a
token cannot come back to an older value. A write costs Chroma calls only when it opens the
user's mark (the first write since the last settle): a run of adds pays once, and
`memory.semantic` settles a user some seconds after their last write, and on close.

Crashes: a process that dies with a mark leaves it, which makes every load of that user check
ids. A mark a reader has seen unchanged for `stale_after_s` of its own clock (a writer puts
its marks again every quarter of that while it holds them: `refresh`) is taken as a dead
writer's: the reader sets a new token first, then deletes the mark, so a snapshot taken while
it stood can never match. `WriteHold` ends a write's hold on its marks only once every thread
task of the write has returned, so a write that timed out while its thread still writes keeps
its mark until it is really over.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from memory.semantic.chroma_backend import StoredItem

__all__ = ["TOKEN_SUFFIX", "TokenLog", "WriteHold", "WriteTokens"]

log = logging.getLogger(__name__)

TOKEN_SUFFIX = "__tokens"
STALE_AFTER_S = 600.0
SEEN_USERS = 4096  # users whose marks a reader remembers seeing (the oldest sightings go first)


class TokenLog(Protocol):
    """What the tokens need of a Chroma collection (`ChromaStore` or `ChromaProcess`)."""

    def upsert(self, ids: Sequence[str], documents: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None: ...

    def get(self, *, where: Mapping[str, Any], ids: Sequence[str] | None = None) -> list[StoredItem]: ...

    def delete(self, ids: Sequence[str]) -> None: ...


def _token_id(user_id: str) -> str:
    return "t:" + hashlib.sha256(user_id.encode()).hexdigest()[:40]


@dataclass(slots=True)
class _Session:
    """This process's mark for one user: since when it stands, and how many writes run now
    (times on the monotonic clock)."""

    mark: str
    marked_at: float
    running: int = 0
    last_end: float = 0.0


class WriteTokens:
    """The marks and tokens of every user in one collection (thread-safe). `begin`, `settle`
    and `current` call Chroma (run them in a worker thread); `end` and `has_session` do not."""

    def __init__(self, store: TokenLog, *, stale_after_s: float = STALE_AFTER_S,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._stale_after_s = stale_after_s
        self._clock = clock  # stamps marks and tokens (for people reading the records)
        self._monotonic = monotonic  # times this process's sessions, and how long a reader saw a mark
        # per user, the marks this reader saw, as (id, put at), and when it first saw each
        self._seen_marks: dict[str, dict[tuple[str, str], float]] = {}
        self._io = threading.Lock()  # one begin or settle at a time: a write never overtakes its mark
        self._lock = threading.Lock()  # the sessions themselves (held for no I/O)
        self._sessions: dict[str, _Session] = {}

    def begin(self, user_ids: Iterable[str]) -> None:
        """Before this process writes these users' items: when this returns, each user's mark
        is in Chroma. Pair every call that returns with one `end` of the same users."""
        users = sorted(set(user_ids))
        with self._io:
            now = self._monotonic()
            with self._lock:
                due = {u: self._sessions[u].mark if u in self._sessions else "w:" + uuid.uuid4().hex
                       for u in users
                       if u not in self._sessions or now - self._sessions[u].marked_at > self._stale_after_s / 4}
            self._put_marks(due)
            with self._lock:
                for u in users:
                    session = self._sessions.get(u)
                    if session is None:
                        session = self._sessions[u] = _Session(due[u], now)
                    elif u in due:
                        session.marked_at = now
                    session.running += 1

    def _put_marks(self, marks: Mapping[str, str]) -> None:
        if marks:
            at = self._clock()
            self._store.upsert(list(marks.values()), [""] * len(marks),
                               [{"user_id": u, "kind": "mark", "at": at} for u in marks])

    def end(self, user_ids: Iterable[str]) -> None:
        """This process's write of these users (begun with `begin`) is over, wherever it went."""
        with self._lock:
            for u in set(user_ids):
                session = self._sessions.get(u)
                if session is not None and session.running:
                    session.running -= 1
                    session.last_end = self._monotonic()

    def sessions(self) -> int:
        """How many users this process holds a mark for."""
        with self._lock:
            return len(self._sessions)

    def has_session(self, user_id: str) -> bool:
        """Whether this process holds a mark for the user (it wrote since the last settle)."""
        with self._lock:
            return user_id in self._sessions

    def settle(self, user_id: str) -> str | None:
        """When this process holds the user's mark and no write of theirs runs here: a new
        token, then the mark goes; returns that token. None otherwise."""
        return self.settle_idle(0.0, [user_id]).get(user_id)

    def settle_idle(self, idle_s: float, user_ids: Iterable[str] | None = None) -> dict[str, str]:
        """Settle every user (of `user_ids`, default all) whose last write here ended at least
        `idle_s` ago and none runs; returns their new tokens."""
        with self._io:
            now = self._monotonic()
            with self._lock:
                chosen = self._sessions if user_ids is None else {u: self._sessions[u] for u in user_ids
                                                                  if u in self._sessions}
                idle = {u: s.mark for u, s in chosen.items() if not s.running and now - s.last_end >= idle_s}
            if not idle:
                return {}
            tokens = self._renew(list(idle))
            self._store.delete(list(idle.values()))
            with self._lock:
                for u in idle:
                    self._sessions.pop(u, None)
            return tokens

    def refresh(self) -> int:
        """Put again the marks this process has held for more than a quarter of `stale_after_s`
        (a write still running, or one not settled yet), so that no reader takes a long
        write's mark for a dead writer's; returns how many."""
        with self._io:
            now = self._monotonic()
            with self._lock:
                due = {u: s.mark for u, s in self._sessions.items()
                       if now - s.marked_at > self._stale_after_s / 4}
            self._put_marks(due)
            with self._lock:
                for u in due:
                    if u in self._sessions:
                        self._sessions[u].marked_at = now
            return len(due)

    def _renew(self, users: Sequence[str]) -> dict[str, str]:
        at = self._clock()
        tokens = {u: uuid.uuid4().hex for u in users}
        self._store.upsert([_token_id(u) for u in users], [""] * len(users),
                           [{"user_id": u, "kind": "token", "token": tokens[u], "at": at} for u in users])
        return tokens

    def current(self, user_id: str, *, create: bool = False) -> str | None:
        """The user's token when no process holds a mark for them, else None. A user with no
        token yet has None too, unless `create` (then one is set: that changes nothing else).

        A mark is taken as a dead writer's when this reader has seen it unchanged (the same
        mark put at the same time) for `stale_after_s` of its own monotonic clock: the writer's
        clock is never compared with this one, so clocks that differ between hosts cannot make
        a live writer's mark look old."""
        records = self._store.get(where={"user_id": user_id})
        marks = [r for r in records if r.metadata.get("kind") == "mark"]
        if marks:
            stale = self._unchanged_for_long(user_id, [(r.id, str(r.metadata.get("at", ""))) for r in marks])
            if stale:
                log.warning("semantic memory: %d write mark(s) of a user not refreshed for %g s taken as a "
                            "dead writer's; token renewed", len(stale), self._stale_after_s)
                self._renew([user_id])
                self._store.delete(stale)
            return None
        self._unchanged_for_long(user_id, [])
        tokens = [str(r.metadata.get("token", "")) for r in records if r.metadata.get("kind") == "token"]
        if tokens and tokens[0]:
            return tokens[0]
        if create:
            self._renew([user_id])
            return self.current(user_id)
        return None

    def _unchanged_for_long(self, user_id: str, marks: Sequence[tuple[str, str]]) -> list[str]:
        """The ids of these marks of the user that this reader first saw, as they are now, at
        least `stale_after_s` ago; forgets the user's marks it saw before and no longer sees."""
        now = self._monotonic()
        with self._lock:
            seen = self._seen_marks.pop(user_id, {})
            kept = {mark: seen.get(mark, now) for mark in marks}
            if kept:
                self._seen_marks[user_id] = kept
                while len(self._seen_marks) > SEEN_USERS:
                    self._seen_marks.pop(next(iter(self._seen_marks)))
            return [mark_id for (mark_id, _), first in kept.items() if now - first >= self._stale_after_s]


class WriteHold:
    """One write's hold on its users' marks (thread-safe). `begin` (in a worker thread) puts
    the marks; every thread task of the write is `keep`-ed; `release` says the write is over
    for its caller (done, failed, timed out or cancelled). The users' sessions end when both
    hold: released, and every kept task has returned, so a task that outlives its caller's
    timeout keeps the marks until it stops writing. Nothing ends when `begin` never returned.

    When the last task returns after the release (the caller gave up on it), `late(hold)` is
    called from that task's thread instead, and must see to `end()`: the write's owner first
    forgets what it cached of the users while the task still wrote."""

    def __init__(self, tokens: WriteTokens | None, users: Iterable[str],
                 late: Callable[[WriteHold], None] | None = None) -> None:
        self._tokens = tokens
        self.users = sorted(set(users))
        self._late = late
        self._lock = threading.Lock()
        self._running = 0
        self._begun = self._released = self._over = self._ended = False

    def begin(self) -> None:
        if self._tokens is not None:
            self._tokens.begin(self.users)
        with self._lock:
            self._begun = True

    def keep(self, task: Future[object]) -> None:
        with self._lock:
            self._running += 1
        task.add_done_callback(self._returned)

    def release(self) -> None:
        with self._lock:
            self._released = True
        if self._now_over():
            self.end()

    def end(self) -> None:
        """End the users' sessions (once; only when `begin` returned)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            begun = self._begun
        if begun and self._tokens is not None:
            self._tokens.end(self.users)

    @property
    def ended(self) -> bool:
        with self._lock:
            return self._ended

    def _returned(self, _task: Future[object]) -> None:
        with self._lock:
            self._running -= 1
        if self._now_over():
            if self._late is None:
                self.end()
            else:
                self._late(self)

    def _now_over(self) -> bool:
        with self._lock:
            if self._over or not self._released or self._running:
                return False
            self._over = True
            return True
