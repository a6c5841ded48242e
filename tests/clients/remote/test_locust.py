"""locustfile.py as a user runs it: headless, several processes, a real server.

Each test is a bounded run of the real `locust` command from the project
directory (so locust.conf applies) against `vfab-bench serve`.
"""

from __future__ import annotations

import csv
import itertools
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from scenarios.load.mix import OPERATIONS
from scenarios.load.options import weight_flag
from storages import StorageOptions
from storages.zeo import free_port, open_client
from tests.support.served import LOCUST, ROOT, Served, env, locust_pids, serve
from tests.support.tiers import starts

ASYNCIO_TROUBLE = ("never awaited", "Task was destroyed", "Traceback")
ARTIFACTS = ROOT / "results" / "test-artifacts"

pytestmark = pytest.mark.skipif(not LOCUST.exists(), reason="locust is not installed")


@pytest.fixture(scope="module")
@starts("subprocess")
def served() -> Iterator[Served]:
    with serve() as s:
        yield s


def locust(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LOCUST), "-f", "locustfile.py", "--headless", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(),
        cwd=ROOT,
    )


class ClientCounter:
    """Samples the server's client connections (beside its own) while a run
    goes on."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.storage = open_client(address, StorageOptions())
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.samples.append(int(self.storage.server_status()["connections"]) - 1)

    def __enter__(self) -> ClientCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.storage.close()


@pytest.mark.subprocess
def test_headless_run_with_two_processes(
    served: Served, tmp_path: Path, no_leaked_servers: None
) -> None:
    out = tmp_path / "out"
    with ClientCounter(served.host_port) as clients:
        proc = locust(
            "-u", "8", "-r", "8", "-t", "4s", "--processes", "2",
            "--zeo-address", served.address, "--csv", str(out),
        )  # fmt: skip
    output = proc.stdout + proc.stderr
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "locust-headless.log").write_text(output)
    log = "\n".join(ln for ln in output.splitlines() if "/" in ln[:40])  # not tables
    assert proc.returncode == 0, log
    for trouble in ASYNCIO_TROUBLE:
        assert trouble not in output, output
    assert "consistency: 0 violations" in output, log
    assert "did not send their history" not in output, log

    with open(f"{out}_stats.csv", newline="") as f:
        rows = {(r["Type"], r["Name"]): r for r in csv.DictReader(f)}
    for op in OPERATIONS:
        if not op.weight:
            continue  # off by default (verify's pairs)
        row = rows[("zodb", op.name)]
        assert int(row["Request Count"]) > 0, op.name
        assert int(row["Failure Count"]) == 0, op.name
    assert all(kind in ("zodb", "conflict", "") for kind, _ in rows)

    # One ZEO client per locust process: two workers, none on the master
    # (which connects only briefly, before and after the run, to check).
    # Sampled every 0.2 s: two clients throughout most of the 4 s run.
    samples = clients.samples
    streak = max(len(list(g)) for k, g in itertools.groupby(samples) if k == 2)
    assert streak * 0.2 >= 2.5, samples
    assert max(samples) <= 3, samples
    assert not locust_pids(), "locust processes outlived the run"


@pytest.mark.subprocess
def test_broken_invariants_fail_the_run(
    served: Served, tmp_path: Path, no_leaked_servers: None
) -> None:
    """A history that says a sequence was committed that is not stored
    makes the check fail: a lost write, exit 1."""
    shim = tmp_path / "lying.py"
    shim.write_text(
        "from locust import events\n"
        "from locustfile import VfabUser, client  # noqa: F401\n"
        "from scenarios.load.history import Access, Event\n\n"
        "@events.test_stop.add_listener\n"
        "def lie(**_kw):\n"
        "    client.history.record(Event('liar', 1, 'create_sequence', 'ok', None,\n"
        "        'ffff', (), (Access('sequence', 12345, 1, ('nobody', 'none', 3)),)))\n"
    )
    proc = subprocess.run(
        [str(LOCUST), "-f", str(shim), "--headless", "-u", "2", "-r", "2",
         "-t", "2s", "--target", f"zeo://{served.address}"],
        capture_output=True, text=True, timeout=90, env=env(), cwd=ROOT,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-3000:]
    assert "consistency: 1 violation (1 lost write)" in output
    assert "sequence 12345 created by liar#1" in output


def children(pid: int) -> list[int]:
    """The pids of *pid*'s children (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


