"""glibc's malloc thresholds, pinned, so that memory the bot's threads free goes back to the system.

glibc raises its mmap and trim thresholds as the process frees large blocks, after which each
arena of the bot's threads keeps that much free memory at its end, resident.
`pin_malloc_thresholds()` sets both to `THRESHOLD_BYTES` with `mallopt`, which also ends the
raising (why 1 MiB: docs/decisions/0019-malloc-pin.md).

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
