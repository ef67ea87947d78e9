"""What every bench prints the same way: the one percentile (`percentile(values, 95)`), so that a
p95 means the same in every bench: numpy's "inverted_cdf", the nearest rank (the smallest value
with at least p % of the values at or below it; no interpolation between two measured times);
and the commit a measured checkout was at (`commit_of(path)`), for the output's head."""

from __future__ import annotations

import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["commit_of", "median_p95_ms", "percentile"]


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of ``values``, one of them."""
    return float(np.percentile(values, p, method="inverted_cdf"))


def median_p95_ms(seconds: Sequence[float], width: int = 6, digits: int = 2) -> str:
    """"median / p95" of times in seconds, printed in milliseconds."""
    return f"{statistics.median(seconds) * 1000:{width}.{digits}f} / {percentile(seconds, 95) * 1000:{width}.{digits}f}"


def commit_of(path: Path) -> str:
    """The short hash of the commit checked out at ``path``, or "not a git checkout"."""
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "not a git checkout"
