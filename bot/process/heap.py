"""The start-up heap, frozen out of the garbage collector's full scans.

Most of the objects the garbage collector tracks come from the imports (discord.py, openai,
chromadb, numpy) and live as long as the process, and a full collection walks them all while
holding the GIL. `freeze_start_up_heap()`, called once after the imports, collects what start-up
left behind and moves the rest to the permanent generation (`gc.freeze`), which no collection
scans; the objects are still freed when their last reference goes. The local embedding model,
loaded later, is frozen the same way (memory.semantic.embeddings). Why:
docs/decisions/0015-gc-freeze-and-packed-items.md.

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
