"""Result files that are valid JSON of the right kind and version but not a
valid result (issue 21, item 3): every variant is one line naming the file
and the field, exit 2, no traceback, in report, report --html (run and
--sweep) and compare (as OLD and as NEW); nothing is written.

The valid files were written by the commands themselves (tests/data/);
each variant changes one field of a copy."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scenarios.results import schema
from scenarios.results.files import ResultsError
from scenarios.scale.model import ScaleRun
from tests.cli.test_failure_paths import tree_digest
from tests.conftest import DATA
from tests.support.cli_helpers import run_cli
from vfab import codec

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def valid() -> dict[str, dict[str, Any]]:
    """A run file and a sweep file (tests/data/run-3.json, sweep.json)."""
    return {
        "run": json.loads((DATA / "run-3.json").read_text()),
        "sweep": json.loads((DATA / "sweep.json").read_text()),
    }


def sample(d: dict[str, Any]) -> dict[str, Any]:
    return d["results"][0]["samples"][0]


def setter(get: Callable[[dict[str, Any]], Any], key: Any, value: Any) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        get(d)[key] = value

    return edit


def deleter(get: Callable[[dict[str, Any]], Any], key: Any) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        del get(d)[key]

    return edit


def top(d: dict[str, Any]) -> dict[str, Any]:
    return d


def meta(d: dict[str, Any]) -> dict[str, Any]:
    return d["metadata"]


def first(d: dict[str, Any]) -> dict[str, Any]:
    return d["results"][0]


def trial(d: dict[str, Any]) -> dict[str, Any]:
    return d["trials"][0]


def config(d: dict[str, Any]) -> dict[str, Any]:
    return d["metadata"]["config"]


def options(d: dict[str, Any]) -> dict[str, Any]:
    return d["metadata"]["config"]["options"]


def versions(d: dict[str, Any]) -> dict[str, Any]:
    return d["metadata"]["versions"]


def host(d: dict[str, Any]) -> dict[str, Any]:
    return d["metadata"]["host"]


def environment(d: dict[str, Any]) -> dict[str, Any]:
    return d["metadata"]["environment"]


def twice(d: dict[str, Any]) -> None:
    """The first result again, at the end: a row found by its storage,
    size and phase (a sweep's point: storage, variant, objects) twice."""
    d["results"].append(copy.deepcopy(d["results"][0]))


INF = float("inf")
NESTED = json.loads("[" * 50 + "]" * 50)

#: (id, kind, edit, the field the one line must name)
RUN_VARIANTS: list[tuple[str, Edit, str]] = [
    ("wall is text", setter(sample, "wall_s", "fast"), "samples[0].wall_s"),
    ("wall is null", setter(sample, "wall_s", None), "samples[0].wall_s"),
    ("wall is infinite", setter(sample, "wall_s", INF), "samples[0].wall_s"),
    ("wall is NaN", setter(sample, "wall_s", float("nan")), "samples[0].wall_s"),
    ("wall is negative", setter(sample, "wall_s", -1.0), "samples[0].wall_s"),
    ("wall is huge", setter(sample, "wall_s", 1e300), "samples[0].wall_s"),
    ("wall is true", setter(sample, "wall_s", True), "samples[0].wall_s"),
    ("wall is a list", setter(sample, "wall_s", [1]), "samples[0].wall_s"),
    ("cpu is missing", deleter(sample, "cpu_s"), "'cpu_s'"),
    ("loads is a float", setter(sample, "loads", 1.5), "samples[0].loads"),
    ("loads is 10**400", setter(sample, "loads", 10**400), "samples[0].loads"),
    ("unknown sample field", setter(sample, "colour", 1), "'colour'"),
    ("gc is text", setter(sample, "gc_s", "x"), "samples[0].gc_s"),
    ("no samples", setter(first, "samples", []), "results[0].samples"),
    ("samples is an object", setter(first, "samples", {}), "results[0].samples"),
    ("a sample is a number", setter(first, "samples", [3]), "results[0].samples[0]"),
    ("phase is a number", setter(first, "phase", 3), "results[0].phase"),
    ("storage is null", setter(first, "storage", None), "results[0].storage"),
    ("size is missing", deleter(first, "size"), "'size'"),
    ("no results", setter(top, "results", []), "results"),
    ("results is text", setter(top, "results", "x"), "results"),
    ("results nested deep", setter(top, "results", NESTED), "results[0]"),
    ("trials is an object", setter(top, "trials", {}), "trials"),
    ("trial objects is text", setter(trial, "objects", "x"), "trials[0].objects"),
    ("trial stats is a list", setter(trial, "stats", []), "trials[0].stats"),
    ("metadata is a list", setter(top, "metadata", [1]), "metadata"),
    ("metadata is null", setter(top, "metadata", None), "metadata"),
    ("config is text", setter(meta, "config", "x"), "metadata.config"),
    ("statistic is a number", setter(config, "statistic", 1), "config.statistic"),
    ("options is a list", setter(config, "options", []), "config.options"),
    ("cache size is text", setter(options, "cache_size", "x"), "options.cache_size"),
    ("scale is zero", setter(config, "scale", 0), "metadata.config.scale"),
    ("seed is text", setter(config, "seed", "x"), "metadata.config.seed"),
    ("versions is a list", setter(meta, "versions", [1]), "metadata.versions"),
    ("a version is a number", setter(versions, "ZODB", 6), "versions.ZODB"),
    ("python is text", setter(meta, "python", "3.11"), "metadata.python"),
    ("host cpu count is text", setter(host, "cpu_count", "x"), "host.cpu_count"),
    ("command is text", setter(meta, "command", "vfab-bench"), "metadata.command"),
    ("date is a number", setter(meta, "date", 2026), "metadata.date"),
    ("environment is a list", setter(meta, "environment", [1]), "environment"),
    ("probes are text", setter(environment, "speed_probes_s", "x"), "speed_probes_s"),
    ("a probe is infinite", setter(environment, "speed_probes_s", [INF]), "s_s[0]"),
    ("load average is text", setter(environment, "load_average_start", "x"), "start"),
    ("rss is a number", setter(meta, "rss", 1), "metadata.rss"),
    # issue 28: what passed the check and failed in a library, or was shown
    ("wall is 10**400", setter(sample, "wall_s", 10**400), "samples[0].wall_s"),
    ("cpu is -10**400", setter(sample, "cpu_s", -(10**400)), "samples[0].cpu_s"),
    ("schema_version is true", setter(top, "schema_version", True), "schema_version"),
    ("schema_version is 2.0", setter(top, "schema_version", 2.0), "schema_version"),
    ("storage is empty", setter(first, "storage", ""), "results[0].storage"),
    ("storage is blank", setter(first, "storage", "  "), "results[0].storage"),
    ("storage is two lines", setter(first, "storage", "a\nb"), "results[0].storage"),
    ("phase ends in a newline", setter(first, "phase", "x\n"), "results[0].phase"),
    ("trial storage is empty", setter(trial, "storage", ""), "trials[0].storage"),
    ("a result listed twice", twice, "listed twice"),
    ("hostname is two lines", setter(host, "hostname", "a\rb"), "host.hostname"),
    ("a version is two lines", setter(versions, "ZODB", "6\n7"), "versions.ZODB"),
]  # fmt: skip

SWEEP_VARIANTS: list[tuple[str, Edit, str]] = [
    ("a point listed twice", twice, "listed twice"),
    ("storage is empty", setter(first, "storage", ""), "results[0].storage"),
    ("wall is text", setter(sample, "wall_s", "x"), "samples[0].wall_s"),
    ("wall is infinite", setter(sample, "wall_s", INF), "samples[0].wall_s"),
    ("stores is negative", setter(sample, "stores", -1), "samples[0].stores"),
    ("objects is zero", setter(first, "objects", 0), "results[0].objects"),
    ("objects is text", setter(first, "objects", "10"), "results[0].objects"),
    ("variant is a number", setter(first, "variant", 1), "results[0].variant"),
    ("no samples", setter(first, "samples", []), "results[0].samples"),
    ("no results", setter(top, "results", []), "results"),
    ("metadata is text", setter(top, "metadata", "x"), "metadata"),
    ("config seed is text", setter(config, "seed", "x"), "metadata.config.seed"),
]


def variant_file(valid: dict[str, Any], kind: str, edit: Edit, directory: Path) -> Path:
    data = copy.deepcopy(valid[kind])
    edit(data)
    path = directory / f"bad-{kind}.json"
    path.write_text(json.dumps(data))  # inf and NaN as JSON's Infinity, NaN
    return path


def commands(kind: str, bad: Path, good: dict[str, Path]) -> dict[str, list[str]]:
    page = str(bad.parent / "page.html")
    if kind == "run":
        return {
            "report": ["report", str(bad)],
            "report --pyperf": ["report", str(bad), "--pyperf", str(bad) + ".pyperf"],
            "report --html": ["report", str(bad), "--html", page],
            "report --markdown": ["report", str(bad), "--markdown"],
            "compare (old)": ["compare", str(bad), str(good["run"])],
            "compare (new)": ["compare", str(good["run"]), str(bad)],
            "compare --baseline": ["compare", str(bad), "--baseline", "mapping"],
        }
    return {
        "report --sweep": [
            "report",
            str(good["run"]),
            "--sweep",
            str(bad),
            "--html",
            page,
        ],
        "compare (old)": ["compare", str(bad), str(good["sweep"])],
        "compare (new)": ["compare", str(good["sweep"]), str(bad)],
    }


@pytest.mark.parametrize(
    ("kind", "edit", "field"),
    [pytest.param("run", e, f, id=f"run: {i}") for i, e, f in RUN_VARIANTS]
    + [pytest.param("sweep", e, f, id=f"sweep: {i}") for i, e, f in SWEEP_VARIANTS],
)
def test_a_malformed_result_is_one_line_naming_the_file_and_field(
    valid: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    edit: Edit,
    field: str,
) -> None:
    bad = variant_file(valid, kind, edit, tmp_path)
    good = {}
    for name in ("run", "sweep"):
        good[name] = tmp_path / f"good-{name}.json"
        good[name].write_text(json.dumps(valid[name]))
    before = tree_digest(tmp_path)
    for name, args in commands(kind, bad, good).items():
        outcome = run_cli(capsys, *args)
        lines = outcome.err.strip().splitlines()
        assert outcome.status == 2, (name, outcome)
        assert len(lines) == 1, (name, outcome.err)
        assert "Traceback" not in outcome.err
        assert str(bad) in lines[0], (name, lines[0])
        assert field in lines[0], (name, lines[0])
        assert tree_digest(tmp_path) == before, name


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"schema_version": 2, "results": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"schema_version": 2, "results": [], "trials": [], "x": ' + "9" * 5000 + "}",
        '{"schema_version": 2, "results": 1e400, "trials": []}',
    ],
    ids=["deep array", "deep results", "5000-digit integer", "1e400"],
)
def test_json_python_cannot_hold_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "odd.json"
    path.write_text(text)
    for args in (["report", str(path)], ["compare", str(path), str(path)]):
        outcome = run_cli(capsys, *args)
        assert outcome.status == 2, outcome
        assert len(outcome.err.strip().splitlines()) == 1, outcome.err
        assert str(path) in outcome.err