@pytest.mark.subprocess
@pytest.mark.server
def test_a_worker_killed_mid_run_is_not_checked_never_blamed(
    served: Served, no_leaked_servers: None
) -> None:
    """Two workers, one SIGKILLed mid-run: what it sent with its stats
    reports is checked, what it did after is not, and the run says so:
    exit 3, "not fully checked: worker X lost", 0 violations."""
    import os
    import signal
    import time

    process = subprocess.Popen(
        [str(LOCUST), "-f", "locustfile.py", "--headless", "-u", "6", "-r", "6",
         "-t", "14s", "--processes", "2", "--zeo-address", served.address],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(),
        cwd=ROOT,
    )  # fmt: skip
    try:
        workers: list[int] = []
        deadline = time.monotonic() + 30
        while len(workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = children(process.pid)
        assert len(workers) == 2, workers
        time.sleep(6)  # the users work and the workers report (every 3 s)
        os.kill(workers[0], signal.SIGKILL)
        output, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    lines = [ln for ln in output.splitlines() if "vfab" in ln]
    assert process.returncode == 3, "\n".join(lines) or output[-3000:]
    (check,) = [ln for ln in lines if "consistency:" in ln]
    assert "consistency: 0 violations; not fully checked: worker " in check
    assert " lost" in check
    # what the killed worker did before its last report was checked (the
    # lines after the verdict)
    assert "sequences made by operations" in "\n".join(lines)
    assert not locust_pids(), "locust processes outlived the run"


@pytest.mark.subprocess
def test_locusts_host_is_the_target(
    served: Served, tmp_path: Path, no_leaked_servers: None
) -> None:
    """locust's own --host (the web UI's Host field) names the database when
    no --target is given: the users work on it, from every worker process,
    and the data are checked there."""
    out = tmp_path / "out"
    proc = locust(
        "-u", "2", "-r", "2", "-t", "2s", "--processes", "2",
        "--host", served.address, "--csv", str(out),
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert "consistency: 0 violations" in output, output[-3000:]
    with open(f"{out}_stats.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Type"] == "zodb"]
    assert sum(int(r["Request Count"]) for r in rows) > 0
    assert all(int(r["Failure Count"]) == 0 for r in rows), rows


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--weight-lookup", "-1"], "weight of lookup must be 0 or more"),
        (["--processes", "2", "--zeo-address", "127.0.0.1:PORT"], "cannot reach"),
        (["--target", "127.0.0.1:PORT"], "cannot reach"),
        # locust's Host replaces --zeo-address (which the test adds)
        (["--host", "127.0.0.1:PORT"], "cannot reach"),
        (["--target", "sqlite://?keep_history=false"], "needs ?data_dir"),
        (["--host", "127.0.0.1:1", "--target", "127.0.0.1:2"], "not both"),
    ],
)
def test_bad_options_stop_before_any_user(
    served: Served, args: list[str], message: str, no_leaked_servers: None
) -> None:
    args = [a.replace("PORT", str(free_port())) for a in args]
    if "--zeo-address" not in args and "--target" not in args:
        args += ["--zeo-address", served.address]
    proc = locust("-u", "1", "-t", "2s", *args, timeout=30)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output[-3000:]
    assert message in output and "Traceback" not in output
    assert not locust_pids(), "forked workers outlived their master"


