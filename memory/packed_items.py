"""A user's stored items by row, packed: texts and metadata as UTF-8 blobs, made into items on demand.

A snapshot (`memory.snapshot`) of tens of thousands of items restores as a few arrays: each
row's text and metadata (JSON) are slices of two byte blobs, decoded only when that row is
read (a search reads its top k, a list reads the scope). Rows appended afterwards are kept as
`StoredItem`s. `packed(rows)` gives the blobs of some rows again (for the next snapshot),
copying the packed rows' bytes without decoding them. Not thread-safe by itself.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from memory.chroma_backend import StoredItem

__all__ = ["PackedItems"]

_EMPTY = np.zeros(0, np.uint8)


def _ends(parts: Sequence[bytes]) -> np.ndarray:
    return np.cumsum(np.fromiter((len(p) for p in parts), np.int64, len(parts)), dtype=np.int64)


class PackedItems:
    """Row -> StoredItem, for rows packed in blobs (`ids`, texts, metadata) and appended ones."""

    def __init__(self, ids: list[str] | None = None, texts: np.ndarray = _EMPTY, text_ends: np.ndarray | None = None,
                 metas: np.ndarray = _EMPTY, meta_ends: np.ndarray | None = None) -> None:
        self._ids = list(ids or ())  # a copy: the caller's list grows with appended rows
        count = len(self._ids)
        self._texts = np.asarray(texts, np.uint8)
        self._metas = np.asarray(metas, np.uint8)
        self._text_ends = np.zeros(0, np.int64) if text_ends is None else np.asarray(text_ends, np.int64)
        self._meta_ends = np.zeros(0, np.int64) if meta_ends is None else np.asarray(meta_ends, np.int64)
        if (len(self._text_ends) != count or len(self._meta_ends) != count
                or (count and (self._text_ends[-1] != len(self._texts) or self._meta_ends[-1] != len(self._metas)))
                or (count and (np.any(np.diff(self._text_ends) < 0) or np.any(np.diff(self._meta_ends) < 0)
                               or self._text_ends[0] < 0 or self._meta_ends[0] < 0))):
            raise ValueError("packed items: ids, texts and metadata do not fit together")
        self._appended: list[StoredItem] = []

    def __len__(self) -> int:
        return len(self._ids) + len(self._appended)

    def _slice(self, blob: np.ndarray, ends: np.ndarray, row: int) -> bytes:
        start = int(ends[row - 1]) if row else 0
        return blob[start:int(ends[row])].tobytes()

    def __getitem__(self, row: int) -> StoredItem:
        if row < 0:
            row += len(self)
        if row >= len(self._ids):
            return self._appended[row - len(self._ids)]
        metadata = json.loads(self._slice(self._metas, self._meta_ends, row))
        if not isinstance(metadata, dict):
            raise ValueError(f"packed items: row {row}'s metadata is not an object")
        return StoredItem(self._ids[row], self._slice(self._texts, self._text_ends, row).decode(), metadata)

    def extend(self, items: Sequence[StoredItem]) -> None:
        self._appended.extend(items)

    def packed(self, rows: Sequence[int]) -> dict[str, np.ndarray]:
        """The texts and metadata of `rows`, in that order, as blobs and end offsets:
        `texts`, `text_ends`, `metas`, `meta_ends`."""
        texts: list[bytes] = []
        metas: list[bytes] = []
        base = len(self._ids)
        for row in rows:
            if row < base:
                texts.append(self._slice(self._texts, self._text_ends, row))
                metas.append(self._slice(self._metas, self._meta_ends, row))
            else:
                item = self._appended[row - base]
                texts.append(item.text.encode())
                metas.append(json.dumps(item.metadata, ensure_ascii=False).encode())
        return {"texts": np.frombuffer(b"".join(texts), np.uint8), "text_ends": _ends(texts),
                "metas": np.frombuffer(b"".join(metas), np.uint8), "meta_ends": _ends(metas)}
