"""vfab-bench matrix: its views on a checked-in file, the FAQ's claims as
checks, its refusals, and a real matrix on FileStorage in this process
(the served storages: tests/matrix/test_served.py)."""

from __future__ import annotations

import copy
import json
import re
import shutil
import xml.dom.minidom
from pathlib import Path

import pytest

from scenarios.errors import ConfigError
from scenarios.matrix import check, claims, report
from scenarios.matrix.config import BENCHMARKS, MatrixConfig
from scenarios.matrix.model import MatrixCell, MatrixRound, MatrixRun
from scenarios.results.files import MATRIX, ResultsError
from tests.conftest import DATA
from tests.support.cli_helpers import assert_bad_input, run_cli

FILE = DATA / "matrix.json"
TINY = ["--concurrency", "2", "--objects", "1,3", "--rounds", "2"]


def _load() -> MatrixRun:
    return MatrixRun.from_json(json.loads(FILE.read_text()))


# -- the views, on the checked-in file ------------------------------------------


def test_report_shows_every_benchmark_the_checks_and_the_claims(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_cli(capsys, "report", str(FILE))
    assert r.status == 0, r.err
    for name in BENCHMARKS:
        assert f"\n{name} (" in "\n" + r.out, name
    assert "2 processes" in r.out and "2 threads" in r.out and "1 thread " in r.out
    assert "right" in r.out
    assert "could not empty the OS page cache" in r.out
    assert "SQLite wins or ties FileStorage adding objects: " in r.out
    assert "cells here" in r.out and "ZODB 6." in r.out


def test_page_and_plot_draw_a_bar_chart_per_benchmark_and_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, plot = tmp_path / "m.html", tmp_path / "m.svg"
    r = run_cli(capsys, "report", str(FILE), "--html", str(page))
    assert r.status == 0, r.err
    html = page.read_text()
    run = _load()
    assert html.count('<svg class="chart"') == len(BENCHMARKS) * len(run.sizes)
    assert "“SQLite outperforms ZEO”" in html and "<script" not in html
    from scenarios.matrix import page as matrix_page

    plot.write_text(matrix_page.svg_file(run))
    doc = xml.dom.minidom.parse(str(plot))
    bars = [
        r for r in doc.getElementsByTagName("rect") if r.getAttribute("fill") != "white"
    ]
    # a bar per cell, and a plot area per panel
    assert len(bars) == len(run.results) + len(BENCHMARKS) * len(run.sizes)


def test_compare_reads_two_matrix_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "again.json"
    shutil.copy(FILE, other)
    r = run_cli(capsys, "compare", str(FILE), str(other))
    assert r.status == 0, r.err
    assert "relstorage-sqlite processes:" in r.out
    assert "add, 2 processes x 3 objects" in r.out
    assert "1.00x" in r.out
    r = run_cli(capsys, "compare", str(FILE), str(other), "--cpu")
    assert_bad_input(r, "wall clock only")


def test_history_reads_matrix_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a.json", "b.json"):
        shutil.copy(FILE, tmp_path / name)
    r = run_cli(capsys, "history", str(tmp_path))
    assert r.status == 0, r.err
    assert "zeo processes" in r.out and "cold, 2 x 3 objects" in r.out


def test_a_malformed_matrix_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(FILE.read_text())
    data["results"][0]["rounds"][0]["wall_s"] = -1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    r = run_cli(capsys, "report", str(bad))
    assert_bad_input(r, "results[0].rounds[0].wall_s")
    with pytest.raises(ResultsError, match="unsupported schema_version"):
        MatrixRun.from_json({**data, "schema_version": MATRIX.version + 1})


def test_trend_refuses_the_matrix_pairs_compare_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Payloads of 240 and 1,420 bytes, or none recorded (240, the size
    before it was recorded) against 1,420: compare refuses the pair, and
    trend marks no step between them; the same payload is read."""
    data = json.loads(FILE.read_text())
    assert data["metadata"]["payload_bytes"] == 240
    later = copy.deepcopy(data)
    later["metadata"]["payload_bytes"] = 1420
    later["metadata"]["versions"]["ZODB"] = "6.5"
    unrecorded = copy.deepcopy(data)
    del unrecorded["metadata"]["payload_bytes"]
    paths = {}
    for name, content in (("a", data), ("b", later), ("c", unrecorded)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(content))
    for old, new in (("a", "b"), ("c", "b")):
        r = run_cli(capsys, "compare", str(paths[old]), str(paths[new]))
        assert_bad_input(r, "differ in payload")
        r = run_cli(capsys, "trend", str(paths[old]), str(paths[new]))
        assert_bad_input(r, "differ in payload (240 vs 1420)")
    assert run_cli(capsys, "compare", str(paths["c"]), str(paths["a"])).status == 0
    r = run_cli(capsys, "trend", str(paths["c"]), str(paths["a"]))
    assert r.status == 0, r.err
    r = run_cli(capsys, "trend", str(paths["a"]), str(DATA / "run-3.json"))
    assert_bad_input(r, "differ in kind")


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        ("payload", -5, "metadata.payload_bytes: expected a whole number from 1"),
        ("payload", True, "metadata.payload_bytes: expected a whole number from 1"),
        ("kind", "fibers", "results[0].kind: expected one of threads, processes"),
        ("clients", [0.1, 0.1, 0.1], "3 clients at concurrency 1"),
    ],
)
def test_a_matrix_file_no_matrix_writes_is_refused_on_read(
    where: str,
    value: object,
    said: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = json.loads(FILE.read_text())
    cell = data["results"][0]
    assert cell["concurrency"] == 1
    if where == "payload":
        data["metadata"]["payload_bytes"] = value
    elif where == "kind":
        cell["kind"] = value
    else:
        cell["rounds"][0]["clients_s"] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    for command in (["report", str(bad)], ["trend", str(bad), str(FILE)]):
        assert_bad_input(run_cli(capsys, *command), said)


# -- the claims ----------------------------------------------------------------


def _cell(storage: str, bench: str, n: int, size: int, us: float) -> MatrixCell:
    rounds = tuple(MatrixRound(us * size * 1e-6, (us * size * 1e-6,)) for _ in range(3))
    return MatrixCell(storage, bench, "threads", n, size, 1, rounds)


def test_the_faqs_exception_is_found_and_named_as_published() -> None:
    cells = []
    for n in (1, 5, 20):
        for size in (1, 10, 100):
            slow = n == 20 and size == 100
            cells.append(_cell("file", "add", n, size, 100.0))
            cells.append(
                _cell("relstorage-sqlite", "add", n, size, 150 if slow else 90)
            )
    run = MatrixRun(metadata={}, results=tuple(cells))
    add = claims.answers(run)[0]
    assert add.sentence() == (
        "SQLite wins or ties FileStorage adding objects: 8 of 9 cells here; "
        "the exception: 20 threads x 100 objects (as published)"
    )
    # SQLite slower somewhere else: not as published
    cells[1] = _cell("relstorage-sqlite", "add", 1, 1, 500)
    add = claims.answers(MatrixRun(metadata={}, results=tuple(cells)))[0]
    assert add.agree == 7 and add.holds is False
    assert "not as published" in add.sentence()
    # the others are not answered without their storages, and say why
    assert "not answered" in claims.answers(run)[4].sentence()


def test_cold_claims_use_intervals() -> None:
    def cells(zeo_us: float) -> tuple[MatrixCell, ...]:
        return (
            _cell("zeo", "cold", 1, 10, zeo_us),
            _cell("relstorage-sqlite", "cold", 1, 10, 50),
            _cell("file", "cold", 1, 10, 40),
        )

    answers = claims.answers(MatrixRun({}, cells(80)))
    beats_zeo, ties_file = answers[4], answers[5]
    assert beats_zeo.agree == 1 and ties_file.agree == 1
    assert claims.answers(MatrixRun({}, cells(50)))[4].agree == 0  # a tie is no win


# -- refusals --------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--storage", "file", "--kind", "processes"], "file is opened by one process"),
        (["--storage", "mapping", "--kind", "greenlets"], "not known to yield"),
        (["--concurrency", "0"], "--concurrency: must be from 1 to 200 each"),
        (["--objects", "x"], "not a whole number"),
        (["--kind", "fibers"], "unknown 'fibers'"),
        (["--benchmark", "steamin"], "unknown 'steamin'"),
        (["--rounds", "0"], "--rounds: must be from 1 to"),
        (["--transactions", "0"], "--transactions: must be from 1 to"),
        (["--storage", "memory"], "commits nothing"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_bad_input(run_cli(capsys, "matrix", *args), fragment)


def test_greenlets_are_refused_by_driver() -> None:
    from scenarios.matrix.config import kind_refusal
    from storages import get

    refusal = kind_refusal(get("relstorage-sqlite"), "greenlets")
    assert refusal is not None and "sqlite3 blocks in C" in refusal
    assert kind_refusal(get("zeo"), "greenlets") is None
    assert kind_refusal(get("zeo"), "processes") is None


def test_quick_answers_the_claims_with_fewer_cells() -> None:
    from scenarios.cli import build_parser
    from scenarios.cli.matrix import config_of

    quick = config_of(build_parser().parse_args(["matrix", "--quick"]))
    assert quick.benchmarks == ("add", "update", "write-read", "cold")
    assert quick.concurrency == (1, 20) and quick.objects == (1, 100)
    named = config_of(
        build_parser().parse_args(["matrix", "--quick", "--objects", "5"])
    )
    assert named.objects == (5,)
    with pytest.raises(ConfigError):
        MatrixConfig(kinds=("threads", "threads"))


# -- a real matrix, in this process ------------------------------------------------


def test_a_file_matrix_runs_checks_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.json"
    r = run_cli(
        capsys, "matrix", "--storage", "file", *TINY, "--transactions", "1",
        "--json", str(out), "-q",
    )  # fmt: skip
    assert r.status == 0, r.err
    run = MatrixRun.from_json(json.loads(out.read_text()))
    # threads only: processes left out, said
    assert {c.kind for c in run.results} == {"threads"}
    assert len(run.results) == 2 * len(BENCHMARKS)
    assert all(g.ok for g in run.groups), run.groups
    assert all(v > 0 for c in run.results for v in c.per_object_s)
    two = run.get("file", "conflicts", "threads", 2, 3)
    assert two is not None and len(two.rounds[0].clients_s) == 2
    assert "file" in report.text(run)


def test_the_check_finds_a_lost_write(tmp_path: Path) -> None:
    """The read-back is a real check: a write a client was acknowledged
    for that the database does not hold is a problem."""
    fs = f"<filestorage>\npath {tmp_path / 'Data.fs'}\n</filestorage>"
    target = check.Database(f"<zodb>\n{fs}\n</zodb>\n")
    check.populate(target, "k", 2, (3,))
    honest = {"client": 0, "own": {3: 0}, "shared": {3: []}, "problems": []}
    liar = {"client": 1, "own": {3: 7}, "shared": {3: [5]}, "problems": ["x"]}
    problems = check.check(target, "k", (3,), [honest, liar], remove=False)
    assert "client 1: x" in problems
    assert any(
        "client 1, 3 objects: 3 objects read back, 3 without" in p for p in problems
    )
    assert any("object 1 holds 0" in p for p in problems)
    assert check.check(target, "k", (3,), [honest]) == []
    assert check.check(target, "k", (3,), [honest]) == ["the group's data are gone"]


def test_a_named_database_is_used_only_if_it_holds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import transaction
    import ZODB
    import ZODB.FileStorage

    path = tmp_path / "new" / "Data.fs"
    path.parent.mkdir()
    uri = f"mine=file://{path}"
    r = run_cli(
        capsys, "matrix", "--storage-uri", uri, "--concurrency", "2", "--objects",
        "2", "--rounds", "1", "--transactions", "1", "--benchmark", "add,cold", "-q",
    )  # fmt: skip
    assert r.status == 0, r.err
    assert re.search(r"mine +2 threads +right", r.out), r.out
    db = ZODB.DB(ZODB.FileStorage.FileStorage(str(path)))
    try:
        conn = db.open()
        assert dict(conn.root()) == {}  # the matrix's data removed
        conn.root()["theirs"] = 1
        transaction.commit()
    finally:
        db.close()
    r = run_cli(capsys, "matrix", "--storage-uri", uri, "-q")
    assert_bad_input(r, "mine: the database holds data (its root has 1 key)")


def _populated(directory: Path) -> Path:
    """A Data.fs holding one key, alone in *directory* (no index, lock or
    .tmp: what a user copied there)."""
    import transaction
    import ZODB
    import ZODB.FileStorage

    directory.mkdir()
    path = directory / "Data.fs"
    db = ZODB.DB(ZODB.FileStorage.FileStorage(str(path)))
    try:
        conn = db.open()
        conn.root()["theirs"] = 1
        transaction.commit()
    finally:
        db.close()
    for extra in directory.iterdir():
        if extra != path:
            extra.unlink()
    return path


def _listing(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_a_refused_matrix_creates_nothing_beside_the_users_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused for holding data (through --storage-uri or --storage-config),
    or for an output aliasing the config: no lock, index, .tmp or new.fs."""
    data = _populated(tmp_path / "data")
    conf = tmp_path / "data" / "z.conf"
    conf.write_text(
        f"<zodb cfg>\n<filestorage>\npath {data}\n</filestorage>\n</zodb>\n"
    )
    before = _listing(data.parent)
    r = run_cli(capsys, "matrix", "--storage-uri", f"mine=file://{data}", "-q")
    assert_bad_input(r, "mine: the database holds data")
    assert _listing(data.parent) == before
    r = run_cli(capsys, "matrix", "--storage-config", str(conf), "-q")
    assert_bad_input(r, "cfg: the database holds data")
    assert _listing(data.parent) == before
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    conf = fresh / "new.conf"
    conf.write_text(
        f"<zodb>\n<filestorage>\npath {fresh / 'new.fs'}\n</filestorage>\n</zodb>\n"
    )
    r = run_cli(
        capsys, "matrix", "--storage-config", str(conf), "--json", str(conf),
        "--force", "-q",
    )  # fmt: skip
    assert_bad_input(r, "is one of this command's inputs")
    assert sorted(p.name for p in fresh.iterdir()) == ["new.conf"]


def test_a_storage_config_database_runs_in_this_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "z.conf"
    fs = f"<filestorage>\npath {tmp_path / 'Data.fs'}\n</filestorage>"
    conf.write_text(f"<zodb cfg>\n{fs}\n</zodb>\n")
    r = run_cli(
        capsys, "matrix", "--storage-config", str(conf), "--concurrency", "2",
        "--objects", "2", "--rounds", "1", "--benchmark", "update,warm", "-q",
    )  # fmt: skip
    assert r.status == 0, r.err
    assert re.search(r"cfg +2 threads +right", r.out), r.out


def test_a_client_checks_what_it_read_after_the_clock() -> None:
    """The read (timed) gives the values; the check (untimed) names a value
    that is not the client's last write, and a short read."""
    import types

    from persistent.mapping import PersistentMapping

    from scenarios.matrix.client import _Client

    class Obj:
        def __init__(self, attr: int) -> None:
            self.attr = attr

    m = PersistentMapping({i: Obj(5) for i in range(3)})
    values = _Client._read(m)
    assert values == [5, 5, 5]
    client = types.SimpleNamespace(own={3: 5}, problems=[])
    _Client._check(client, values, 3, "hot")  # type: ignore[arg-type]
    assert client.problems == []
    _Client._check(client, [5, 4], 3, "cold")  # type: ignore[arg-type]
    assert client.problems == [
        "cold, 3 objects: read 2 objects, 1 not holding the client's last "
        "acknowledged write"
    ]
