"""The GIL's switch interval, shortened, so the event loop waits less for the GIL behind busy threads.

A thread that holds the GIL gives it up only once another has waited `sys.getswitchinterval()`
(5 ms by default), so the event loop's thread, taking the GIL back after each system call,
waits that long behind a memory thread running Python (CPython's convoy effect: gh-52194,
gh-90204). `shorten_switch_interval()` sets it to `SWITCH_INTERVAL_S` (the measurements:
docs/decisions/0018-gil-switch-interval.md).

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
