"""glibc's malloc thresholds, pinned, so that memory the bot's threads free goes back to the system.

glibc serves a block of at least `M_MMAP_THRESHOLD` (128 KiB at start) with its own mmap, given
back when it is freed, and trims an arena's free end (its "top") once that end exceeds
`M_TRIM_THRESHOLD` (128 KiB). Both thresholds are dynamic by default: each time a mmapped block
is freed, the mmap threshold rises to that block's size (up to 32 MiB) and the trim threshold to
twice it. The bot's imports alone raise them (after them a 200 KiB block no longer gets its own
mmap). From then on such blocks are carved from the arenas, and each arena glibc gives the
bot's other threads keeps up to the raised trim threshold of free memory at its end, resident.
Under load those arenas' RSS grew round after round while CPython's own allocator held the same,
and `malloc_trim` does not help there: it trims the main arena's end only (bench/README.md, "RSS
after warm-up: glibc's thresholds").

`pin_malloc_thresholds()` sets both to 1 MiB with `mallopt`, which also ends their dynamic
raising: each arena then keeps at most 1 MiB free at its end. 1 MiB, not glibc's starting
128 KiB: both kept the bot's RSS flat after warm-up, but at 128 KiB every array over it (a
heavy user's scores and columns) got its own mmap and fresh page faults, and the memory bench's
heavy user searched and loaded slower (bench/README.md, "The malloc pin: 1 MiB, not 128 KiB").

An operator's own choice wins: with glibc's variables for them in the environment
(`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, or a `GLIBC_TUNABLES` naming them)
nothing is changed. Python has no binding for mallopt, hence ctypes; on a C library
without it (musl) nothing is done.

Part of bot/: imports only the standard library.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Mapping

__all__ = ["THRESHOLD_BYTES", "pin_malloc_thresholds"]

log = logging.getLogger(__name__)

THRESHOLD_BYTES = 1024 * 1024  # what an arena may keep free at its end; larger blocks get their own mmap
_M_TRIM_THRESHOLD = -1         # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_OPERATOR_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
_OPERATOR_TUNABLES = ("glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold")


def pin_malloc_thresholds(environ: Mapping[str, str]) -> bool:
    """Pin glibc's mmap and trim thresholds at `THRESHOLD_BYTES` in this process, unless
    `environ` sets either itself; whether they were pinned."""
    tunables = environ.get("GLIBC_TUNABLES", "")
    if any(name in environ for name in _OPERATOR_VARIABLES) or any(t in tunables for t in _OPERATOR_TUNABLES):
        log.info("malloc thresholds: left as the environment sets them")
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the symbols this process already has: glibc's, if any
    except (OSError, AttributeError):
        log.info("malloc thresholds: no glibc mallopt here, left as they are")
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    pinned = bool(mallopt(_M_TRIM_THRESHOLD, THRESHOLD_BYTES)) and bool(mallopt(_M_MMAP_THRESHOLD, THRESHOLD_BYTES))
    if pinned:
        log.info("malloc thresholds: pinned at %d bytes (freed memory goes back to the system)", THRESHOLD_BYTES)
    else:
        log.warning("malloc thresholds: mallopt refused %d bytes; left as they are", THRESHOLD_BYTES)
    return pinned
