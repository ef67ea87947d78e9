"""The GIL's switch interval, shortened, so the event loop waits less for the GIL behind busy threads.

The memory's worker threads run Python for long stretches (a bulk write's tokenizing and
postings, a snapshot's columns). When the event loop's thread wakes from its poll it must take
the GIL back, and CPython makes a thread that holds it give it up only once another has waited
`sys.getswitchinterval()` (5 ms by default); one pass of the loop that lets go of the GIL and
takes it again a few times (each system call does) waits that long each time. The kernel's
record of the memory bench's growth stalls showed exactly that: one stall of 12 ms made of
three waits of about 5 ms in `take_gil` (bench/README.md, "The GIL's switch interval"). This is
CPython's convoy effect, where a thread doing I/O waits behind one computing (CPython issues
gh-52194 (bpo-7946) and gh-90204 (bpo-46046)).

`shorten_switch_interval()` sets it to `SWITCH_INTERVAL_S` (1 ms): each such wait is then about
1 ms, at the price of more GIL hand-overs between busy threads (the bench's growth and search
rates did not change measurably).

Part of bot/: imports only the standard library.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["SWITCH_INTERVAL_S", "shorten_switch_interval"]

log = logging.getLogger(__name__)

SWITCH_INTERVAL_S = 0.001


def shorten_switch_interval() -> float:
    """Set this interpreter's switch interval to `SWITCH_INTERVAL_S`; the interval now (s)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    interval = sys.getswitchinterval()
    log.info("GIL switch interval: %g ms (the event loop waits less behind busy threads)", interval * 1000)
    return interval