def test_scale_results_are_checked_too(tmp_path: Path) -> None:
    """ScaleRun.load, the reader of `scale --json` files, names the field."""
    point = {
        "storage": "zeo",
        "clients": 1,
        "started": 1,
        "window_s": 1.0,
        "rate": None,
        "hists": {},
        "commits": 1,
        "conflicts": 0,
        "failed": 0,
        "errors": {},
        "backlog": 0,
        "late_s": 0.0,
        "client_cpu_s": 0.1,
        "server_cpu_s": None,
        "log_records": 0,
        "killed_clients": 0,
        # as format 1 wrote a check that did not run
        "invariants": {
            "checked": False,
            "ok": None,
            "summary": "invariants not checked: not run",
            "problems": [],
        },
    }
    good = {"schema_version": 1, "kind": "scale", "metadata": {}, "points": [point]}
    path = tmp_path / "scale.json"
    path.write_text(json.dumps(good))
    assert ScaleRun.load(path).points[0].clients == 1
    for key, value in [
        ("clients", 0),
        ("rate", float("inf")),
        ("commits", "x"),
        ("errors", []),
        ("storage", ""),
        # issue 28: HdrHistogram's own errors, and one past its range
        ("hists", {"browse": "not base64 !!!"}),
        ("hists", {"browse": "SGVsbG8gd29ybGQ="}),  # base64, no histogram
        ("hists", {"browse": _histogram(10**12)}),
    ]:
        path.write_text(json.dumps({**good, "points": [{**point, key: value}]}))
        with pytest.raises(ResultsError, match=rf"{path}: .*points\[0\]\.{key}"):
            ScaleRun.load(path)
    # what report prints of a point: the check's words and the fault's
    # figures (a missing summary was a KeyError in report)
    checked = point["invariants"]
    fault = {"kind": "kill-server", "at_s": 1.0, "restart_s": None,
             "applied_at_s": 1.0, "restarted_at_s": None, "outage_s": 0.5}  # fmt: skip
    for field, value, named in [
        ("invariants", {"checked": True, "ok": True},
         "invariants: missing field 'summary'"),
        ("invariants", {**checked, "summary": 5}, "invariants.summary"),
        ("invariants", {**checked, "problems": "abc"}, "invariants.problems"),
        ("invariants", {**checked, "counts": {"lost write": -1}}, "invariants.counts"),
        ("invariants", {**checked, "ok": "yes"}, "invariants.ok"),
        ("fault", {**fault, "outage_s": "long"}, "fault.outage_s"),
        ("fault", {"kind": "kill-server", "at_s": 1.0, "applied_at_s": 1.0},
         "fault: missing field 'outage_s'"),
        ("fault", {**fault, "errors_during": {"ConflictError": 1.5}},
         "fault.errors_during"),
    ]:  # fmt: skip
        path.write_text(json.dumps({**good, "points": [{**point, field: value}]}))
        with pytest.raises(ResultsError) as raised:
            ScaleRun.load(path)
        assert f"points[0].{named}" in str(raised.value), raised.value
    path.write_text(json.dumps({**good, "points": [{**point, "fault": fault}]}))
    assert ScaleRun.load(path).points[0].fault == fault


