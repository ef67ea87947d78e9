"""Embedded Chroma in a child process, so that its blocking work cannot hold this process's GIL.

Embedded Chroma's bindings hold the GIL while they add a batch or convert a page of results,
so a worker thread running them stalls the event loop for that long (docs/decisions/0011-chroma-worker-process.md). `ChromaProcess` runs a `ChromaStore` of an embedded folder in a child process
(multiprocessing "spawn": no threads or torch state are forked) and forwards each call over a
pipe; only pickled lists and arrays cross it, and this process only unpickles them. It has
the methods of `ChromaStore` that `memory.semantic` and `memory.semantic.versions` use.

- The program's main module must guard its start with `if __name__ == "__main__":`, as for
  any multiprocessing "spawn" child (`python -m bot`, the benches and pytest do).
- One call at a time (a lock around the pipe); Chroma serializes writes to a folder anyway.
- Errors raised in the child (StoreUnavailable, ConfigError, Chroma's InvalidArgumentError)
  are raised here; one that cannot be pickled arrives as StoreUnavailable with its text.
- The child dying (killed, out of memory), or not answering within `call_timeout_s` (then it
  is killed), fails the call in progress with StoreUnavailable naming the folder and the
  call. Whether a write in progress landed is then unknown, as after any crash: the write
  log's reconcile (bot.turn_store.reconcile) settles it. The next call starts a new child on the folder.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import threading
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import numpy as np

from memory.semantic.chroma_backend import ChromaStore, StoredItem
from memory.errors import StoreUnavailable

__all__ = ["ChromaProcess"]

log = logging.getLogger(__name__)

OPEN_TIMEOUT_S = 120.0  # the child imports chromadb and opens the folder
CHILD_NICENESS = 5  # added to the child's niceness (os.nice): the parent's threads come first


def _sendable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return StoreUnavailable(f"{type(exc).__name__}: {exc}")
    return exc


def _serve(conn: Connection, options: dict[str, Any], suffixes: list[str]) -> None:
    """The child: open the store (and its log collections), then answer calls until told to stop."""
    # Chroma's indexing takes every core it can; at a lower priority the parent's event loop,
    # which needs little CPU but needs it at once, is not left waiting for a core behind it.
    os.nice(CHILD_NICENESS)
    try:
        main = ChromaStore.open(**options)
        stores = {"": main, **{suffix: main.log(suffix) for suffix in suffixes}}
        conn.send(("ok", (main.where, main.name)))
    except BaseException as exc:
        conn.send(("error", _sendable(exc)))
        return
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        key, method, args, kwargs = request
        try:
            if method == "log":
                stores[args[0]] = main.log(args[0])
                result = None
            else:
                result = getattr(stores[key], method)(*args, **kwargs)
            conn.send(("ok", result))
        except Exception as exc:
            conn.send(("error", _sendable(exc)))


class _Child:
    """The child process and its pipe; started again on the first call after it died."""

    def __init__(self, options: dict[str, Any], call_timeout_s: float) -> None:
        self.options = options
        self.where = f"Chroma folder {str(options['path'])!r}"
        self.call_timeout_s = call_timeout_s
        self.suffixes: list[str] = []
        self.process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def _start(self) -> tuple[str, str]:
        context = multiprocessing.get_context("spawn")
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs, self.options, list(self.suffixes)),
                                  name="chroma-worker", daemon=True)
        process.start()
        theirs.close()
        self.process, self._conn = process, mine
        return self._answer("open", OPEN_TIMEOUT_S)

    def _answer(self, what: str, timeout_s: float) -> Any:
        assert self._conn is not None and self.process is not None
        try:
            if not self._conn.poll(timeout_s):
                self._stop(kill=True)
                raise StoreUnavailable(f"the Chroma worker process of {self.where} did not answer {what} "
                                       f"within {timeout_s:g} s; it was stopped")
            status, value = self._conn.recv()
        except (EOFError, OSError) as exc:
            code = self._stop(kill=True)
            raise StoreUnavailable(f"the Chroma worker process of {self.where} exited (code {code}) "
                                   f"during {what}") from exc
        if status == "error":
            if what == "open":
                self._stop(kill=True)
            raise value
        return value

    def _stop(self, *, kill: bool) -> int | None:
        process, conn = self.process, self._conn
        self.process = self._conn = None
        if conn is not None:
            if not kill:
                try:
                    conn.send(None)
                except OSError:
                    pass
            conn.close()
        if process is None:
            return None
        if kill:
            process.kill()
        process.join(10.0)
        if process.is_alive():
            process.kill()
            process.join()
        return process.exitcode

    def open(self) -> tuple[str, str]:
        with self._lock:
            return self._start()

    def call(self, key: str, method: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self.process is None or not self.process.is_alive():
                if self.process is not None:
                    log.warning("semantic memory: the Chroma worker process of %s exited (code %s); starting "
                                "another", self.where, self._stop(kill=True))
                self._start()
            assert self._conn is not None
            try:
                self._conn.send((key, method, args, kwargs))
            except OSError as exc:
                code = self._stop(kill=True)
                raise StoreUnavailable(f"the Chroma worker process of {self.where} exited (code {code}) "
                                       f"before {method}") from exc
            result = self._answer(method, self.call_timeout_s)
            if method == "log" and args[0] not in self.suffixes:
                self.suffixes.append(args[0])
            return result

    def close(self) -> None:
        with self._lock:
            self._stop(kill=False)


class ChromaProcess:
    """A ChromaStore of an embedded folder, run in a child process (blocking calls, thread-safe)."""

    def __init__(self, child: _Child, key: str, where: str, name: str) -> None:
        self._child = child
        self._key = key
        self.where = where
        self.name = name

    @classmethod
    def open(cls, *, call_timeout_s: float = 30.0, **options: Any) -> ChromaProcess:
        """Start the child and open the store there: `options` are ChromaStore.open's (path, not
        host)."""
        child = _Child(options, call_timeout_s)
        where, name = child.open()
        return cls(child, "", where, name)

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs (for tests and logs)."""
        process = self._child.process
        return process.pid if process is not None and process.is_alive() else None

    def log(self, suffix: str) -> ChromaProcess:
        self._child.call("", "log", suffix)
        return ChromaProcess(self._child, suffix, self.where, self.name + suffix)

    def add(self, ids: Sequence[str], embeddings: Sequence[Sequence[float]] | np.ndarray, documents: Sequence[str],
            metadatas: Sequence[Mapping[str, Any]]) -> None:
        self._child.call(self._key, "add", list(ids), np.asarray(embeddings, np.float32), list(documents),
                         [dict(m) for m in metadatas])

    def upsert(self, ids: Sequence[str], documents: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None:
        self._child.call(self._key, "upsert", list(ids), list(documents), [dict(m) for m in metadatas])

    def get(self, *, where: Mapping[str, Any], ids: Sequence[str] | None = None) -> list[StoredItem]:
        return self._child.call(self._key, "get", where=dict(where), ids=None if ids is None else list(ids))

    def ids(self, *, where: Mapping[str, Any]) -> list[str]:
        return self._child.call(self._key, "ids", where=dict(where))

    def get_with_embeddings(self, *, where: Mapping[str, Any] | None, ids: Sequence[str] | None = None,
                            embeddings: bool = True) -> tuple[list[StoredItem], np.ndarray]:
        return self._child.call(self._key, "get_with_embeddings", where=None if where is None else dict(where),
                                ids=None if ids is None else list(ids), embeddings=embeddings)

    def delete(self, ids: Sequence[str]) -> None:
        self._child.call(self._key, "delete", list(ids))

    def delete_siblings(self, suffixes: Sequence[str]) -> list[str]:
        return self._child.call(self._key, "delete_siblings", list(suffixes))

    def max_batch_size(self) -> int:
        return int(self._child.call(self._key, "max_batch_size"))

    def close(self) -> None:
        """Stop the child (it finishes the call in progress first); a later call starts another."""
        self._child.close()
