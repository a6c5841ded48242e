"""release --against: the wall time measured together with the last
release's environment (scenarios.release.paired, on scenarios.ab), and
said in one line when it cannot be, the verdict then unpaired."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.release import make, model, paired, verdict
from tests.support.tiers import starts

ROOT = Path(__file__).resolve().parents[2]
RELEASES = ROOT / "tests" / "data" / "releases"
A, B = RELEASES / "a", RELEASES / "b"


def _without_versions(tmp_path: Path) -> Path:
    """A copy of release a that recorded no package versions."""
    old = tmp_path / "old"
    shutil.copytree(A, old)
    summary = json.loads((old / "release.json").read_text())
    del summary["metadata"]["versions"]
    (old / "release.json").write_text(json.dumps(summary))
    return old


def _with_part(tmp_path: Path, part: dict[str, object]) -> Path:
    """A copy of release b whose release.json lists *part* too."""
    new = tmp_path / "new"
    shutil.copytree(B, new)
    summary = json.loads((new / "release.json").read_text())
    summary["parts"].append(part)
    (new / "release.json").write_text(json.dumps(summary))
    return new


def test_a_release_that_cannot_be_rebuilt_is_said_in_one_line(
    tmp_path: Path,
) -> None:
    old = _without_versions(tmp_path)
    why = paired.cannot_pair(old)
    assert why is not None and "recorded no versions to rebuild from" in why
    line = paired.unpaired_line(old, why)
    assert "\n" not in line and "compared unpaired" in line
    out = tmp_path / "out"
    out.mkdir()
    part = paired.run(old, ["file"], True, out, False, print)
    assert (part.status, part.files) == ("not run", [])
    assert "recorded no versions" in part.detail
    assert list(out.iterdir()) == []
    # A release directory that can be: tried (building it is ab's).
    assert paired.cannot_pair(A) is None
    assert paired.FILE in make.FILES


def test_the_verdict_says_its_wall_time_is_unpaired_and_why(tmp_path: Path) -> None:
    new = _with_part(
        tmp_path,
        {
            "name": paired.NAME,
            "title": paired.TITLE,
            "status": "not run",
            "detail": "the last release: it recorded no versions to rebuild from",
        },
    )
    v = verdict.compare(model.load(A), model.load(new))
    wall = {x.part: x.text for x in v.lines()}["wall time"]
    assert wall.endswith("; unpaired: the last release: it recorded no versions "
                         "to rebuild from"), wall  # fmt: skip
    # Without the part (a release before pairing, or no --against): no note.
    plain = verdict.compare(model.load(A), model.load(B))
    assert "unpaired" not in {x.part: x.text for x in plain.lines()}["wall time"]


@pytest.fixture
def paired_b(tmp_path: Path) -> Path:
    """Release b with an ab.json of the 2000 rows on memory, measured by
    `vfab-bench ab` with this environment on both sides, its side A then
    named release a (a's environment is this one's: rebuilding it from
    its versions is the pypi test's)."""
    cache = tmp_path / "cache"
    run = tmp_path / "ab.json"
    done = subprocess.run(
        [sys.executable, "-m", "scenarios.cli", "ab", sys.prefix, sys.prefix,
         "--cells", "rows", "--storage", "memory", "--pairs", "6", "--warmups",
         "0", "--json", str(run), "-q"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT), VFAB_AB_CACHE=str(cache)),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(run.read_text())
    data["a"]["text"] = str(A)
    part = {"name": paired.NAME, "title": paired.TITLE, "files": [paired.FILE]}
    new = _with_part(tmp_path, part)
    (new / paired.FILE).write_text(json.dumps(data))
    return new


@pytest.mark.subprocess
@starts("subprocess")
def test_a_paired_wall_time_is_judged_by_its_pairs_on_a_busy_machine(
    paired_b: Path,
) -> None:
    """a and b ran busy: unpaired, their wall time is not comparable;
    measured together, the verdict judges it by the pairs' ratios."""
    v = verdict.compare(model.load(A), model.load(paired_b))
    assert v.timing_not_comparable() is not None and v.wall is None
    assert v.paired and all(j.cell.column == "memory" for j in v.paired)
    wall = {x.part: x.text for x in v.lines()}["wall time"]
    assert wall.startswith(
        f"{len(v.paired)} cells measured together with {A}'s environment "
        "(interleaved pairs, judged by their ratios): "
    ), wall
    assert "; measured apart, not comparable: " in wall
    data = v.to_json()
    assert [c["cell"] for c in data["paired"]] == [j.name for j in v.paired]
    assert "Wall time measured together" in v.details()
    # Paired with another release: not this verdict's wall time.
    other = verdict.compare(model.load(B), model.load(paired_b))
    assert other.paired == ()


@pytest.mark.pypi
@pytest.mark.subprocess
@starts("subprocess")
def test_the_last_release_s_environment_is_rebuilt_and_paired(
    package_index: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VFAB_AB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    out.mkdir()
    part = paired.run(A, ["memory", "slow"], True, out, False, lambda line: None)
    assert part.status == "ok", part.detail
    assert part.files == [paired.FILE]
    run = model.paired_run(out / paired.FILE)
    recorded = json.loads((A / "release.json").read_text())["metadata"]["versions"]
    assert run.a.hello["versions"]["ZODB"] == recorded["ZODB"]
    assert {c.column for c in run.cells} == {"memory"}
