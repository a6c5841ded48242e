"""Statistics from raw samples; the JSON format round-trips."""

from __future__ import annotations

import json

import pytest

from scenarios.results import report
from scenarios.results.files import RUN, ResultsError
from scenarios.results.model import PhaseResult, RunResult, Sample, TrialSummary

SCHEMA_VERSION = RUN.version
migrate = RUN.migrate


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


def test_version_2_round_trip_with_trials() -> None:
    sample = Sample(
        0.5,
        0.25,
        0,
        539,
        size_before_bytes=1000,
        size_after_bytes=201_000,
        rss_peak_bytes=40 << 20,
        cache_hits=7,
        batch_commit_s=0.125,
    )
    trial = TrialSummary(
        "zeo",
        "small",
        objects=1027,
        size_bytes=330_000,
        rss_peak_bytes=41 << 20,
        stats={"server": {"loads": 891}, "client_cache": {"hits": 114}},
    )
    run = RunResult(
        metadata={},
        results=(PhaseResult("zeo", "small", "commit processes", (sample,)),),
        trials=(trial,),
    )
    data = json.loads(json.dumps(run.to_json()))
    assert data["schema_version"] == SCHEMA_VERSION == 2
    again = RunResult.from_json(data)
    assert again == run
    r = again.get("zeo", "commit processes")
    assert r is not None and r.size_change_bytes == 200_000 and r.cache_hits == 7
    assert again.trials_of("zeo") == [trial]


def test_version_1_files_still_read() -> None:
    v1 = {
        "schema_version": 1,
        "metadata": {"date": "2024-01-01"},
        "results": [
            {
                "storage": "file",
                "size": "small",
                "phase": "commit processes",
                "samples": [{"wall_s": 0.5, "cpu_s": 0.25, "loads": 0, "stores": 539}],
            }
        ],
    }
    assert migrate(v1)["schema_version"] == SCHEMA_VERSION
    run = RunResult.from_json(v1)
    r = run.get("file", "commit processes")
    assert r is not None and r.stores == 539 and r.size_change_bytes is None
    assert run.trials == ()
    assert "commit processes" in report.text(run)


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
