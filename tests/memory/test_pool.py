"""memory.semantic.pool: a timed-out `awaited` task runs on even if it was still queued (the
next caller takes it over); a timed-out `run` call still queued never runs (its caller was told
it failed)."""

from __future__ import annotations

import threading

import pytest

from memory.errors import StoreUnavailable
from memory.semantic.pool import WorkerPool


async def test_a_queued_task_given_up_on_by_awaited_still_runs_and_can_be_awaited_again() -> None:
    pool = WorkerPool("test store", op_timeout_s=0.2, workers=1)
    busy = threading.Event()
    pool.submit(lambda: busy.wait(30))  # the only worker is taken
    task = pool.submit(lambda: "loaded")
    try:
        with pytest.raises(StoreUnavailable):
            await pool.awaited(task)
        assert not task.cancelled()
        busy.set()
        assert await pool.awaited(task) == "loaded"
    finally:
        busy.set()
        await pool.close()


async def test_a_queued_run_call_that_timed_out_never_runs() -> None:
    pool = WorkerPool("test store", op_timeout_s=0.2, workers=1)
    busy, ran = threading.Event(), threading.Event()
    blocker = pool.submit(lambda: busy.wait(30))
    try:
        with pytest.raises(StoreUnavailable):
            await pool.run(ran.set)
        busy.set()
        blocker.result(30)
        pool.submit(lambda: None).result(30)  # anything queued before it has run by now
        assert not ran.is_set()
    finally:
        busy.set()
        await pool.close()
