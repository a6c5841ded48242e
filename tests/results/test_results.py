"""Statistics from raw samples; the JSON format round-trips."""

from __future__ import annotations

import json
import re

import pytest

from scenarios.bench import report
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
    """A cell shows the run's statistic (the minimum unless the run said
    otherwise) and marks "!" only where its bootstrap interval is wide."""
    results = (
        PhaseResult("a", "small", "p", (Sample(1.0, 1.0),) * 4),
        PhaseResult("b", "small", "p", tuple(Sample(v, 1.0) for v in (1, 3, 2, 4))),
        PhaseResult("c", "small", "p", (Sample(0.0004, 0.0004),) * 4),
    )
    row = next(
        ln
        for ln in report.text(RunResult(metadata={}, results=results)).splitlines()
        if ln.startswith("p ")
    )
    # Times in the unit that suits them (formatter.duration), as pyperf's.
    cells = re.findall(r"(\d+(?:\.\d+)?) (s|ms|µs) (±\s*\d+%|~|±\?)(!?)", row)
    assert cells[0] == ("1.00", "s", "±  0%", "")  # steady: zero width
    assert cells[1][:2] == ("1.00", "s") and cells[1][3] == "!"  # a wide interval
    assert cells[2] == ("400", "µs", "~", "")  # under 1 ms: too short to compare
    median = RunResult(metadata={"config": {"statistic": "median"}}, results=results)
    text = report.text(median)
    assert "median of 4 trials" in text and "trial(s)" not in text
    row = next(ln for ln in text.splitlines() if ln.startswith("p "))
    assert re.findall(r"(\d+\.\d+ s) ", row)[1] == "2.50 s"


def test_the_speed_probe_and_its_summary() -> None:
    from scenarios.results import environment

    assert environment.probe() > 0
    env = {"speed_probes_s": [0.001, 0.001, 0.0011, 0.002]}
    s = environment.speed(env)
    assert s is not None
    assert s["n"] == 4 and s["fastest_s"] == 0.001 and s["slow_share"] == 0.25
    line = environment.speed_line(env)
    assert line is not None and "25% of the probes" in line
    assert environment.speed({}) is None and environment.speed_line({}) is None
    faster = {"speed_probes_s": [0.00102] * 4}
    assert environment.speed_warning(env, faster, "A", "B") is None
    slower = {"speed_probes_s": [0.0016] * 4}
    warning = environment.speed_warning(faster, slower, "A", "B")
    assert warning is not None and "1.02 ms in A and 1.60 ms in B" in warning


def test_every_time_cell_shows_the_run_statistic() -> None:
    """One statistic per view: the cost per object built and the time in GC
    are the run's statistic of the trials (they were medians)."""
    from scenarios.bench.rows import BUILD_PHASES

    samples = (Sample(1.0, 1.0, gc_s=0.1), Sample(3.0, 3.0, gc_s=0.3),
               Sample(5.0, 5.0, gc_s=0.5))  # fmt: skip
    run = RunResult(
        metadata={"config": {"statistic": "min"}},
        results=tuple(PhaseResult("file", "small", p, samples) for p in BUILD_PHASES),
        trials=(TrialSummary("file", "small", objects=10),) * 3,
    )
    per_object = len(BUILD_PHASES) * 1.0 / 10
    assert report.cost_per_object(run, "file", "small") == pytest.approx(per_object)
    assert report.cost_per_object(run, "file", "small", stat="median") == pytest.approx(
        3 * per_object
    )
    assert report.part_cell(run.results[0], "gc_s", "min") == "100 ms"
    assert report.part_cell(run.results[0], "batch_commit_s", "min") == "-"
