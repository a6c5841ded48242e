"""Check, the consistency check's result as the commands keep it: its JSON
is the shape each writer of it wrote (keys and their order), and every
older shape reads back and writes again unchanged."""

from __future__ import annotations

import copy
import json

from scenarios.checker.check import Check, not_checked
from scenarios.scale.model import ScaleRun
from scenarios.scale.report import violations_cell
from tests.conftest import DATA
from tests.support.checker_histories import T, check

#: The keys of a check's JSON, in order, as the checker writes them.
CHECKED = [
    "checked", "ok", "summary", "what", "counts", "problems", "violations",
    "tally", "seconds", "level", "ruled_out", "promise", "anomalies",
    "allowed", "not_checked", "unexplained",
]  # fmt: skip
NOT_CHECKED = [
    "checked", "ok", "summary", "what", "counts", "problems", "violations",
    "tally", "not_checked",
]  # fmt: skip


def test_a_judged_check_writes_every_key_and_reads_back() -> None:
    t1 = T("a", writes=(("x", 1), ("y", 2)), tid=0x10)
    t2 = T("b", writes=(("x", 2), ("y", 1)), tid=0x11)
    result = check([t1, t2]).result()
    data = result.to_json()
    assert list(data) == CHECKED
    assert data["ok"] is False and data["seconds"] is None  # judged in-process
    assert data["violations"][0]["kind"] == "dependency cycle"
    assert result.found == 2  # listed once, counted once
    back = Check.from_json(json.loads(json.dumps(data)))
    assert back == result and back.to_json() == data


def test_a_check_that_did_not_run_says_why() -> None:
    result = not_checked("the server went away")
    data = result.to_json()
    assert list(data) == NOT_CHECKED
    assert data["summary"] == "consistency not checked: the server went away"
    assert result.why_not == ("the server went away",)
    assert result.details() == []
    assert Check.from_json(data) == result


def test_an_older_check_writes_again_as_it_was_read() -> None:
    """tests/data/scale.json's checks have no level (before history format
    2): nothing is added to them."""
    data = json.loads((DATA / "scale.json").read_text())
    for point in data["points"]:
        inv = point["invariants"]
        assert "level" not in inv
        assert Check.from_json(inv).to_json() == inv


def test_a_scale_file_of_format_1_reads_its_check() -> None:
    """Format 1 kept whether the check held and its words, no violations:
    the point reads with none listed, and the table says "0" or "yes"."""
    data = json.loads((DATA / "scale.json").read_text())
    old = copy.deepcopy(data)
    old["schema_version"] = 1
    for point in old["points"]:
        inv = point["invariants"]
        point["invariants"] = {k: inv[k] for k in ("checked", "ok", "summary")}
        point["invariants"]["problems"] = []
        for key in ("windows", "summary", "arrivals", "served"):
            point.pop(key, None)
    run = ScaleRun.from_json(old)
    new = ScaleRun.from_json(data)
    for was, now in zip(run.every_point, new.every_point, strict=True):
        assert was.check.violations is None
        assert was.check.what == "the check of format 1 (acknowledged writes only)"
        assert (was.check.ok, was.check.summary) == (now.check.ok, now.check.summary)
        assert violations_cell(was.check) == ("0" if now.check.ok else "yes")
        assert violations_cell(now.check) == str(len(now.check.violations or ()))
