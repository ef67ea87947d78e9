"""The semantic memory's worker threads: blocking work (embedding, Chroma, numpy) off the loop.

`WorkerPool.run(fn, *args)` runs `fn` on the pool and awaits it, bounded by `op_timeout_s`: a
store that does not answer raises StoreUnavailable naming where it is, never hangs the caller.
`close()` waits (off the event loop) for running work and cancels what has not started.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from memory.errors import MemoryStoreError, StoreUnavailable

__all__ = ["WORKERS", "WorkerPool"]

T = TypeVar("T")
P = ParamSpec("P")

WORKERS = 4  # threads for embedding, Chroma calls and searches


class WorkerPool:
    """A thread pool whose calls are awaited with a timeout; `where` names the store in errors."""

    def __init__(self, where: str, op_timeout_s: float, workers: int = WORKERS) -> None:
        self.where = where
        self.op_timeout_s = op_timeout_s
        self.closed = False
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="user-memory")

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Start `fn` now without awaiting it (e.g. loading the model in the background)."""
        return self._started(fn)

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._awaited(self._started(lambda: fn(*args, **kwargs)))

    def _started(self, fn: Callable[[], T]) -> Future[T]:
        if self.closed:
            raise MemoryStoreError("this user memory is closed")
        return self._executor.submit(fn)

    async def awaited(self, task: Future[T]) -> T:
        """Await work started with `submit`, bounded by `op_timeout_s` (the work runs on after a
        timeout, even one still queued behind busy workers: await it again to take it over)."""
        return await self._awaited(task, shielded=True)

    async def _awaited(self, task: Future[T], *, shielded: bool = False) -> T:
        # a `run` call times out whole: its work, if still queued, is cancelled (a write its
        # caller was told failed never runs later); `awaited` work is only stopped being waited for
        waited = asyncio.wrap_future(task)
        try:
            return await asyncio.wait_for(asyncio.shield(waited) if shielded else waited, self.op_timeout_s)
        except TimeoutError:
            raise StoreUnavailable(f"{self.where} did not answer within {self.op_timeout_s:g} s") from None

    async def close(self) -> None:
        """Stop the threads; idempotent. A worker may be waiting on a frozen server: wait off the loop."""
        if self.closed:
            return
        self.closed = True
        await asyncio.to_thread(self._executor.shutdown, wait=True, cancel_futures=True)
