"""A user's stored items by row, packed: texts and metadata as UTF-8 blobs, made into items on demand.

Rows are kept in segments: a snapshot (`memory.semantic.snapshot`) of tens of thousands of items restores
as one segment of a few arrays, and every `extend` (an add) packs its items into one more. Each
row's text and metadata (JSON) are slices of its segment's two byte blobs, decoded only when
that row is read (a search reads its top k, a list reads the scope). So a user's rows are a few
arrays and bytes per segment, not an object and a dict per item: nothing the garbage collector
walks grows with the items (a full collection over tens of thousands of items' objects, run on
whichever thread allocates, held the GIL long enough to stall the event loop; docs/decisions/0015-gc-freeze-and-packed-items.md).
`packed(rows)` gives the blobs of some rows again (for the next snapshot), cutting the rows'
bytes out of the segments with numpy, without decoding them. Not thread-safe by itself.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory.semantic.chroma_backend import StoredItem
from memory.semantic.keyword_index import joined

__all__ = ["PackedItems"]

_EMPTY = np.zeros(0, np.uint8)
_MERGE_ROWS = 256  # an extend joins the last segment while the two hold at most this many rows


def _ends(parts: Sequence[bytes]) -> np.ndarray:
    return np.cumsum(np.fromiter((len(p) for p in parts), np.int64, len(parts)), dtype=np.int64)


@dataclass(frozen=True)
class _Segment:
    """Rows start.. of one restore or one extend: texts and metadata blobs with each row's end."""

    start: int
    texts: np.ndarray
    text_ends: np.ndarray
    metas: np.ndarray
    meta_ends: np.ndarray

    def slices(self, row: int) -> tuple[bytes, bytes]:
        """The text and metadata bytes of the segment's row `row` (counted from its start)."""
        t0 = int(self.text_ends[row - 1]) if row else 0
        m0 = int(self.meta_ends[row - 1]) if row else 0
        return (self.texts[t0:int(self.text_ends[row])].tobytes(),
                self.metas[m0:int(self.meta_ends[row])].tobytes())


class PackedItems:
    """Row -> StoredItem, for rows packed in segments of blobs (`ids`, texts, metadata)."""

    def __init__(self, ids: list[str] | None = None, texts: np.ndarray = _EMPTY, text_ends: np.ndarray | None = None,
                 metas: np.ndarray = _EMPTY, meta_ends: np.ndarray | None = None) -> None:
        self._ids = list(ids or ())  # a copy: the caller's list grows with appended rows
        count = len(self._ids)
        texts = np.asarray(texts, np.uint8)
        metas = np.asarray(metas, np.uint8)
        text_ends = np.zeros(0, np.int64) if text_ends is None else np.asarray(text_ends, np.int64)
        meta_ends = np.zeros(0, np.int64) if meta_ends is None else np.asarray(meta_ends, np.int64)
        if (len(text_ends) != count or len(meta_ends) != count
                or (count and (text_ends[-1] != len(texts) or meta_ends[-1] != len(metas)))
                or (count and (np.any(np.diff(text_ends) < 0) or np.any(np.diff(meta_ends) < 0)
                               or text_ends[0] < 0 or meta_ends[0] < 0))):
            raise ValueError("packed items: ids, texts and metadata do not fit together")
        self._segments = [_Segment(0, texts, text_ends, metas, meta_ends)] if count else []
        self._starts = [0] if count else []

    def __len__(self) -> int:
        return len(self._ids)

    def _bytes(self, row: int) -> tuple[bytes, bytes]:
        segment = self._segments[bisect.bisect_right(self._starts, row) - 1]
        return segment.slices(row - segment.start)

    def __getitem__(self, row: int) -> StoredItem:
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(f"packed items: no row {row}")
        text, meta = self._bytes(row)
        metadata = json.loads(meta)
        if not isinstance(metadata, dict):
            raise ValueError(f"packed items: row {row}'s metadata is not an object")
        return StoredItem(self._ids[row], text.decode(), metadata)

    def extend(self, items: Sequence[StoredItem]) -> None:
        """Append rows: their texts and metadata packed into one new segment."""
        if not items:
            return
        texts = [item.text.encode() for item in items]
        metas = [json.dumps(item.metadata, ensure_ascii=False).encode() for item in items]
        start = len(self._ids)
        last = self._segments[-1] if self._segments else None
        if last is not None and start - last.start + len(items) <= _MERGE_ROWS:
            # single adds: one small segment grows (a copy of at most _MERGE_ROWS rows), not one per add
            merged = [last.slices(row) for row in range(start - last.start)]
            texts = [t for t, _ in merged] + texts
            metas = [m for _, m in merged] + metas
            start = last.start
            self._segments.pop()
            self._starts.pop()
        self._starts.append(start)
        self._segments.append(_Segment(start, np.frombuffer(b"".join(texts), np.uint8), _ends(texts),
                                       np.frombuffer(b"".join(metas), np.uint8), _ends(metas)))
        self._ids.extend(item.id for item in items)

    def packed(self, rows: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
        """The texts and metadata of `rows` (ascending), in that order, as blobs and end offsets:
        `texts`, `text_ends`, `metas`, `meta_ends`. Each segment's share is cut out of its blobs
        with a few numpy calls, not row by row: Python for each row of a heavy user's snapshot
        held the GIL against the event loop (docs/decisions/0013-snapshots.md)."""
        wanted = np.asarray(rows, np.int64)
        if len(wanted) > 1 and bool(np.any(np.diff(wanted) <= 0)):
            raise ValueError("packed items: rows must be ascending and distinct")
        if len(wanted) and not 0 <= int(wanted[0]) <= int(wanted[-1]) < len(self):
            raise IndexError(f"packed items: rows outside 0..{len(self) - 1}")
        texts: list[np.ndarray] = []
        text_lengths: list[np.ndarray] = []
        metas: list[np.ndarray] = []
        meta_lengths: list[np.ndarray] = []
        bounds = np.searchsorted(wanted, np.array([*self._starts, len(self)], np.int64))
        for segment, lo, hi in zip(self._segments, bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            if hi == lo:
                continue
            local = wanted[lo:hi] - segment.start
            for blob, ends, blobs, lengths in ((segment.texts, segment.text_ends, texts, text_lengths),
                                               (segment.metas, segment.meta_ends, metas, meta_lengths)):
                cut, sizes = _cut(blob, ends, local)
                blobs.append(cut)
                lengths.append(sizes)
        return {"texts": joined(texts, np.uint8), "text_ends": np.cumsum(joined(text_lengths, np.int64)),
                "metas": joined(metas, np.uint8), "meta_ends": np.cumsum(joined(meta_lengths, np.int64))}


def _cut(blob: np.ndarray, ends: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of `rows` (ascending, counted from the segment's start) out of one segment's
    blob with its rows' end offsets, one after another, and each row's length."""
    starts = np.concatenate([np.zeros(1, np.int64), ends[:-1]])[rows]
    sizes = ends[rows] - starts
    if len(rows) == len(ends):  # every row of the segment: the blob as it is
        return blob, sizes
    # byte i of the output is blob[start of its row + its offset within the row]
    offsets = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
    return blob[offsets + np.arange(len(offsets), dtype=np.int64)], sizes
