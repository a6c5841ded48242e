"""scenarios.results.files: one reader for every versioned result file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.results.files import CENSUS, RUN, SWEEP, Format, ResultsError


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
