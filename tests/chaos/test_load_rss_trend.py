"""The load part's RSS trend (bench/chaos_load.py): growth per round over the last half of the
rounds, as a least-squares slope, so that warm-up does not count and one spike counts little."""

from __future__ import annotations

import pytest

from bench.chaos_load import LoadReport


def test_growth_is_the_slope_of_the_last_half_of_the_rounds_only() -> None:
    warm_up = [(100.0, 200.0), (150.0, 300.0), (160.0, 310.0)]  # the first half grows fast
    late = [(170.0 + 2 * r, 320.0 + 5 * r) for r in range(4)]  # then 2 and 5 MB a round
    report = LoadReport(rss_rounds=[*warm_up, *late[:1], *late])
    assert report.late_rounds() == range(4, 8)
    assert report.rss_growth_per_round() == pytest.approx((2.0, 5.0))


def test_flat_rounds_with_one_spike_grow_by_a_fraction_of_the_spike() -> None:
    rounds = [(150.0, 300.0)] * 9 + [(150.0, 310.0)]  # round 10 is 10 MB up
    growth = LoadReport(rss_rounds=rounds).rss_growth_per_round()
    assert growth is not None
    assert growth[0] == 0.0 and 0 < growth[1] < 3.0  # a difference of two rounds would say 10


@pytest.mark.parametrize("count", [0, 1, 4])
def test_under_five_rounds_there_is_no_trend(count: int) -> None:
    assert LoadReport(rss_rounds=[(1.0, 2.0)] * count).rss_growth_per_round() is None


def test_open_files_and_threads_trend_over_the_last_half_of_the_rounds_too() -> None:
    warm_up = [(20, 10), (60, 30), (61, 31)]  # files and threads opened while warming up
    late = [(62 + r, 31) for r in range(4)]  # then one file more each round, threads flat
    report = LoadReport(handles_rounds=[*warm_up, *late[:1], *late])
    assert report.handles_growth_per_round() == pytest.approx((1.0, 0.0))
    assert LoadReport(handles_rounds=[(1, 1)] * 4).handles_growth_per_round() is None
