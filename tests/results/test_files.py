"""scenarios.results.files: one reader for every versioned result file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.results.files import (
    CENSUS,
    MAX_DEPTH,
    RUN,
    SWEEP,
    Format,
    ResultsError,
    nesting,
    read_json,
)
from tests.conftest import DATA


def test_missing_and_not_json_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="cannot read .*missing.json"):
        RUN.read(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ResultsError, match="bad.json is not JSON") as e:
        SWEEP.read(bad)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("fmt", [RUN, SWEEP, CENSUS], ids=lambda f: f.name)
def test_header_reads_back_and_other_kinds_are_refused(
    fmt: Format, tmp_path: Path
) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps(fmt.header() | {"results": []}))
    assert fmt.read(path)["schema_version"] == fmt.version
    for other in [f for f in (RUN, SWEEP, CENSUS) if f is not fmt]:
        with pytest.raises(ResultsError, match=f"not a {other.name} result"):
            other.read(path)


def test_unsupported_version(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps(SWEEP.header() | {"schema_version": 7}))
    with pytest.raises(ResultsError, match=r"unsupported schema_version 7 \(this"):
        SWEEP.read(path)
    with pytest.raises(ResultsError, match="not a run result"):
        RUN.migrate([1, 2])


def test_old_run_files_migrate_to_the_current_version() -> None:
    old = {"schema_version": 1, "metadata": {}, "results": []}
    assert RUN.migrate(old) == {**old, "schema_version": RUN.version, "trials": []}


def test_nesting_is_measured_without_parsing() -> None:
    assert nesting("3") == 0
    assert nesting('{"a": [1, {"b": []}]}') == 4
    assert nesting('["]]]", "[[[[\\"[", {}]') == 2  # brackets in strings: text


def test_a_file_nested_deeper_than_a_result_is_refused_before_parsing(
    tmp_path: Path,
) -> None:
    """json's parser recurses in C a level a bracket: under a small stack
    (ulimit -s 128) a few hundred levels crash the process, so the depth is
    checked first, and what a result nests (under 10) reads."""
    path = tmp_path / "deep.json"
    path.write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(ResultsError, match=f"nested {MAX_DEPTH + 1} levels deep"):
        read_json(path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ResultsError, match="nested 100,000 levels deep"):
        read_json(path)
    path.write_text("[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH)
    assert read_json(path) is not None
    assert nesting((DATA / "run-3.json").read_text()) < 10


def test_schema_version_must_be_a_whole_number(tmp_path: Path) -> None:
    """true == 1 and 2.0 == 2 in Python: a file saying so is not read as
    version 1 or 2."""
    for version in (True, 2.0, "2"):
        with pytest.raises(ResultsError, match="schema_version: expected a whole"):
            RUN.migrate({"schema_version": version, "results": []})
