"""The semantic memory's one cache: the vectors of the last few search queries, by text.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from memory.semantic import ranking

__all__ = ["RecentVectors"]


class RecentVectors:
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
