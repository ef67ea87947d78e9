"""The start-up heap, frozen out of the garbage collector's full scans.

A long-running bot imports discord.py, openai, chromadb and numpy: most of the objects the
garbage collector tracks come from those imports and live as long as the process. CPython's full (generation 2) collection walks every
tracked object while it holds the GIL, so each one stalls the event loop for as long as the
walk takes, and most of that walk is this start-up heap (bench/README.md, the load part).
`freeze_start_up_heap()`, called once after the imports, collects what start-up left behind and
moves the rest to the permanent generation (`gc.freeze`), which no collection scans; the
objects are still freed when their last reference goes.
The local embedding model, loaded later in the background, is frozen the same way once it
has loaded (memory.semantic.embeddings).

Part of bot/: imports only the standard library.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["freeze_start_up_heap"]

log = logging.getLogger(__name__)


def freeze_start_up_heap() -> int:
    """Collect start-up garbage, freeze what remains; how many objects are frozen now."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("start-up heap: %d objects frozen out of the garbage collector's full scans", frozen)
    return frozen
