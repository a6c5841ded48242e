"""Statistics from raw samples; the JSON format round-trips."""

from __future__ import annotations

import pytest

from scenarios import report
from scenarios.results import PhaseResult, ResultsError, RunResult, Sample, Stats


def test_stats_from_raw_values() -> None:
    s = Stats.of([1.0, 2.0, 3.0])
    assert s.median == 2.0 and s.mean == 2.0 and s.stdev == 1.0
    assert s.rsd == pytest.approx(0.5) and s.noisy
    assert not Stats.of([1.0, 1.05, 0.95]).noisy
    assert Stats.of([4.0]).rsd == 0.0


def test_round_trip_and_version_check() -> None:
    run = RunResult(
        metadata={"date": "today"},
        results=(
            PhaseResult(
                "file",
                "small",
                "commit processes",
                (Sample(0.5, 0.25, 0, 539), Sample(0.7, 0.3, 0, 539)),
            ),
        ),
    )
    again = RunResult.from_json(run.to_json())
    assert again == run
    assert again.get("file", "commit processes").wall.median == pytest.approx(0.6)
    bad = run.to_json() | {"schema_version": 99}
    with pytest.raises(ResultsError, match="unsupported schema_version 99"):
        RunResult.from_json(bad)


def test_table_marks_noisy_cells() -> None:
    run = RunResult(
        metadata={},
        results=(
            PhaseResult("a", "small", "p", (Sample(1.0, 1.0), Sample(1.0, 1.0))),
            PhaseResult("b", "small", "p", (Sample(1.0, 1.0), Sample(3.0, 1.0))),
        ),
    )
    text = report.text(run)
    row = next(ln for ln in text.splitlines() if ln.startswith("p "))
    assert "1.00 ±0%" in row and "2.00 ±71%!" in row
