"""The JSON derived from a model's fields (scenarios.results.codec): every
model that takes its to_json and from_json from there reads back what it
wrote, and the checked-in files write again what they hold."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from scenarios.ab.model import ABRun, PairedCell, SideInfo
from scenarios.census.model import ClassCount, History
from scenarios.checker.check import not_checked
from scenarios.counts.model import CountRun
from scenarios.matrix.model import MatrixRun
from scenarios.results import codec
from scenarios.results.model import RunResult
from scenarios.scale.config import Fault
from scenarios.scale.model import ScaleRun
from scenarios.sweep.model import SweepRun
from scenarios.verify.scenarios import ScenarioResult
from tests.conftest import DATA
from tests.test_imports import modules

#: Each stored kind and a checked-in file of it.
FILES: list[tuple[Any, Path]] = [
    (RunResult, DATA / "run-3.json"),
    (SweepRun, DATA / "sweep.json"),
    (MatrixRun, DATA / "matrix.json"),
    (ScaleRun, DATA / "scale.json"),
    (CountRun, DATA / "releases" / "a" / "counts.json"),
]


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


@pytest.mark.parametrize("cls,path", FILES, ids=[p.name for _, p in FILES])
def test_a_file_writes_again_what_it_holds(cls: Any, path: Path) -> None:
    """Written again, a file keeps every value and key order; it gains the
    fields added since it was written (tests/data/scale.json: "hosts",
    "incomplete"; counts.json: "layout")."""
    data = json.loads(path.read_text())
    run = cls.from_json(data)
    assert held(data, run.to_json())
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
        History(transactions=3, records=40, current=38, old=2, unreachable=0),
        Fault("kill-server", 2.0, 1.5),
        Fault("kill-client", 1.0),
        ScenarioResult("read current", "violation", "b['x'] is 'failed'"),
        scale.points[0].check,
        not_checked("the server went away"),
    ]


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