@pytest.mark.subprocess
@pytest.mark.parametrize("processes", [[], ["--processes", "2"]], ids=["one", "two"])
def test_csv_and_json_file_keep_every_row(
    served: Served, tmp_path: Path, processes: list[str], no_leaked_servers: None
) -> None:
    """--csv beside --json-file: every operation's row keeps its figures in
    both (saving the JSON used to reset them before the CSV's last write),
    and the final summary is printed as locust prints it."""
    out, saved = tmp_path / "out", tmp_path / "saved"
    proc = locust(
        "-u", "4", "-r", "4", "-t", "3s", *processes,
        "--zeo-address", served.address, "--csv", str(out),
        "--json-file", str(saved),
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    # one process has no master; --processes' own token is never logged
    assert "VFAB_WORKER_TOKEN" not in output, output[-3000:]
    with open(f"{out}_stats.csv", newline="") as f:
        every = list(csv.DictReader(f))
    rows = [r for r in every if r["Type"] == "zodb"]
    assert rows and all(int(r["Request Count"]) > 0 for r in rows), rows
    # a request's size: the bytes its operation stored and loaded (was 0)
    sizes = {r["Name"]: float(r["Average Content Size"]) for r in rows}
    assert all(sizes[op] > 0 for op in ("change_price", "create_sequence")), sizes
    (total,) = [r for r in every if r["Name"] == "Aggregated"]
    assert int(total["Request Count"]) >= sum(int(r["Request Count"]) for r in rows)
    entries = json.loads(Path(f"{saved}.json").read_text())
    by_name = {e["name"]: e["num_requests"] for e in entries if e["method"] == "zodb"}
    assert by_name == {r["Name"]: int(r["Request Count"]) for r in rows}
    # locust's own summary: its table's heading and the percentiles'
    assert "Response time percentiles (approximated)" in output, output[-3000:]
    assert "# reqs" in output


@pytest.mark.subprocess
@pytest.mark.parametrize("processes", [[], ["--processes", "2"]], ids=["one", "two"])
def test_ctrl_c_stops_cleanly(
    served: Served, processes: list[str], no_leaked_servers: None
) -> None:
    """Ctrl-C (SIGINT to the terminal's process group) while users run: one
    line saying so, the data checked, locust's own exit status; it printed a
    bare "KeyboardInterrupt", and with --processes its workers died with
    ZEO tracebacks, their history unsent ("not fully checked", exit 3)."""
    import os
    import signal
    import time

    process = subprocess.Popen(
        [str(LOCUST), "-f", "locustfile.py", "--headless", "-u", "4", "-r", "4",
         "-t", "60s", *processes, "--zeo-address", served.address],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(),
        cwd=ROOT, start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    assert process.stdout is not None
    stdout = process.stdout
    reader = threading.Thread(target=lambda: lines.extend(stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        # locust says "All users spawned", or, when a worker's report is
        # late, "Spawning is complete"
        spawned = ("All users spawned", "Spawning is complete")
        while not any(w in ln for ln in list(lines) for w in spawned):
            assert process.poll() is None and time.monotonic() < deadline, lines
            time.sleep(0.1)
        time.sleep(2)  # the users work
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    reader.join(10)
    output = "".join(lines)
    ours = [ln for ln in lines if "/vfab:" in ln]
    assert code == 0, "".join(ours) or output[-3000:]
    assert "KeyboardInterrupt" not in output and "Traceback" not in output, output
    assert len([ln for ln in ours if "Ctrl-C" in ln]) == 1, ours
    (check,) = [ln for ln in ours if "consistency:" in ln]
    assert "consistency: 0 violations" in check and "not fully" not in check
    assert not locust_pids(), "locust processes outlived Ctrl-C"


@pytest.mark.subprocess
def test_conflicts_retried_are_apart_from_requests_and_failures(
    served: Served, tmp_path: Path, no_leaked_servers: None
) -> None:
    """Users changing one price conflict: each retried attempt is a
    "conflict" row, never a failure, and out of locust's total (its RPS
    counted them); the check is lines a person reads, the verdict first
    (it was one line of 345 characters)."""
    out = tmp_path / "out"
    weights = [
        a
        for op in OPERATIONS
        for a in (weight_flag(op.name), "100" if op.name == "change_price" else "0")
    ]
    proc = locust(
        "-u", "6", "-r", "6", "-t", "4s", "--skew", "100", "--retries", "1000",
        *weights,
        "--zeo-address", served.address, "--csv", str(out),
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    with open(f"{out}_stats.csv", newline="") as f:
        rows = {(r["Type"], r["Name"]): r for r in csv.DictReader(f)}
    done = rows[("zodb", "change_price")]
    conflicts = rows[("conflict", "change_price")]
    total = rows[("", "Aggregated")]
    assert int(conflicts["Request Count"]) > 0, rows
    assert int(conflicts["Failure Count"]) == 0
    assert total["Request Count"] == done["Request Count"], rows
    assert total["Failure Count"] == done["Failure Count"], rows
    messages = [ln.partition("/vfab: ")[2] for ln in output.splitlines()]
    check = [m for m in messages if m]
    # the verdict its own line, plain words first, then what was checked,
    # a line each
    first = next(i for i, m in enumerate(check) if "consistency:" in m)
    assert check[first].startswith("right: every read saw a committed state"), check
    assert "consistency: 0 violations" in check[first], check
    assert "attempts" not in check[first], check[first]
    assert check[first + 1].startswith("  checked "), check
