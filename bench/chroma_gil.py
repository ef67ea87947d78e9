"""Does embedded Chroma hold the GIL? A thread runs Chroma adds and paged reads while the main
thread sleeps 2 ms at a time; the worst lateness of its wake-ups is the stall an event loop
would see. For comparison, the same with a thread running pure Python (which the interpreter
interrupts every 5 ms) and with the Chroma work in a worker process (memory.semantic.chroma_process).

    python bench/chroma_gil.py
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory.semantic.chroma_backend import ChromaStore  # noqa: E402
from memory.semantic.chroma_process import ChromaProcess  # noqa: E402

BATCHES, BATCH, PAGE = 20, 256, 200


def chroma_work(store: ChromaStore | ChromaProcess) -> Callable[[], None]:
    rng = np.random.default_rng(0)

    def work() -> None:
        for _ in range(BATCHES):
            vectors = rng.standard_normal((BATCH, 384)).astype(np.float32)
            store.add([uuid.uuid4().hex for _ in range(BATCH)], vectors, ["some remembered text"] * BATCH,
                      [{"user_id": "u", "scope": "dm", "created_at": 1.0}] * BATCH)
        ids = store.ids(where={"user_id": "u"})
        for start in range(0, len(ids), PAGE):
            store.get_with_embeddings(where=None, ids=ids[start:start + PAGE])

    return work


def pure_python() -> None:
    started = time.perf_counter()
    while time.perf_counter() - started < 3.0:
        sum(range(1_000))


def worst_lateness(work: Callable[[], None]) -> tuple[float, float]:
    thread = threading.Thread(target=work)
    worst, started = 0.0, time.perf_counter()
    thread.start()
    while thread.is_alive():
        t0 = time.perf_counter()
        time.sleep(0.002)
        worst = max(worst, time.perf_counter() - t0 - 0.002)
    return time.perf_counter() - started, worst


def main() -> None:
    options = {"host": None, "port": None, "collection": "gil_check", "embedder_name": "random", "dimension": 384}
    with tempfile.TemporaryDirectory() as tmp:
        runs: list[tuple[str, Callable[[], None]]] = [
            ("Chroma in a thread of this process", chroma_work(ChromaStore.open(path=Path(tmp) / "a", **options))),
            ("pure Python in a thread", pure_python),
        ]
        process = ChromaProcess.open(path=Path(tmp) / "b", **options)
        runs.append(("Chroma in a worker process", chroma_work(process)))
        for label, work in runs:
            took, worst = worst_lateness(work)
            print(f"{label:<40} {took:6.1f} s   worst wake-up lateness {worst * 1000:8.1f} ms", flush=True)
        process.close()


if __name__ == "__main__":
    main()
