"""`vfab-bench verify`, and the history and check options of `scale`: the
verdicts, the exit statuses, the files, and bad input refused before any
work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.checker.consistency import KINDS
from scenarios.errors import EXIT_VIOLATIONS
from scenarios.results.files import VERIFY
from tests.conftest import factory_or_skip
from tests.support.served import ROOT, env

QUICK = ["--clients", "2", "--budget", "2", "--size", "small"]


def vfab(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env(), cwd=ROOT,
    )  # fmt: skip


def verdict_rows(stdout: str) -> dict[str, str]:
    """The verdict, printed first: storage -> its state and why (the why's
    wrapped lines joined); every line within 100 columns."""
    assert stdout.startswith("verdict\n"), stdout
    assert all(len(line) <= 100 for line in stdout.splitlines()), stdout
    block = stdout.partition("\n\n")[0].splitlines()[1:]
    rows: dict[str, str] = {}
    last = ""
    for line in block:
        if line.startswith("  ") and not line.startswith("   "):
            last, _, rest = line.strip().partition(" ")
            rows[last] = rest.strip()
        else:
            rows[last] += " " + line.strip()
    return rows


@pytest.mark.subprocess
@pytest.mark.server
def test_verify_calls_relstorage_sqlite_wrong(tmp_path: Path) -> None:
    """RelStorage 4.3.0 on SQLite fails the readCurrent scenario
    (tests/verify/test_scenarios.py says why): WRONG with the upstream bug
    named on every line that shows it, and exit 1 like any WRONG (the data
    are wrong, whatever the cause: --expect-known-bugs is the user's way
    to say it is expected, test_an_expected_known_bug_does_not_fail); the
    JSON holds the verdicts; zeo beside it is right."""
    factory_or_skip("relstorage-sqlite")
    out, history = tmp_path / "v.json", tmp_path / "h.jsonl"
    proc = vfab("verify", "--storage", "relstorage-sqlite,zeo", *QUICK,
                "--json", str(out), "--history", str(history), "-q")  # fmt: skip
    assert proc.returncode == EXIT_VIOLATIONS, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    rows = verdict_rows(proc.stdout)
    assert rows["relstorage-sqlite"].startswith("WRONG, a known upstream bug:"), rows
    shown = [  # relstorage-sqlite's lines that show a violation
        line
        for line in proc.stdout.splitlines()
        if line.strip().startswith("relstorage-sqlite") and "violation" in line
    ]
    assert shown and all("known upstream bug" in line for line in shown), shown
    assert "readcurrent-then-commit: violation" in rows["relstorage-sqlite"]
    assert "known upstream bug: RelStorage 4.3.0" in rows["relstorage-sqlite"]
    assert "docs/relstorage-sqlite.md" in rows["relstorage-sqlite"]
    assert rows["zeo"].startswith("right"), rows
    doc = json.loads(out.read_text())
    assert (doc["kind"], doc["schema_version"]) == (VERIFY.kind, VERIFY.version)
    sqlite, zeo = doc["storages"]
    assert (sqlite["ok"], sqlite["verdict"]) == (False, "WRONG")
    assert "docs/relstorage-sqlite.md" in sqlite["known_bug"]
    assert (zeo["ok"], zeo["verdict"], zeo["known_bug"]) == (True, "right", None)
    verdicts = {s["name"]: s["verdict"] for s in sqlite["scenarios"]}
    assert verdicts["readcurrent-then-commit"] == "violation"
    assert set(sqlite["violations"]) == set(KINDS)
    (point,) = zeo["points"]
    assert point["invariants"]["checked"] and point["invariants"]["ok"]
    assert point["invariants"]["tally"]["ok"] > 0
    # ZEO with server_sync: every commit acknowledged before a transaction
    # began is in its snapshot
    assert "server_sync" in point["invariants"]["promise"]
    assert "stale snapshot" not in point["invariants"]["allowed"]
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    contexts = [line for line in lines if "history" in line]
    assert [c["storage"] for c in contexts] == ["relstorage-sqlite", "zeo"]
    assert {c["history"] for c in contexts} == {2}
    sessions = [line for line in lines if "session" in line]
    assert sessions and all(s["clock"]["uncertainty_s"] == 0 for s in sessions)
    events = [line for line in lines if "outcome" in line]
    assert events and {e["outcome"] for e in events} <= {"ok", "failed", "unknown"}
    assert all(e["start"] <= e["end"] for e in events if e["outcome"] == "ok")


@pytest.mark.subprocess
@pytest.mark.server
def test_an_expected_known_bug_does_not_fail() -> None:
    """--expect-known-bugs: relstorage-sqlite's known bug, still named in
    its verdict, does not set the status."""
    factory_or_skip("relstorage-sqlite")
    proc = vfab("verify", "--storage", "relstorage-sqlite", *QUICK,
                "--expect-known-bugs", "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = verdict_rows(proc.stdout)["relstorage-sqlite"]
    assert row.startswith("WRONG, a known upstream bug:"), row
    assert "known upstream bug: RelStorage 4.3.0" in row


@pytest.mark.subprocess
def test_scale_without_the_check_says_so(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    proc = vfab("scale", "--clients", "1", "--duration", "1", "--warmup", "0.2",
                "--no-check", "--json", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "consistency not checked: --no-check" in proc.stdout
    (point,) = json.loads(out.read_text())["points"]
    assert point["invariants"]["checked"] is False


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["scale", "--no-check", "--history", "h.jsonl"], "--history needs the check"),
        (["scale", "--history", "/nonexistent/h.jsonl"], "does not exist"),
        (["verify", "--history", "/nonexistent/h.jsonl"], "does not exist"),
        (["verify", "--storage", "file"], "shared by processes"),
        (["verify", "--budget", "0"], "--budget"),
        (["zeoloop", "--history", "/nonexistent/h.jsonl"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_before_any_work(
    args: list[str], message: str, tmp_path: Path
) -> None:
    proc = vfab(*args, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert proc.stdout == ""


# -- a target verify may not change, and verdicts that must not be wrong --------


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    """A directory with a FileStorage that is not a vfab data set."""
    import transaction
    import ZODB
    from ZODB.FileStorage import FileStorage

    directory = tmp_path / "foreign"
    directory.mkdir()
    db = ZODB.DB(FileStorage(str(directory / "Data.fs")))
    tm = transaction.TransactionManager()
    conn = db.open(tm)
    conn.root()["theirs"] = 1
    tm.commit()
    db.close()
    for leftover in ("Data.fs.lock", "Data.fs.tmp"):
        (directory / leftover).unlink(missing_ok=True)
    return directory


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "target",
    [
        "file://{d}/Data.fs",
        "zlib+file://{d}/Data.fs",
        "{d}/db.conf",
        "bdb://{d}",
    ],
)
@pytest.mark.parametrize("scenarios", [True, False], ids=["scenarios", "load-only"])
def test_a_target_without_a_data_set_is_refused_before_anything_writes(
    foreign: Path, target: str, scenarios: bool
) -> None:
    config = foreign / "db.conf"
    config.write_text(f"<zodb>\n  <filestorage>\n    path {foreign}/Data.fs\n"
                      "  </filestorage>\n</zodb>\n")  # fmt: skip
    before = files_of(foreign)
    args = ["verify", "--target", target.format(d=foreign), *QUICK]
    proc = vfab(*args, *([] if scenarios else ["--no-scenarios"]), timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "no vfab data set" in proc.stderr or "not a Berkeley DB" in proc.stderr
    assert files_of(foreign) == before


@pytest.mark.subprocess
def test_a_relstorage_database_of_the_other_history_mode_is_refused(
    tmp_path: Path,
) -> None:
    factory_or_skip("relstorage-sqlite")
    from scenarios.load.target import open_store

    data = tmp_path / "sqlite"
    data.mkdir()
    store = open_store(f"sqlite://?data_dir={data}&keep_history=false&driver=sqlite3")
    store.root()["theirs"] = 1
    store.commit()
    store.close()
    before = files_of(data)
    proc = vfab("verify", "--target", f"sqlite://?data_dir={data}", *QUICK,
                timeout=60)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "is history-free, but the target asks keep_history=true" in proc.stderr
    assert files_of(data) == before


@pytest.mark.subprocess
@pytest.mark.parametrize("flag", ["--history", "--json"])
def test_outputs_inside_the_targets_directory_are_refused(
    foreign: Path, flag: str
) -> None:
    before = files_of(foreign)
    proc = vfab("verify", "--target", f"file://{foreign}/Data.fs", *QUICK,
                flag, str(foreign / "out.jsonl"), timeout=60)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "inside the target's own directory" in proc.stderr
    assert files_of(foreign) == before


@pytest.mark.subprocess
def test_an_empty_target_is_an_error_not_every_storage() -> None:
    proc = vfab("verify", "--target", "", *QUICK, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "empty --target" in proc.stderr and proc.stdout == ""


@pytest.mark.subprocess
@pytest.mark.server
def test_a_listener_that_never_answers_is_one_line_within_the_bound() -> None:
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # accepted by the kernel, never answered
        host, port = listener.getsockname()
        # the bound: no command waits more than 30 s for a server
        proc = vfab("verify", "--target", f"{host}:{port}", *QUICK, timeout=30)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "did not answer" in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.subprocess
def test_a_file_target_where_scenarios_cannot_run_is_not_fully_checked(
    tmp_path: Path,
) -> None:
    import storages
    from scenarios.data import dataset
    from vfab.generate import DataSpec

    store = storages.get("file").open(tmp_path)
    dataset.populate(store, DataSpec.for_scale(1), 0)
    store.close()
    out = tmp_path.parent / f"{tmp_path.name}-v.json"
    proc = vfab("verify", "--target", f"file://{tmp_path}/Data.fs", *QUICK,
                "--json", str(out), "-q")  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    row = verdict_rows(proc.stdout)["target"]
    assert row.startswith("not fully checked") and "not run" in row, row
    (storage,) = json.loads(out.read_text())["storages"]
    assert (storage["ok"], storage["verdict"]) == (None, "not fully checked")


@pytest.mark.subprocess
@pytest.mark.server
def test_two_verifies_of_one_server_at_once_say_another_writer() -> None:
    """Each sees the other's transactions in the server's log since its
    baseline: not fully checked (exit 3), never a violation."""
    import threading

    from tests.support.served import serve

    with serve("--storage", "file", "--size", "small") as served:
        results: list[subprocess.CompletedProcess[str]] = []

        def one() -> None:
            results.append(vfab("verify", "--target", served.address,
                                "--clients", "3", "--budget", "5", "-q"))  # fmt: skip

        runs = [threading.Thread(target=one) for _ in range(2)]
        for t in runs:
            t.start()
        for t in runs:
            t.join()
    for proc in results:
        assert proc.returncode == 3, proc.stdout + proc.stderr
        row = verdict_rows(proc.stdout)["target"]
        assert row.startswith("not fully checked") and "another writer" in row, row


@pytest.mark.subprocess
@pytest.mark.server
def test_storages_that_keep_their_promises_are_right(tmp_path: Path) -> None:
    """ZEO (server_sync on) over FileStorage and over BDB, RelStorage on
    PostgreSQL and MariaDB (their servers started by the suite): under
    verify's contended load and pairs, no violation, and the level each
    history satisfied is at least snapshot isolation, strict in real time."""
    import storages

    names = [
        name
        for name in ("zeo", "zeo+bdb", "relstorage-pg", "relstorage-mysql")
        if storages.get(name).unavailable() is None
    ]
    if not names:
        pytest.skip("no shared storage that keeps its promises runs here")
    out = tmp_path / "v.json"
    proc = vfab("verify", "--storage", ",".join(names), "--clients", "2,4",
                "--budget", str(4 * len(names)), "--json", str(out), "-q",
                timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = verdict_rows(proc.stdout)
    assert all(rows[name].startswith("right") for name in names), rows
    for storage in json.loads(out.read_text())["storages"]:
        for point in storage["points"]:
            check = point["invariants"]
            assert check["violations"] == [], check["problems"]
            level = check["level"]
            # a write skew (G2-item) is allowed: strong snapshot isolation
            allowed = ("strict serializable", "strong snapshot isolation; not ser")
            assert level.startswith(allowed), (storage["storage"], check["what"])


def test_verify_says_its_counts_in_words() -> None:
    """Issue 24's leftovers: "1 storage x 2 client counts", "2 clients",
    never "storage(s)" or "client(s)"."""
    from scenarios.scale.model import ScaleRun
    from scenarios.verify import report
    from scenarios.verify.runner import StorageVerdict, VerifyConfig
    from tests.conftest import DATA

    assert (
        VerifyConfig(("zeo",), clients=(1, 2))
        .plan()
        .partition(" in all: ")[2]
        .startswith("1 storage x 2 client counts, load windows of")
    )
    assert (
        VerifyConfig(("zeo", "bdb"), clients=(4,))
        .plan()
        .partition(" in all: ")[2]
        .startswith("2 storages x 1 client count,")
    )
    points = ScaleRun.load(DATA / "scale.json").points
    assert sorted(p.clients for p in points) == [1, 2]
    text = report.text([StorageVerdict("zeo", (), points)], detail=True)
    assert "zeo, 1 client: " in text and "zeo, 2 clients: " in text
    assert "(s)" not in text
