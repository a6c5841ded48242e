"""scenarios.load.session and `vfab-bench zeoloop`: sessions, retries, the baseline."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scenarios.checker import consistency
from scenarios.clients import zeoloop
from scenarios.load.history import History
from scenarios.load.mix import OPERATIONS, LoadConfig, Operation
from scenarios.load.session import Outcome, Session, open_database, preflight
from storages import StorageError
from storages.file import filestorage_section
from storages.zeo import ZEOServer
from tests.support.served import ROOT, Served, at_work, env, serve
from tests.support.tiers import starts


@pytest.fixture(scope="module")
@starts("subprocess")
def served() -> Iterator[Served]:
    with serve() as s:
        yield s


def change_one(s: Session) -> object:
    from vfab import operations

    return operations.change_price(s.fab, 1, s.rng)


def reprice_against_a_rival(
    db: object, history: History, retries: int, address: str
) -> Outcome:
    """One session reprices capability 1 while another commits a change to it
    between the first one's read and its commit."""
    config = LoadConfig.from_values(address, retries=retries)
    first = Session(db, config, history, random.Random(1), client=f"first{retries}")
    rival = Session(db, config, history, random.Random(2), client=f"rival{retries}")
    pending = [rival]

    def reprice_under_a_rival(s: Session) -> object:
        answer = change_one(s)
        while pending:
            pending.pop().run(Operation("x", 1, True, change_one, ""))
        return answer

    try:
        return first.run(Operation("change_price", 1, True, reprice_under_a_rival, ""))
    finally:
        first.close()
        rival.close()
        first.close()  # twice is fine


@pytest.mark.subprocess
def test_a_conflict_is_retried_then_fails_when_retries_run_out(served: Served) -> None:
    baseline = consistency.read_baseline(served.host_port)
    db = open_database(served.host_port, pool_size=2)
    history = History()
    try:
        retried = reprice_against_a_rival(db, history, 2, served.address)
        assert len(retried.conflicts_ms) == 1 and retried.error is None
        failed = reprice_against_a_rival(db, history, 0, served.address)
        assert len(failed.conflicts_ms) == 1
        assert type(failed.error).__name__ == "ConflictError"
    finally:
        db.close()
    # every attempt recorded: the rivals' changes and the retried one
    # committed, the two conflicting attempts failed
    outcomes = [(e.client, e.outcome) for e in history]
    assert outcomes == [
        ("rival2", "ok"),
        ("first2", "failed"),
        ("first2", "ok"),
        ("rival0", "ok"),
        ("first0", "failed"),
    ]
    assert all(e.tid for e in history if e.outcome == "ok")
    report = consistency.verify(served.host_port, baseline, history)
    assert report.ok, report.lines()


def test_users_split_like_locust_workers() -> None:
    assert zeoloop.users_per_process(5, 2) == [3, 2]
    assert zeoloop.users_per_process(1, 2) == [1, 0]


@pytest.mark.subprocess
def test_zeoloop_runs_every_operation_and_checks(
    served: Served, tmp_path: Path
) -> None:
    out = tmp_path / "loop.json"
    proc = subprocess.run(
        [sys.executable, "-m", "scenarios.cli", "zeoloop", "--zeo-address",
         served.address, "--users", "3", "--processes", "2", "--duration", "1.5",
         "--seed", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=120, env=env(), cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "3 users in 2 processes" in proc.stdout
    assert "consistency: 0 violations" in proc.stdout
    doc = json.loads(out.read_text())
    rows = {r["name"]: r for r in doc["rows"]}
    assert set(rows) == {op.name for op in OPERATIONS} | {"all"}
    weighted = {op.name for op in OPERATIONS if op.weight} | {"all"}
    assert all(r["ops"] > 0 for n, r in rows.items() if n in weighted), rows
    assert rows["all"]["p50"] <= rows["all"]["p95"] <= rows["all"]["p99"]
    assert doc["invariants_ok"] is True


@pytest.mark.server
@pytest.mark.subprocess
def test_no_data_set_is_one_line(tmp_path: Path, no_leaked_servers: None) -> None:
    with ZEOServer(tmp_path, filestorage_section(tmp_path)) as server:
        address = f"{server.host}:{server.port}"
        with pytest.raises(StorageError, match="no vfab data set"):
            preflight(LoadConfig.from_values(address))
        proc = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", "zeoloop",
             "--zeo-address", address],
            capture_output=True, text=True, timeout=60, env=env(), cwd=ROOT,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no vfab data set" in proc.stderr


@pytest.mark.subprocess
def test_the_plain_loop_never_imports_locust_or_gevent() -> None:
    """zeoloop is the baseline: gevent's monkey-patching must not reach it."""
    code = (
        "import sys, scenarios.load.session, scenarios.clients.zeoloop, scenarios.cli; "
        "print(sorted(m for m in ('gevent', 'locust') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env(),
        cwd=ROOT,
    )
    assert proc.stdout.strip() == "[]", proc.stderr


@pytest.mark.subprocess
def test_zeoloop_ctrl_c_to_the_group(served: Served, tmp_path: Path) -> None:
    """SIGINT to the whole process group while the users work (a client has
    committed an operation): no traceback, the check covers what was done,
    exit 130, no client process left."""
    import os
    import signal

    process = subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", "zeoloop", "--target",
         served.address, "--users", "2", "--processes", "2", "--duration", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env() | {"TMPDIR": str(tmp_path)}, cwd=ROOT, start_new_session=True,
    )  # fmt: skip
    reached = at_work(tmp_path, working=True)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert reached, f"no operation committed within its bound: {err}"
    assert process.returncode == 130, err
    assert "Traceback" not in out + err
    assert "interrupted after" in out
    assert "consistency: 0 violations" in out and "checked 0 attempts" not in out
