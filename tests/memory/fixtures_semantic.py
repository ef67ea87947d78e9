"""Fixtures of the semantic-memory tests; test modules import the ones they use.

- `local_embedder` (session): the offline all-MiniLM-L6-v2, loaded once for the whole run.
- `RecordingEmbedder`: wraps the local embedder and records every call.
- `opened`: a UserMemory that writes its snapshot at every close (the snapshot and version tests);
  `snapshot_files`: the snapshot files of a Chroma folder.
- `clock`: a settable clock (epoch seconds: tests.clock) handed to open_user_memory.
- `memory`: a UserMemory on an embedded Chroma folder under tmp_path, closed afterwards.
- `chroma_server` (module): a real `chroma run` server on loopback (tests.fakes.chroma_server).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
import threading
from pathlib import Path

import numpy as np
import pytest

from memory.semantic.embeddings import LocalEmbedder
from memory.semantic import UserMemory, open_user_memory
from tests.clock import Clock
from tests.fakes.chroma_server import ChromaServer

DAY = 86_400.0
START = 1_780_000_000.0  # 2026-05-28, a Thursday


class RecordingEmbedder:
    """The real local embedder, remembering each call: its texts and the thread it ran on."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.calls: list[tuple[list[str], str]] = []

    @property
    def texts(self) -> list[str]:
        return [text for texts, _ in self.calls for text in texts]

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append((list(texts), threading.current_thread().name))
        return self.inner.embed(texts)


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    embedder = LocalEmbedder()
    embedder.load()
    return embedder


def snapshot_files(path: Path) -> list[Path]:
    return sorted((path.parent / (path.name + "-snapshots") / "user_memory").glob("*"))


def opened(path: Path, embedder: LocalEmbedder, **options: object) -> UserMemory:
    """A UserMemory on the Chroma folder ``path`` that writes its snapshot at every close."""
    return open_user_memory(str(path), embedder=embedder, snapshot_after=1, **options)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> Clock[float]:
    return Clock(START)


@pytest.fixture
async def memory(tmp_path: Path, local_embedder: LocalEmbedder, clock: Clock) -> AsyncIterator[UserMemory]:
    mem = open_user_memory(str(tmp_path / "chroma"), embedder=local_embedder, clock=clock)
    yield mem
    await mem.close()


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with ChromaServer(tmp_path_factory.mktemp("chroma-server") / "data") as server:
        yield server