def _histogram(us: int) -> str:
    """An encoded HdrHistogram holding *us* microseconds once."""
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram(1, max(us, 2), 3)
    h.record_value(us)
    return str(h.encode().decode("ascii"))


def test_a_scale_point_reads_its_histograms(tmp_path: Path) -> None:
    data = json.loads((DATA / "scale.json").read_text())
    encoded = data["points"][0]["hists"]
    assert encoded and all(schema.Latencies.accepts(v) for v in encoded.values())
    assert schema.Latencies.accepts("") and schema.Latencies.accepts(_histogram(5))
    assert not schema.Latencies.accepts(_histogram(10**12))


def test_names_say_a_fields_kind_where_its_type_does_not() -> None:
    """A storage's, a phase's and a size's name are names (one line, not
    blank: a column, a pyperf benchmark); a histogram is one."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Row:
        storage: str
        phase: str
        hists: dict[str, str]
        note: str

    derived = schema.of(Row)
    assert derived.fields["storage"] is schema.Name
    assert derived.fields["phase"] is schema.Name
    assert derived.fields["hists"] == schema.MapOf(schema.Latencies)
    assert derived.fields["note"] is schema.Text
    assert not schema.Name.accepts("") and not schema.Name.accepts("a\u2028b")
    assert schema.Name.accepts("zlib+file") and schema.Name.accepts("map\x1bping")


def test_the_schema_is_derived_from_the_dataclasses() -> None:
    """A field's kind comes from its type, so a field added to a result
    dataclass is checked without writing it again (schema.of)."""
    import dataclasses

    from scenarios.results.model import RunResult, Sample

    @dataclasses.dataclass(frozen=True)
    class Point:
        name: str
        wall_s: float
        ratio: float
        calls: int | None = None
        flags: tuple[bool, ...] = ()
        extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    derived = schema.of(Point, closed=True, calls=schema.Optional(schema.Positive))
    assert derived.required == ("name", "wall_s", "ratio")
    assert derived.fields == {
        "name": schema.Text,
        "wall_s": schema.Seconds,
        "ratio": schema.Number,
        "calls": schema.Optional(schema.Positive),
        "flags": schema.ListOf(schema.Flag),
        "extra": schema.MapOf(schema.ANY),
    }
    point = codec.build(Point, {"name": "a", "wall_s": 1, "ratio": 2, "flags": [1]})
    assert point == Point("a", 1, 2, None, (True,))
    assert codec.encode(point)["flags"] == [True]
    results = RunResult.schema().fields["results"]
    assert isinstance(results, schema.ListOf) and isinstance(
        results.kind, schema.Object
    )
    samples = results.kind.fields["samples"]
    assert isinstance(samples, schema.ListOf) and isinstance(
        samples.kind, schema.Object
    )
    assert set(samples.kind.fields) == {f.name for f in dataclasses.fields(Sample)}
    assert samples.kind.closed and samples.at_least == 1
