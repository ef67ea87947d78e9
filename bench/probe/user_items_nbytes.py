"""What MEMORY_CACHE_MB bounds: one person's `UserItems.nbytes` at a few sizes, on the memory
bench's corpus texts and 384-dimension vectors, printed per 1,000 items.

Run: `python bench/probe/user_items_nbytes.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from figures import commit_of  # noqa: E402
from memory_corpus import texts  # noqa: E402
from memory.semantic.chroma_backend import StoredItem  # noqa: E402
from memory.semantic.user_items import UserItems  # noqa: E402

SIZES = (5_000, 50_000, 150_000)


def main() -> None:
    print("# UserItems.nbytes (what MEMORY_CACHE_MB bounds) of one person, bench corpus texts, "
          f"384-d vectors; commit {commit_of(ROOT)}")
    for n in SIZES:
        entry = UserItems()
        entry.append([StoredItem(f"id{i}", t, {"scope": "guild:1", "created_at": float(i), "user_id": "u"})
                      for i, t in enumerate(texts(n, 7))], np.ones((n, 384), np.float32))
        print(f"{n:>8,} items: {entry.nbytes / 2**20:8.1f} MB, {entry.nbytes / n * 1000 / 2**20:.2f} MB per 1,000 items")


if __name__ == "__main__":
    main()
