"""scenarios.load.session and `vfab-bench zeoloop`: sessions, retries, the baseline."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scenarios.errors import ConfigError
from scenarios.load import session as load
from scenarios.load import zeoloop
from storages import StorageError
from storages.zeo import ZEOServer, filestorage_section
from tests.served import ROOT, Served, env, serve


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with serve() as s:
        yield s


def test_config_is_validated() -> None:
    config = load.LoadConfig.from_values("127.0.0.1:8100", {"browse": 0})
    assert dict(config.weights)["browse"] == 0 and config.address_text.endswith(":8100")
    for kwargs, message in [
        ({"weights": {"teleport": 1}}, "unknown operation 'teleport'"),
        ({"weights": {"lookup": -1}}, "weight of lookup must be 0 or more"),
        ({"weights": {op.name: 0 for op in load.OPERATIONS}}, "nothing to do"),
        ({"skew": -0.5}, "skew must be 0 or more"),
        ({"retries": -1}, "retries must be 0 or more"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load.LoadConfig.from_values("127.0.0.1:8100", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(StorageError, match="bad ZEO address"):
        load.LoadConfig.from_values("nowhere")


def test_picker_follows_the_weights() -> None:
    config = load.LoadConfig.from_values(
        "127.0.0.1:8100",
        {op.name: 0 for op in load.OPERATIONS} | {"lookup": 3, "browse": 1},
    )
    pick, rng = config.picker(), random.Random(5)
    names = [pick(rng).name for _ in range(4000)]
    assert set(names) == {"lookup", "browse"}
    assert 0.7 < names.count("lookup") / len(names) < 0.8


def test_popularity_skew() -> None:
    rng = random.Random(7)
    uniform = load.Popularity(250, 0)
    assert uniform.share_of_top() == 1 / 250
    assert {uniform.sample(rng) for _ in range(5000)} == set(range(1, 251))
    zipf = load.Popularity(250, 1.0)
    assert 0.15 < zipf.share_of_top() < 0.17
    draws = [zipf.sample(rng) for _ in range(20000)]
    assert 0.14 < draws.count(1) / len(draws) < 0.18
    assert min(draws) == 1 and max(draws) <= 250


def test_percentiles_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert list(load.iter_percentiles(values)) == [50.0, 95.0, 99.0]
    assert all(v != v for v in load.iter_percentiles([]))  # nan


def change_one(s: load.Session) -> object:
    from vfab import operations

    return operations.change_price(s.fab, 1, s.rng)


def reprice_against_a_rival(
    db: object, journal: load.Journal, retries: int, address: str
) -> load.Outcome:
    """One session reprices capability 1 while another commits a change to it
    between the first one's read and its commit."""
    config = load.LoadConfig.from_values(address, retries=retries)
    first = load.Session(db, config, journal, random.Random(1))
    rival = load.Session(db, config, journal, random.Random(2))
    pending = [rival]

    def reprice_under_a_rival(s: load.Session) -> object:
        answer = change_one(s)
        while pending:
            pending.pop().run(load.Operation("x", 1, True, change_one, ""))
        return answer

    try:
        return first.run(
            load.Operation("change_price", 1, True, reprice_under_a_rival, "")
        )
    finally:
        first.close()
        rival.close()
        first.close()  # twice is fine


def test_a_conflict_is_retried_then_fails_when_retries_run_out(served: Served) -> None:
    db = load.open_database(served.host_port, pool_size=2)
    journal = load.Journal()
    try:
        retried = reprice_against_a_rival(db, journal, 2, served.address)
        assert len(retried.conflicts_ms) == 1 and retried.error is None
        failed = reprice_against_a_rival(db, journal, 0, served.address)
        assert len(failed.conflicts_ms) == 1
        assert type(failed.error).__name__ == "ConflictError"
    finally:
        db.close()
    # the rivals' changes and the retried one were committed and recorded
    assert [r.capability_id for r in journal.repriced] == [1, 1, 1]
    report = load.verify(served.host_port, journal)
    assert report.ok, report.problems


def test_journal_moves_between_processes_as_plain_lists() -> None:
    from vfab.operations import Created, Repriced

    journal, master = load.Journal(), load.Journal()
    journal.record(Created(1 << 24, "u000001", "g00001", 12))
    journal.record(Repriced(3, 1))
    journal.record("not a receipt")
    sent = journal.drain()
    assert json.loads(json.dumps(sent)) == sent
    assert journal.drain() == {"created": [], "repriced": []}
    master.absorb(sent)
    assert master.created == journal.created and master.repriced == journal.repriced


def test_users_split_like_locust_workers() -> None:
    assert zeoloop.users_per_process(5, 2) == [3, 2]
    assert zeoloop.users_per_process(1, 2) == [1, 0]


@pytest.mark.slow
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
    assert "invariants hold" in proc.stdout
    doc = json.loads(out.read_text())
    rows = {r["name"]: r for r in doc["rows"]}
    assert set(rows) == {op.name for op in load.OPERATIONS} | {"all"}
    assert all(r["ops"] > 0 for r in rows.values()), rows
    assert rows["all"]["p50"] <= rows["all"]["p95"] <= rows["all"]["p99"]
    assert doc["invariants_ok"] is True


def test_no_data_set_is_one_line(tmp_path: Path, no_leaked_servers: None) -> None:
    with ZEOServer(tmp_path, filestorage_section(tmp_path)) as server:
        address = f"{server.host}:{server.port}"
        with pytest.raises(StorageError, match="no vfab data set"):
            load.preflight(load.LoadConfig.from_values(address))
        proc = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", "zeoloop",
             "--zeo-address", address],
            capture_output=True, text=True, timeout=60, env=env(), cwd=ROOT,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no vfab data set" in proc.stderr


def test_the_plain_loop_never_imports_locust_or_gevent() -> None:
    """zeoloop is the baseline: gevent's monkey-patching must not reach it."""
    code = (
        "import sys, scenarios.load.session, scenarios.load.zeoloop, scenarios.cli; "
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
