"""The JSON derived from a model's fields (vfab.codec): every
model that takes its to_json and from_json from there reads back what it
wrote, and the checked-in files write again what they hold."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from scenarios.ab.model import ABRun, PairedCell, SideInfo
from scenarios.census.model import ClassCount, Revisions
from scenarios.checker.check import not_checked
from scenarios.clients.loop import ClientPlan
from scenarios.clients.zeoloop import Row
from scenarios.counts.model import CountRun
from scenarios.load.clock import Clock
from scenarios.load.history import Access, Event, Session
from scenarios.load.mix import LoadConfig
from scenarios.matrix.config import MatrixConfig
from scenarios.matrix.model import MatrixRun
from scenarios.release.parts import PartResult
from scenarios.results.model import RunResult
from scenarios.results.significance import interval
from scenarios.scale.config import Fault, ScaleConfig
from scenarios.scale.model import ScaleRun
from scenarios.sweep.config import SweepConfig
from scenarios.sweep.model import SweepRun
from scenarios.verify.runner import CONTENTION, VerifyConfig
from scenarios.verify.scenarios import ScenarioResult
from tests.conftest import DATA
from tests.test_imports import modules
from vfab import codec


def _through_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def held(old: Any, new: Any) -> bool:
    """Whether *new* holds *old* unchanged: the same values, in objects
    the same keys in the same order, plus fields added since *old*."""
    if isinstance(old, dict):
        return (
            isinstance(new, dict)
            and [k for k in new if k in old] == list(old)
            and all(held(v, new[k]) for k, v in old.items())
        )
    if isinstance(old, list):
        return (
            isinstance(new, list)
            and len(old) == len(new)
            and all(held(a, b) for a, b in zip(old, new, strict=True))
        )
    return type(old) is type(new) and old == new


#: Every checked-in file of a stored kind, by its kind: those that write
#: again byte for byte, and those that gain fields added since (scale's
#: "hosts", "incomplete"; counts' "layout").
EXACT: list[tuple[Any, str]] = [
    (RunResult, "run-*.json"),
    (RunResult, "releases/*/table.json"),
    (RunResult, "releases/*/million.json"),
    (SweepRun, "sweep.json"),
    (MatrixRun, "matrix.json"),
]
GROWN: list[tuple[Any, str]] = [
    (ScaleRun, "scale.json"),
    (ScaleRun, "releases/*/scale.json"),
    (CountRun, "releases/*/counts.json"),
]


def _checked_in(kinds: list[tuple[Any, str]]) -> list[tuple[Any, Path]]:
    return [(cls, p) for cls, glob in kinds for p in sorted(DATA.glob(glob))]


@pytest.mark.parametrize(
    "cls,path",
    _checked_in(EXACT),
    ids=[str(p.relative_to(DATA)) for _, p in _checked_in(EXACT)],
)
def test_a_checked_in_file_writes_again_as_it_is(cls: Any, path: Path) -> None:
    data = json.loads(path.read_text())
    run = cls.from_json(data)
    assert json.dumps(run.to_json()) == json.dumps(data)
    assert cls.from_json(_through_json(run.to_json())) == run


@pytest.mark.parametrize(
    "cls,path",
    _checked_in(GROWN),
    ids=[str(p.relative_to(DATA)) for _, p in _checked_in(GROWN)],
)
def test_an_older_checked_in_file_keeps_what_it_holds(cls: Any, path: Path) -> None:
    data = json.loads(path.read_text())
    run = cls.from_json(data)
    assert held(json.loads(path.read_text()), run.to_json())
    assert cls.from_json(_through_json(run.to_json())) == run


def samples() -> list[Any]:
    """One instance of every model whose JSON the codec derives."""
    run = RunResult.from_json(json.loads((DATA / "run-3.json").read_text()))
    scale = ScaleRun.from_json(json.loads((DATA / "scale.json").read_text()))
    counts = CountRun.load(DATA / "releases" / "a" / "counts.json")
    side = SideInfo("A", "venv", "/v", "/v/bin/python", None, False, {"cpu": [0]}, {})
    pair = PairedCell("rows", "file", "commit processes", (0.01, 0.02), (0.011, 0.02))
    return [
        side,
        pair,
        ABRun("duet", side, side, (pair,), {"date": "2026-12-02"}, overlap=(0.9,)),
        run.results[0],
        run.results[0].samples[0],
        run.trials[0],
        counts.results[0].samples[0],
        ClassCount("vfab.model.User", 20, 1234, 21, 1),
        ClassCount("persistent.mapping.PersistentMapping", 1, 80),
        Revisions(transactions=3, records=40, current=38, old=2, unreachable=0),
        Fault("kill-server", 2.0, 1.5),
        Fault("kill-client", 1.0),
        ScenarioResult("read current", "violation", "b['x'] is 'failed'"),
        scale.points[0].check,
        not_checked("the server went away"),
        ClientPlan(LoadConfig(skew=0.5), 1.0, 2.0, 7.0, timeline=True, windows=3),
        Row("all", 120, 60.0, 2, 0, 1.5, 4.0, 9.25),
        interval([0.012, 0.011, 0.013, 0.02]),
        interval([0.5]),
        EVENT,
        Session("c1", Clock(0.5, 0.01, "boot"), "FileStorage", True, "same process"),
    ]


#: An attempt with every field set (its accesses in their compact lists).
EVENT = Event(
    "c1", 4, "match_price", "ok", None, "0f" * 8,
    (Access("price", 7, 2, 500, "d" * 16, True),), (Access("stock", "lab1", 3, 9),),
    1.5, 2.5, "0e" * 8,
)  # fmt: skip


def test_an_event_keeps_the_format_s_order_and_compact_accesses() -> None:
    """docs/history-format.md's order (Event.JSON_ORDER), not the fields'."""
    data = EVENT.to_json()
    assert list(data) == [
        "client", "n", "op", "outcome", "error", "tid", "snapshot", "start", "end",
        "reads", "writes",
    ]  # fmt: skip
    assert data["reads"] == [["price", 7, 2, 500, "d" * 16, 1]]
    assert data["writes"] == [["stock", "lab1", 3, 9, ""]]


def test_every_model_reads_back_what_it_writes() -> None:
    for value in samples():
        data = value.to_json()
        assert data == codec.encode(value) or type(value).__name__ == "Check"
        assert type(value).from_json(_through_json(data)) == value, value


def test_every_model_with_the_codec_is_tested_here() -> None:
    """Read from the source, not by importing every module (the locust
    glue's import patches the process for gevent)."""
    models = set()
    for path in modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base).endswith("Json") for base in node.bases
            ):
                models.add(node.name)
    # Stored's own (the files') are tested on the checked-in files above.
    assert models - {"Stored"} == {type(v).__name__ for v in samples()}


