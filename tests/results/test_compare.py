"""vfab-bench compare: two real run files of the same code, one with a storage
slowed down, sweep files, and the input it refuses."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scenarios.results import compare_runs
from scenarios.results.model import RunResult
from scenarios.sweep.model import SweepPoint, SweepRun, SweepSample
from tests.conftest import checked_in
from tests.support.cli_helpers import assert_bad_input, run_cli


def half(part: int, trials: int) -> list[int]:
    """Half the rounds of a run, in ABBA order (*part* 0: rounds 0, 3, 4, 7,
    8...; 1: rounds 1, 2, 5, 6...).  The runner turns each round's storage
    order (round k starts with its k-th storage), so with two storages
    every other round (0, 2, 4... against 1, 3, 5...) is "mapping first"
    against "mapping after file": a systematic difference, which compare
    rightly found (mapping 6-9% slower in one half, 5 of 23 cells, in a CI
    run).  ABBA gives each half as many rounds of either order and the same
    mean time, so a linear drift cancels too."""
    return [j for j in range(trials) if ((j + 1) // 2) % 2 == part]


def split(data: dict[str, Any], part: int) -> dict[str, Any]:
    """Half the trials of a run (half()) as a result file of its own."""
    out = copy.deepcopy(data)
    for r in out["results"]:
        r["samples"] = [r["samples"][j] for j in half(part, len(r["samples"]))]
    by_storage: dict[str, list[Any]] = {}
    for t in out["trials"]:
        by_storage.setdefault(t["storage"], []).append(t)
    out["trials"] = [ts[j] for ts in by_storage.values() for j in half(part, len(ts))]
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Two result files of the same code, 8 trials each, and the second with
    file's samples x2: the halves of tests/data/run-16.json.

    One run of 16 trials split into halves of its rounds (ABBA), not two runs one after
    the other: on this shared machine two runs a minute apart differed for
    real (other jobs writing to disk made every file commit of the second
    run 2.6-5.6x slower), which compare rightly reports; interleaving is
    the answer (the runner interleaves rounds of trials).  8 trials a side,
    not 5: with other jobs on the two
    cores a cell's trials spread 2-5x, and 5 a side found 0 to 20 of file's
    23 cells slowed 1.5x.  The slowed file is slowed by more than its cells'
    spread (at least 2x), so that every slowed cell is separable whatever the
    load: under heavy load 1.5x was found in none of 23 cells at 8 a side,
    2x in 4 to 18.  What the test can resolve at a given noise is
    test_significance's business; this one checks that compare reports and
    gates what is there."""
    d = tmp_path_factory.mktemp("compare")
    data = json.loads(checked_in("run-16.json", d).read_text())
    files = {"a": d / "a.json", "b": d / "b.json", "slow": d / "slow.json"}
    files["a"].write_text(json.dumps(split(data, 0)))
    files["b"].write_text(json.dumps(split(data, 1)))
    slow = split(data, 1)
    spread = max(
        max(s[k] for s in r["samples"]) / min(s[k] for s in r["samples"])
        for r in data["results"]
        if r["storage"] == "file"
        for k in ("wall_s", "cpu_s")
    )
    slower = max(2.0, spread * 1.01)
    for r in slow["results"]:
        if r["storage"] == "file":
            for s in r["samples"]:
                s["wall_s"] *= slower
                s["cpu_s"] *= slower
    files["slow"].write_text(json.dumps(slow))
    yield files


