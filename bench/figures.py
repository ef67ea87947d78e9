"""The one percentile the benches print (`percentile(values, 95)`), so that a p95 means the same
in every bench: numpy's "inverted_cdf", the nearest rank (the smallest value with at least p % of
the values at or below it; no interpolation between two measured times)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

__all__ = ["median_p95_ms", "percentile"]


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of ``values``, one of them."""
    return float(np.percentile(values, p, method="inverted_cdf"))


def median_p95_ms(seconds: Sequence[float], width: int = 6, digits: int = 2) -> str:
    """"median / p95" of times in seconds, printed in milliseconds."""
    return f"{statistics.median(seconds) * 1000:{width}.{digits}f} / {percentile(seconds, 95) * 1000:{width}.{digits}f}"
