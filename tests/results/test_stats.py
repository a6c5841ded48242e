"""scenarios.results.stats: summaries computed from raw values."""

from __future__ import annotations

import pytest

from scenarios.results.stats import Stats, percentiles


def test_stats_from_raw_values() -> None:
    s = Stats.of([1.0, 2.0, 3.0])
    assert s.median == 2.0 and s.mean == 2.0 and s.stdev == 1.0
    assert s.rsd == pytest.approx(0.5) and s.noisy
    assert not Stats.of([1.0, 1.05, 0.95]).noisy
    assert Stats.of([4.0]).rsd == 0.0


def test_percentiles_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert list(percentiles(values)) == [50.0, 95.0, 99.0]
    assert all(v != v for v in percentiles([]))  # nan