def test_the_same_code_shows_no_significant_change(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    result = compare_runs.compare_files(
        RunResult.load(runs["a"]), RunResult.load(runs["b"])
    )
    n = len(result.cells)
    assert n >= 40  # 23 rows x 2 storages, pack included
    quiet = sum(not c.difference.significant for c in result.cells)
    assert quiet >= 0.95 * n, result.text()

    r = run_cli(
        capsys, "compare", str(runs["a"]), str(runs["b"]), "--fail-above", "10%"
    )
    assert r.status == 0, r.out + r.err
    # the runs' statistic (the heading is a paragraph: its words, wrapped)
    assert "the minimum of each cell's trials" in " ".join(r.out.split())
    assert "mapping:" in r.out and "file:" in r.out
    assert "commit processes" in r.out and "not significant" in r.out
    assert "  8 vs 8  " in r.out  # each row's trials
    summary = r.out.rstrip().split("\n\n")[-1].splitlines()
    assert summary[0] == "Summary:" and len(summary) == 3
    assert summary[1].startswith(f"  mapping: {n // 2} cells; ")


def test_a_slowed_storage_is_found_and_fails_the_gate(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result = compare_runs.compare_files(
        RunResult.load(runs["a"]), RunResult.load(runs["slow"])
    )
    file_cells = [c for c in result.cells if c.column == "file"]
    mapping_cells = [c for c in result.cells if c.column == "mapping"]
    slower = [c for c in file_cells if c.difference.slower]
    assert slower == file_cells, result.text()
    for c in slower:
        assert c.difference.ratio is not None and c.difference.ratio > 1.5
        assert "x slower (+" in c.verdict
    quiet = [c for c in mapping_cells if not c.difference.significant]
    assert len(quiet) >= 0.8 * len(mapping_cells), result.text()
    # Same code on mapping: a chance difference either way is allowed in the
    # fifth the line above allows, never a file cell called faster.
    assert all(c.column == "mapping" for c in result.faster()), result.text()

    out_json, out_md = tmp_path / "c.json", tmp_path / "c.md"
    r = run_cli(
        capsys, "compare", str(runs["a"]), str(runs["slow"]), "--fail-above", "10%",
        "--json", str(out_json), "--markdown", str(out_md),
    )  # fmt: skip
    assert r.status == 1
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "significant slowdowns above 10%" in lines[0]
    assert "file " in lines[0] and "x slower (+" in lines[0]
    # a line as pyperf writes it: "3.47 ms -> 4.34 ms: 1.25x slower (+25%)"
    assert any(" -> " in line and "x slower (+" in line for line in r.out.splitlines())
    data = json.loads(out_json.read_text())
    assert data["kind"] == "run" and data["statistic"] == "min"
    assert {c["column"] for c in data["cells"]} == {"mapping", "file"}
    cell = data["cells"][0]
    assert {"row", "verdict", "ratio", "p_value", "q_value", "old", "new"} <= set(cell)
    assert cell["trials"] == [8, 8] and cell["inconclusive"] is False
    assert "| task | trials | old | new | change |" in out_md.read_text()

    # a threshold above the slowdown passes
    r = run_cli(
        capsys, "compare", str(runs["a"]), str(runs["slow"]), "--fail-above", "100000%"
    )
    assert r.status == 0, r.err


def test_cpu_time_and_another_statistic(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(
        capsys, "compare", str(runs["a"]), str(runs["slow"]), "--cpu",
        "--statistic", "median",
    )  # fmt: skip
    assert r.status == 0, r.err
    assert "CPU time, the median of each cell's trials" in " ".join(r.out.split())


def test_storages_against_a_baseline(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "compare", str(runs["a"]), "--baseline", "mapping")
    assert r.status == 0, r.err
    assert "file vs mapping:" in r.out and "against mapping" in r.out
    result = compare_runs.compare_baseline(RunResult.load(runs["a"]), "mapping")
    assert {c.column for c in result.cells} == {"file vs mapping"}
    # FileStorage writes a file; mapping keeps pickles in a dict
    pack = next(c for c in result.cells if c.row == "pack")
    assert pack.difference.ratio is not None and pack.difference.ratio > 1


def sweep_file(path: Path, scale: float = 1.0, seed: int = 2000) -> Path:
    rng = random.Random(f"{path.name}")
    points = []
    for storage, base in (("mapping", 20e-6), ("file", 25e-6)):
        for n in (100, 1000):
            f = scale if storage == "file" else 1.0
            samples = tuple(
                SweepSample(
                    wall_s=n * base * f * (1 + 0.1 * rng.random()),
                    cpu_s=n * base * f * (1 + 0.1 * rng.random()),
                )
                for _ in range(8)
            )
            points.append(SweepPoint(storage, "btree", n, samples))
    run = SweepRun({"config": {"seed": seed}}, tuple(points))
    path.write_text(json.dumps(run.to_json()))
    return path


def test_sweep_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = sweep_file(tmp_path / "a.json")
    b = sweep_file(tmp_path / "b.json", scale=1.5)
    r = run_cli(capsys, "compare", str(a), str(b), "--fail-above", "20%")
    assert r.status == 1
    # The heading wraps where the files' paths (TMPDIR's length) put it.
    assert "wall time per object" in " ".join(r.out.split())
    assert "file btree:" in r.out and "1,000 objects/txn" in r.out
    result = compare_runs.compare_files(SweepRun.load(a), SweepRun.load(b))
    verdicts = {(c.column, c.row): c.difference for c in result.cells}
    assert verdicts[("file btree", "1,000 objects/txn")].slower
    assert not verdicts[("mapping btree", "100 objects/txn")].significant
    r = run_cli(capsys, "compare", str(a), "--baseline", "mapping")
    assert r.status == 0 and "file btree vs mapping btree:" in r.out


def test_bad_input_is_one_line_and_status_2(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = str(runs["a"])
    not_json = tmp_path / "x.json"
    not_json.write_text("{not json")
    other_seed = json.loads(runs["a"].read_text())
    other_seed["metadata"]["config"]["seed"] = 7
    seed_file = tmp_path / "seed.json"
    seed_file.write_text(json.dumps(other_seed))
    other_size = json.loads(runs["a"].read_text())
    for r in other_size["results"]:
        r["size"] = "medium"
    size_file = tmp_path / "size.json"
    size_file.write_text(json.dumps(other_size))
    sweep = sweep_file(tmp_path / "s.json")
    existing = tmp_path / "exists.json"
    existing.write_text("{}")
    cases = [
        (("compare", a, str(tmp_path / "missing.json")), "cannot read"),
        (("compare", a, str(not_json)), "is not JSON"),
        (("compare", a, str(seed_file)), "differ in seed"),
        (("compare", a, str(size_file)), "differ in size"),
        (("compare", a, str(sweep)), "a run file and"),
        (("compare", a, "--baseline", "zeo"), "no storage 'zeo'"),
        (("compare", a, a, "--baseline", "file"), "one of them"),
        (("compare", a), "one of them"),
        (("compare", a, a, "--fail-above", "lots"), "not a percentage"),
        (("compare", a, a, "--json", str(existing)), "exists"),
        (("compare", a, a, "--statistic", "mean"), "invalid choice"),
    ]
    for args, fragment in cases:
        assert_bad_input(run_cli(capsys, *args), fragment)


def test_runs_on_machines_of_different_speeds_are_warned_about(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The runner records its speed probes; compare says when two files'
    machines ran at different speeds (a host's slow spell slows every cell)
    and keeps quiet when they did not."""
    data = json.loads(runs["b"].read_text())
    probes = data["metadata"]["environment"]["speed_probes_s"]
    assert len(probes) >= 5 and all(p > 0 for p in probes)
    r = run_cli(capsys, "compare", str(runs["a"]), str(runs["b"]))
    assert "different speeds" not in r.out
    data["metadata"]["environment"]["speed_probes_s"] = [p * 1.6 for p in probes]
    slow_machine = tmp_path / "slow-machine.json"
    slow_machine.write_text(json.dumps(data))
    r = run_cli(capsys, "compare", str(runs["a"]), str(slow_machine))
    (warning,) = [p for p in r.out.split("\n\n") if "different speeds" in p]
    warning = " ".join(warning.split())  # a paragraph, wrapped
    assert warning.startswith("warning: the machine ran at different speeds")
    assert "(1.60x)" in warning
