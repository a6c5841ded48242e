"""A run in pyperf's JSON format (--pyperf), for `pyperf compare_to`, `stats`
and `hist`: a benchmark per row and storage, a trial a run of one value
(how the fields map: docs/internals.md).
"""

from __future__ import annotations

import io
from typing import Any

from scenarios.results import significance
from scenarios.results.model import RunResult

#: The value written for a trial the clock timed at zero (pyperf wants > 0).
SMALLEST_S = 1e-9


def benchmark_name(storage: str, phase: str, size: str, several: bool) -> str:
    name = f"{storage}: {phase}"
    return f"{name} [{size}]" if several else name


def _metadata(run: RunResult) -> dict[str, Any]:
    meta = run.metadata
    out: dict[str, Any] = {
        "unit": "second",
        "loops": 1,
        "statistic": significance.recorded(meta),
    }
    python = meta.get("python") or {}
    host = meta.get("host") or {}
    for key, value in (
        ("date", meta.get("date")),
        ("python_version", python.get("version")),
        ("python_implementation", python.get("implementation")),
        ("hostname", host.get("hostname")),
        ("platform", host.get("platform")),
        ("cpu_count", host.get("cpu_count")),
    ):
        if isinstance(value, (str, int)) and not isinstance(value, bool) and value:
            out[key] = value
    for name, version in (meta.get("versions") or {}).items():
        if isinstance(version, str) and version:
            out[f"{name.lower()}_version"] = version
    return out


def suite(run: RunResult) -> Any:
    """The run as a pyperf.BenchmarkSuite."""
    import pyperf

    common = _metadata(run)
    several = len(run.sizes) > 1
    benchmarks = []
    for r in run.results:
        name = benchmark_name(r.storage, r.phase, r.size, several)
        meta = {
            **common,
            "name": name,
            "storage": r.storage,
            "phase": r.phase,
            "size": r.size,
        }
        runs = [
            pyperf.Run([max(v, SMALLEST_S)], metadata=meta, collect_metadata=False)
            for v in r.wall_values
        ]
        benchmarks.append(pyperf.Benchmark(runs))
    return pyperf.BenchmarkSuite(benchmarks)


def text(run: RunResult) -> str:
    """The pyperf JSON of *run*, as a file holds it."""
    out = io.StringIO()
    suite(run).dump(out, compact=False)
    return out.getvalue()
