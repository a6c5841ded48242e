"""The consistency check against storages that break one promise each
(tests/support/badstores), served by runzeo as a broken storage would be and
driven by `vfab-bench scale --target` and `vfab-bench verify --target`:
each is found by the anomaly or kind of violation it causes, exit 1, and
verify never calls it right.

The data set is written once through a plain FileStorage; each test serves
a copy of it through its broken storage.  A supervisor restarts runzeo
when it exits (the volatile storage exits on purpose, losing what it
acknowledged).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import storages
from scenarios.data import dataset
from storages.zeo.server import ZEOServer
from tests.support.served import ROOT, env
from tests.verify.test_cli import verdict_rows
from vfab.generate import DataSpec

pytestmark = [pytest.mark.server, pytest.mark.subprocess]

#: The load of both commands: verify's write-heavy mix with its pairs,
#: on few capabilities, so that writers meet.
MIX = [
    "--skew", "2",
    "--weight-browse", "0", "--weight-list-sequences", "0",
    "--weight-create-sequence", "3", "--weight-change-price", "3",
    "--weight-transfer-wafers", "3", "--weight-audit-stock", "2",
    "--weight-match-price", "3", "--weight-reprice-pair", "2",
    "--weight-compare-offers", "3",
]  # fmt: skip


@pytest.fixture(scope="module")
def data_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding a Data.fs with the small data set."""
    directory = tmp_path_factory.mktemp("data-set")
    store = storages.get("file").open(directory)
    try:
        dataset.populate(store, DataSpec.for_scale(1), 0)
    finally:
        store.close()
    return directory


class Supervised:
    """runzeo serving one broken storage, started again whenever it exits
    until stop()."""

    def __init__(self, directory: Path, section: str) -> None:
        self.server = ZEOServer(
            directory, section, imports=("tests.support.badstores",)
        )
        self.restarts = 0
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._run, daemon=True)

    @property
    def address(self) -> str:
        host, port = self.server.address
        return f"{host}:{port}"

    def start(self) -> None:
        self.server.start()
        self._watch.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            if not self.server.running:
                self.restarts += 1
                self.server.restart()

    def stop(self) -> None:
        self._stop.set()
        self._watch.join(10)
        self.server.stop()


@pytest.fixture
def serve(data_set: Path, tmp_path: Path, no_leaked_servers: None) -> Iterator[object]:
    started: list[Supervised] = []

    def start(kind: str, **keys: object) -> Supervised:
        directory = tmp_path / kind
        shutil.copytree(data_set, directory)
        lines = "".join(f"  {k.replace('_', '-')} {v}\n" for k, v in keys.items())
        section = f"<{kind} 1>\n  path {directory / 'Data.fs'}\n{lines}</{kind}>"
        server = Supervised(directory, section)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def vfab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env(), cwd=ROOT,
    )  # fmt: skip


def found(invariants: dict[str, object]) -> set[str]:
    """The kinds of violation and the anomalies a check found."""
    counts = invariants.get("counts") or {}
    anomalies = invariants.get("anomalies") or {}
    assert isinstance(counts, dict) and isinstance(anomalies, dict)
    return {k for k, n in counts.items() if n} | set(anomalies)


#: Two labs matching each other's prices, all the time, on the two most
#: popular capabilities: a write skew each time two of them overlap.
MATCHING = ["--skew", "3"] + [
    arg
    for op in ("browse", "lookup", "create-sequence", "change-price",
               "list-sequences", "read-sequence", "transfer-wafers",
               "audit-stock", "reprice-pair", "compare-offers")
    for arg in (f"--weight-{op}", "0")
] + ["--weight-match-price", "1"]  # fmt: skip


def check_both(
    address: str, tmp_path: Path, mix: list[str] = MIX
) -> tuple[set[str], set[str]]:
    """Run scale --target, then verify --target, on *address*: what each
    found; both must exit 1 and verify must say WRONG."""
    out = tmp_path / "scale.json"
    scale = vfab("scale", "--target", address, "--clients", "4", "--duration", "4",
                 "--warmup", "0.5", *mix, "--json", str(out), "-q")  # fmt: skip
    assert "Traceback" not in scale.stdout + scale.stderr, scale.stderr
    assert scale.returncode == 1, scale.stdout + scale.stderr
    (point,) = json.loads(out.read_text())["points"]
    by_scale = found(point["invariants"])
    out = tmp_path / "verify.json"
    verify = vfab("verify", "--target", address, "--clients", "4", "--budget", "4",
                  "--json", str(out), "-q")  # fmt: skip
    assert "Traceback" not in verify.stdout + verify.stderr, verify.stderr
    assert verify.returncode == 1, verify.stdout + verify.stderr
    row = verdict_rows(verify.stdout)["target"]
    assert row.startswith("WRONG"), verify.stdout
    (storage,) = json.loads(out.read_text())["storages"]
    assert storage["ok"] is False
    by_verify = {
        f"scenario {s['name']}"
        for s in storage["scenarios"]
        if s["verdict"] == "violation"
    }
    for p in storage["points"]:
        by_verify |= found(p["invariants"])
    return by_scale, by_verify


def test_stale_reads_for_a_while_after_a_commit(serve, tmp_path: Path) -> None:
    server = serve("stalefilestorage", seconds=1.0)
    by_scale, by_verify = check_both(server.address, tmp_path)
    stale = {"G-single", "G-single-realtime", "stale snapshot"}
    assert by_scale & stale, by_scale
    assert by_verify & stale, by_verify


def test_dropped_invalidations(serve, tmp_path: Path) -> None:
    server = serve("forgetfulfilestorage")
    by_scale, by_verify = check_both(server.address, tmp_path)
    assert "G-single" in by_scale, by_scale
    assert by_verify & {"G-single", "G-single-realtime"}, by_verify


def test_a_field_changed_in_range(serve, tmp_path: Path) -> None:
    server = serve("rangefilestorage")
    by_scale, by_verify = check_both(server.address, tmp_path)
    assert "corrupt value" in by_scale, by_scale
    assert "corrupt value" in by_verify, by_verify


def test_a_record_never_written(serve, tmp_path: Path) -> None:
    server = serve("holefilestorage")
    by_scale, by_verify = check_both(server.address, tmp_path)
    assert "lost record" in by_scale, by_scale
    assert "lost record" in by_verify, by_verify


def test_commits_acknowledged_then_lost_with_the_server(serve, tmp_path: Path) -> None:
    server = serve("volatilefilestorage", die_after=60)
    by_scale, by_verify = check_both(server.address, tmp_path)
    assert server.restarts >= 2
    assert "lost write" in by_scale, by_scale
    assert "lost write" in by_verify, by_verify


def test_an_abort_that_commits(serve, tmp_path: Path) -> None:
    server = serve("abortcommitsfilestorage")
    by_scale, by_verify = check_both(server.address, tmp_path)
    aborted = {"phantom write", "G1a"}
    assert by_scale & aborted, by_scale
    assert by_verify & aborted, by_verify


def test_last_writer_wins(serve, tmp_path: Path) -> None:
    server = serve("lwwfilestorage")
    by_scale, by_verify = check_both(server.address, tmp_path)
    assert "lost update" in by_scale, by_scale
    assert "lost update" in by_verify, by_verify


def test_read_current_not_checked(serve, tmp_path: Path) -> None:
    server = serve("noreadcurrentfilestorage")
    by_scale, by_verify = check_both(server.address, tmp_path, MATCHING)
    assert "G2-item (readCurrent)" in by_scale, by_scale
    # verify's own scenario for it is deterministic; its load may find it too
    assert "scenario readcurrent-then-commit" in by_verify, by_verify
