"""Storing a turn: a finished turn's memory items, buffer rows and trace, whole or not at all.

- `persistence`: TurnStore, stores one finished turn (compensating a failed one), settles what
  cut turns left at start, and sweeps for them while entered.
- `coalescing`: CoalescingAdder, concurrent turns' memory writes in one `add_many` call.
- `reconcile`: reconcile_memory and write_deferred, the write log's leftovers settled.
"""

from __future__ import annotations

from bot.turn_store.coalescing import CoalescingAdder
from bot.turn_store.persistence import TurnStore, exchange_items, has_visible_text
from bot.turn_store.reconcile import reconcile_memory, write_deferred

__all__ = ["CoalescingAdder", "TurnStore", "exchange_items", "has_visible_text", "reconcile_memory",
           "write_deferred"]