def test_a_field_may_have_another_key() -> None:
    count = ClassCount("vfab.model.User", 20, 1234)
    assert list(count.to_json()) == [
        "class", "count", "bytes", "revisions", "old_revisions"
    ]  # fmt: skip
    assert ClassCount.from_json(count.to_json()) == count
    sweep = SweepRun.from_json(json.loads((DATA / "sweep.json").read_text()))
    assert list(sweep.to_json())[-1] == "results"


@pytest.mark.parametrize("cls,name", [(MatrixConfig, "matrix"), (SweepConfig, "sweep")])
def test_a_config_writes_what_the_checked_in_file_records(cls: Any, name: str) -> None:
    """A config's JSON (codec.derived: JSON_SKIP, JSON_AS) is the object
    the file's metadata holds, its options every registered group's."""
    recorded = json.loads((DATA / f"{name}.json").read_text())["metadata"]["config"]
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in recorded.items()}
    del values["options"]
    assert json.dumps(cls(**values).to_json()) == json.dumps(recorded)


def test_verify_records_its_config_and_the_load_it_makes() -> None:
    config = VerifyConfig(("file",), clients=(2,), budget_s=30.0, seed=4)
    data = config.to_json()
    assert json.dumps(data) == json.dumps(
        {
            **dict(storages=["file"], clients=[2], budget_s=30.0, scenarios=True),
            **dict(skew=2.0, scale=1, seed=4, weights=CONTENTION, window_s=30.0),
        }
    )


def test_a_scale_config_writes_what_the_checked_in_file_records() -> None:
    """Its load's mix among its fields (JSON_FLAT, JSON_AS); the file
    predates the fields since (concurrency, clients per process, workers)."""
    path = DATA / "releases" / "a" / "scale.json"
    recorded = json.loads(path.read_text())["metadata"]["config"]
    mix = {k: recorded.pop(k) for k in ("weights", "skew", "retries", "backoff_ms")}
    load = LoadConfig(**{**mix, "weights": tuple(mix["weights"].items())})
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in recorded.items()}
    data = ScaleConfig(**values, load=load).to_json()
    recorded = json.loads(path.read_text())["metadata"]["config"]
    assert held(recorded, data)
    assert list(data)[len(recorded) :] == [
        "concurrency", "clients_per_process", "workers"
    ]  # fmt: skip


def test_a_release_part_records_its_outcome_not_its_report() -> None:
    part = PartResult("scale", "curve", "failed", "why", ["scale.json"], "report")
    assert list(part.to_json().items()) == [
        ("name", "scale"), ("title", "curve"), ("status", "failed"),
        ("detail", "why"), ("files", ["scale.json"]),
    ]  # fmt: skip
