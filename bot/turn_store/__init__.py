"""Storing a turn: a finished turn's memory items, buffer rows and trace, whole or not at all.

- `persistence`: TurnPersister, stores one finished turn and compensates a failed one.
- `coalescing`: CoalescingAdder, concurrent turns' memory writes in one `add_many` call.
- `reconcile`: reconcile_memory and write_deferred, the write log's leftovers settled.
"""

from __future__ import annotations

from bot.turn_store.coalescing import CoalescingAdder
from bot.turn_store.persistence import TurnPersister, exchange_items, has_visible_text
from bot.turn_store.reconcile import reconcile_memory, write_deferred

__all__ = ["CoalescingAdder", "TurnPersister", "exchange_items", "has_visible_text", "reconcile_memory",
           "write_deferred"]
