"""The counts gate against its own input, through the command line: count
files of the same code compare clean both ways; a compare that compared
less than both files hold (a storage, a cell, a call group missing or
unknown on one side; metadata that changes what a cell is judged by) exits
3 saying what it could not compare; the environments' differences come
first and the biggest change is named first.  The files are
tests/data/releases' (a and b: the same code), edited by hand as the
issue's were."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scenarios.errors import EXIT_INVARIANTS
from scenarios.results.compare import EXIT_NOT_FULLY_CHECKED
from tests.support.cli_helpers import assert_bad_input, run_cli

RELEASES = Path(__file__).resolve().parents[1] / "data" / "releases"
A, B = RELEASES / "a", RELEASES / "b"

Edit = Callable[[dict[str, Any]], None]


def edited(tmp_path: Path, edit: Edit, source: Path = B / "counts.json") -> Path:
    data = json.loads(source.read_text())
    edit(data)
    out = tmp_path / "new.json"
    out.write_text(json.dumps(data))
    return out


def results(data: dict[str, Any], storage: str, phase: str = "") -> list[Any]:
    return [
        r
        for r in data["results"]
        if r["storage"] == storage and (not phase or r["phase"] == phase)
    ]


def grow(data: dict[str, Any], storage: str, phase: str, factor: float) -> None:
    for r in results(data, storage, phase):
        for s in r["samples"]:
            s["instructions"] = int(s["instructions"] * factor)


def compare(capsys: pytest.CaptureFixture[str], old: Path, new: Path) -> Any:
    return run_cli(capsys, "compare", str(old), str(new), "--fail-above", "2%")


@pytest.mark.parametrize("order", ["a-b", "b-a"])
def test_count_files_of_the_same_code_pass_both_ways(
    capsys: pytest.CaptureFixture[str], order: str
) -> None:
    old, new = (A, B) if order == "a-b" else (B, A)
    r = compare(capsys, old / "counts.json", new / "counts.json")
    assert (r.status, r.err) == (0, "")


def only_mapping(data: dict[str, Any]) -> None:
    data["results"] = results(data, "mapping")


def mapping_served(data: dict[str, Any]) -> None:
    data["metadata"]["counts"]["served"].append("mapping")
    grow(data, "mapping", "commit processes", 1.10)


def one_server_count(data: dict[str, Any]) -> None:
    results(data, "mapping", "commit processes")[0]["samples"][0][
        "server_instructions"
    ] = 0
    grow(data, "mapping", "commit processes", 1.10)


def renamed_group(data: dict[str, Any]) -> None:
    for r in data["results"]:
        for s in r["samples"]:
            for calls in (s["syscalls"], s["server_syscalls"]):
                if calls and "fsync" in calls:
                    calls["FSYNC"] = calls.pop("fsync") + 50


def no_calls(data: dict[str, Any]) -> None:
    for s in results(data, "slow", "commit processes")[0]["samples"]:
        s["syscalls"] = None


@pytest.mark.parametrize(
    "edit, said",
    [
        (only_mapping, "slow (every cell)"),
        (mapping_served, "mapping: talks to a server in"),
        (one_server_count, "mapping: talks to a server in"),
        (renamed_group, "call group 'FSYNC'"),
        (no_calls, "slow commit processes (fsync calls)"),
    ],
    ids=["storages-missing", "served", "server-count", "renamed-group", "no-calls"],
)
def test_a_compare_of_less_than_both_files_hold_is_not_fully_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, edit: Edit, said: str
) -> None:
    r = compare(capsys, B / "counts.json", edited(tmp_path, edit))
    assert r.status == EXIT_NOT_FULLY_CHECKED == EXIT_INVARIANTS, r.out + r.err
    lines = r.err.splitlines()
    assert len(lines) == 1 and "NOT FULLY CHECKED" in lines[0], r.err
    assert said in " ".join(r.out.split()), r.out
    assert "NOT FULLY CHECKED" in r.out


def test_the_biggest_change_is_named_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def two(data: dict[str, Any]) -> None:
        grow(data, "mapping", "create users/groups", 1.10)
        grow(data, "slow", "commit sequences", 3.0)

    r = compare(capsys, B / "counts.json", edited(tmp_path, two))
    assert r.status == 1
    assert r.err.startswith(
        "vfab-bench compare: 2 cells grew above 2%: slow commit sequences: +200.0%"
    ), r.err
    assert "Biggest changes first: slow commit sequences: +200.0%; mapping" in (
        " ".join(r.out.split())
    )


def test_what_differs_between_the_environments_comes_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def other(data: dict[str, Any]) -> None:
        data["metadata"]["versions"]["ZODB"] = "6.2"
        data["metadata"]["implementations"] = {"persistent": "Python"}
        grow(data, "slow", "commit sequences", 3.0)

    old = edited(tmp_path, lambda d: d["metadata"].update(
        implementations={"persistent": "C"}))  # fmt: skip
    old = old.rename(tmp_path / "old.json")
    out = tmp_path / "c.json"
    r = run_cli(
        capsys, "compare", str(old), str(edited(tmp_path, other)),
        "--fail-above", "2%", "--json", str(out),
    )  # fmt: skip
    assert r.status == 1
    zodb = json.loads((B / "counts.json").read_text())["metadata"]["versions"]["ZODB"]
    causes = f"ZODB {zodb} -> 6.2; persistent C -> Python"
    assert r.out.startswith(f"Environments differ: {causes}."), r.out
    assert r.err.startswith(f"vfab-bench compare: environments differ ({causes}); ")
    assert json.loads(out.read_text())["causes"] == causes.split("; ")


def release_edited(tmp_path: Path, name: str, edit: Edit) -> Path:
    """A copy of release b, its file *name* changed by *edit*."""
    new = tmp_path / "b"
    shutil.copytree(B, new)
    (new / name).write_text(edited(tmp_path, edit, new / name).read_text())
    return new


def test_release_directories_edited_alike_are_not_fully_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    new = release_edited(tmp_path, "counts.json", renamed_group)
    r = run_cli(capsys, "compare", str(A), str(new))
    assert r.status == 3, r.out
    assert "NOT FULLY CHECKED" in r.out.splitlines()[0]
    assert "call group 'FSYNC'" in r.out


def test_a_release_whose_zodb_differs_says_so_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def older(summary: dict[str, Any]) -> None:
        summary["metadata"]["versions"]["ZODB"] = "6.2"

    new = release_edited(tmp_path, "release.json", older)
    r = run_cli(capsys, "compare", str(A), str(new))
    first, second = r.out.splitlines()[:2]
    assert first.endswith("NO REGRESSION; this release: ZODB 6.2"), first
    assert second.startswith("  environments differ: ZODB "), second


def micro(path: Path, names: list[str]) -> Path:
    benchmarks = [
        {
            "name": f"test_{name}[file]",
            "params": {"storage": "file"},
            "extra_info": {"instructions": 1_000_000},
        }
        for name in names
    ]
    path.write_text(json.dumps({"benchmarks": benchmarks}))
    return path


def test_micro_benchmarks_listed_twice_or_on_one_side_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from scenarios.counts import pytest_counts

    old = micro(tmp_path / "old.json", ["a", "b"])
    twice = micro(tmp_path / "twice.json", ["a", "b", "b"])
    assert pytest_counts.main(["compare", str(old), str(twice)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert "b [file] is listed twice" in err
    fewer = micro(tmp_path / "fewer.json", ["a"])
    argv = ["compare", str(old), str(fewer), "--fail-above", "2%"]
    assert pytest_counts.main(argv) == 3
    out, err = capsys.readouterr()
    assert "NOT FULLY CHECKED" in err and len(err.splitlines()) == 1, err


def test_a_release_with_a_micro_benchmark_listed_twice_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def twice(data: dict[str, Any]) -> None:
        data["benchmarks"].append(data["benchmarks"][0])

    new = release_edited(tmp_path, "counts-micro.json", twice)
    assert_bad_input(run_cli(capsys, "compare", str(A), str(new)), "listed twice")
