"""`vfab-bench scale --workers N` and `vfab-bench worker` (issue 26): a
server, a master and two workers on hosts made of network namespaces
(tests/support/netns.py); a worker killed mid-point; waits that end; an
incomplete point as the report shows it; `serve` on a namespace's address
for RelStorage's servers."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scenarios.checker.check import not_checked
from scenarios.scale.compare import compare_scale
from scenarios.scale.model import ScalePoint, ScaleRun
from scenarios.scale.report import text
from storages.zeo import free_port
from tests.conftest import factory_or_skip
from tests.support.netns import Hosts, netns_hosts  # noqa: F401 - the fixture
from tests.support.served import ROOT, env

PYTHON = sys.executable
#: The token the tests give their masters and workers (VFAB_WORKER_TOKEN).
TOKEN = "tests-of-the-cluster-0123456789"
SHORT = ["--warmup", "0.5", "--windows", "2", "--size", "small"]


def bench(*args: str) -> list[str]:
    return [PYTHON, "-m", "scenarios.cli", *args]


def sealed() -> dict[str, str]:
    """The environment of a master or worker of these tests' run."""
    return env() | {"VFAB_WORKER_TOKEN": TOKEN}


class Lines:
    """A process's stderr, read as it comes (a thread), to wait for a line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        import threading

        self.process = process
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, fragment: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if fragment in line:
                    return line
            if self.process.poll() is not None and not self._thread.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no {fragment!r} in {self.lines}")

    def text(self) -> str:
        self._thread.join(10)
        return "\n".join(self.lines)


@pytest.fixture
def zeo_on_db(netns_hosts: Hosts) -> Iterator[str]:  # noqa: F811
    """`vfab-bench serve` (ZEO on a FileStorage) in the db namespace; its
    address."""
    address = f"{netns_hosts.address('db')}:8100"
    server = netns_hosts.popen(
        "db",
        bench("serve", "--storage", "file", "--host", netns_hosts.address("db"),
              "--port", "8100"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(), cwd=ROOT,
    )  # fmt: skip
    assert server.stdout is not None
    line = server.stdout.readline()
    assert f"on {address}" in line, line + (
        server.stderr.read() if server.stderr else ""
    )
    yield address
    server.send_signal(signal.SIGTERM)
    assert server.wait(30) == 0


def cluster(
    hosts: Hosts, target: str, out: Path, *args: str
) -> tuple[subprocess.Popen[str], list[subprocess.Popen[str]], list[Lines]]:
    """A master in the master namespace and a worker in each of w1, w2."""
    master_ip = hosts.address("master")
    master = hosts.popen(
        "master",
        bench("scale", "--target", target, "--workers", "2",
              "--master-bind-host", master_ip, "--json", str(out), *SHORT, *args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=sealed(), cwd=ROOT,
    )  # fmt: skip
    workers = [
        hosts.popen(
            role,
            bench("worker", "--master-host", master_ip, "--connect-timeout", "60"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Its own TMPDIR, under the test's: a worker killed mid-point
            # leaves its scratch directory there, not in /tmp.
            env=sealed() | {"TMPDIR": str(scratch(out.parent / f"{role}-tmp"))},
            cwd=ROOT,
        )  # fmt: skip
        for role in ("w1", "w2")
    ]
    return master, workers, [Lines(w) for w in workers]


def scratch(path: Path) -> Path:
    path.mkdir(exist_ok=True)
    return path


@pytest.mark.netns
@pytest.mark.server
@pytest.mark.subprocess
def test_a_curve_over_two_worker_hosts(
    netns_hosts: Hosts,  # noqa: F811
    zeo_on_db: str,
    tmp_path: Path,
) -> None:
    """1, 2 and 4 clients on two worker hosts against ZEO on the db host,
    every point checked: exit 0, and each point says which hosts served it."""
    out = tmp_path / "cluster.json"
    master, workers, said = cluster(
        netns_hosts, zeo_on_db, out, "--clients", "1,2,4", "--duration", "2"
    )
    stdout, stderr = master.communicate(timeout=240)
    assert master.returncode == 0, stdout + stderr
    for worker, lines in zip(workers, said, strict=True):
        assert worker.wait(30) == 0, lines.text()
        assert "the master's run ended" in lines.text()
    run = ScaleRun.load(out)
    assert [p.clients for p in run.points] == [1, 2, 4]
    addresses = {netns_hosts.address("w1"), netns_hosts.address("w2")}
    for p in run.points:
        assert p.incomplete is None and p.started == p.clients
        assert p.check.checked and p.check.ok, p.check
        assert "consistency: 0 violations" in p.check.summary
        workers_of = [h for h in p.hosts if h.get("role") != "master"]
        assert sum(h["clients"] for h in workers_of) == p.clients
        assert {h["address"] for h in workers_of} <= addresses
        # one kernel: the clocks agree exactly
        assert all(h["clock"]["uncertainty_s"] == 0 for h in workers_of)
        (master_entry,) = [h for h in p.hosts if h.get("role") == "master"]
        assert master_entry["merge_s"] is not None
    assert {h["address"] for h in run.points[-1].hosts if "clients" in h} == addresses
    assert "served by" in stdout


@pytest.mark.netns
@pytest.mark.server
@pytest.mark.subprocess
def test_a_worker_killed_mid_point_leaves_it_incomplete(
    netns_hosts: Hosts,  # noqa: F811
    zeo_on_db: str,
    tmp_path: Path,
) -> None:
    """SIGKILL to one worker inside the window: the point is incomplete
    (named, no figure), the data checked as far as the history reached,
    exit 3; the run stops there and the other worker ends cleanly."""
    out = tmp_path / "cluster.json"
    master, workers, said = cluster(
        netns_hosts, zeo_on_db, out, "--clients", "2,4", "--duration", "8"
    )
    said[1].wait_for("point 1:", timeout=120)
    time.sleep(3)  # past the warmup, inside the 8 s window
    workers[1].kill()
    stdout, stderr = master.communicate(timeout=240)
    assert master.returncode == 3, stdout + stderr
    assert workers[0].wait(30) == 0, said[0].text()
    run = ScaleRun.load(out)
    assert run.points == ()  # no figure; the run stopped at it
    (point,) = run.incomplete
    assert point.clients == 2
    assert point.incomplete is not None and "was lost" in point.incomplete
    assert point.summary()["ops_per_s"] is None and point.hists == {}
    assert point.check.ok is None, point.check
    assert "lost" in point.check.summary
    assert "target, 2 clients: incomplete:" in stdout
    data = json.loads(out.read_text())
    assert data["points"][0]["summary"]["ops"] is None


@pytest.mark.server
@pytest.mark.subprocess
@pytest.mark.parametrize(
    "stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name
)
def test_a_worker_stopped_mid_point_is_said_once(
    stop: signal.Signals, tmp_path: Path
) -> None:
    """Issue 47: the one worker of `scale --workers 1` sent *stop* a second
    into its point.  The master exits 3 and its stderr says what happened
    (the worker left mid-point) once: none of locust's own lines, which
    name another cause ("can't start a distributed test ...")."""
    port = free_port()
    worker_tmp = scratch(tmp_path / "worker-tmp")
    worker = subprocess.Popen(
        bench("worker", "-q", "--master-port", str(port)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=sealed() | {"TMPDIR": str(worker_tmp)}, cwd=ROOT,
    )  # fmt: skip
    master = subprocess.Popen(
        bench("scale", "--storage", "zeo", "--clients", "1", "--duration", "8",
              "--warmup", "0", "--windows", "1", "--workers", "1",
              "--master-port", str(port), "--json", str(tmp_path / "s.json")),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=sealed(),
        cwd=ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not any(
            f.stat().st_size for f in worker_tmp.glob("vfab-worker-*/process-*.jsonl")
        ):
            assert time.monotonic() < deadline and master.poll() is None
            time.sleep(0.1)
        time.sleep(1)  # its client has begun: a second into the point
        worker.send_signal(stop)
        stdout, stderr = master.communicate(timeout=120)
        assert worker.wait(30) != 0
    finally:
        for proc in (master, worker):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert master.returncode == 3, stdout + stderr
    assert "incomplete" in stdout
    lost = [line for line in stderr.splitlines() if "was lost" in line]
    assert len(lost) == 1 and "(it quit)" in lost[0], stderr
    assert "locust" not in stderr and "can't start" not in stderr, stderr


@pytest.mark.subprocess
def test_workers_that_never_come_end_the_wait(tmp_path: Path) -> None:
    """A master no worker joins, and a worker no master answers: each ends
    after its bound, one line, exit 2, nothing written."""
    port = free_port()
    out = tmp_path / "never.json"
    proc = subprocess.run(
        bench("scale", "--workers", "2", "--master-port", str(port),
              "--connect-timeout", "2", "--json", str(out), "-q"),
        capture_output=True, text=True, timeout=120, env=sealed(), cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "0 of 2 workers connected" in line
    assert not out.exists()
    proc = subprocess.run(
        bench("worker", "--master-port", str(port), "--connect-timeout", "2", "-q"),
        capture_output=True, text=True, timeout=120, env=sealed(), cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "no master answered" in line


def _lookups() -> str:
    from scenarios.clients import histogram

    h = histogram.new()
    histogram.record_ms(h, 1.5)
    return histogram.encode(h)


def test_an_incomplete_point_shows_no_figure() -> None:
    """What the report and the JSON say of a point a lost host cut short."""
    point = ScalePoint(
        storage="zeo", clients=4, started=2, window_s=10.0, rate=None, hists={},
        commits=0, conflicts=0, failed=0, errors={}, backlog=0, late_s=0.0,
        client_cpu_s=0.0, server_cpu_s=None, log_records=0, killed_clients=0,
        check=not_checked("worker b (10.200.0.4) lost"),
        incomplete="worker b (10.200.0.4) was lost (missing) 3.1 s into the window",
        hosts=({"host": "a", "address": "10.200.0.3", "clients": 2, "processes": 2,
                "kernel": "k", "cores": 2},),
    )  # fmt: skip
    run = ScaleRun({"host": {"cpu_count": 2}}, (point,))
    shown = text(run)
    row = next(ln for ln in shown.splitlines() if ln.startswith("zeo "))
    assert "incomplete" in row and "0.0" not in row
    assert "zeo, 4 clients: incomplete: worker b (10.200.0.4) was lost" in shown
    assert "served by a (10.200.0.3): 2 clients in 2 processes" in shown
    back = ScaleRun.from_json(json.loads(json.dumps(run.to_json())))
    assert back.points == () and back.incomplete[0].incomplete == point.incomplete
    assert back.incomplete[0].hosts == point.hosts
    assert set(back.to_json()["points"][0]["summary"].values()) == {None}
    # compare reads no figure of it: the point is in one file only
    whole = dataclasses.replace(
        point, incomplete=None, started=4, hists={"lookup": _lookups()}
    )
    two = dataclasses.replace(whole, clients=2, started=2)
    old, new = (
        ScaleRun(run.metadata, (two, whole)),
        ScaleRun(run.metadata, (two, point)),
    )
    comparison = compare_scale(old, new)
    assert [p.clients for p in comparison.points] == [2]
    assert comparison.unmatched == ("zeo at 4 clients (OLD)",)


@pytest.mark.netns
@pytest.mark.server
@pytest.mark.subprocess
@pytest.mark.parametrize("name", ["relstorage-pg", "relstorage-mysql"])
def test_serve_takes_clients_of_other_hosts(
    netns_hosts: Hosts,  # noqa: F811
    name: str,
    tmp_path: Path,
) -> None:
    """`serve --storage relstorage-pg --host IP` (and MariaDB): a client on
    another host reaches the database it serves, and serve says it is
    exposed."""
    factory_or_skip(name)
    db = netns_hosts.address("db")
    server = netns_hosts.popen(
        "db", bench("serve", "--storage", name, "--host", db),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(), cwd=ROOT,
    )  # fmt: skip
    assert server.stdout is not None and server.stderr is not None
    line = server.stdout.readline()
    assert f"@{db}:" in line, line + server.stderr.read()
    target = line.split()[-1]
    out = tmp_path / "s.json"
    proc = subprocess.run(
        netns_hosts.command(
            "w1",
            bench("scale", "--target", target, "--clients", "1", "--duration", "1",
                  *SHORT, "--json", str(out), "-q"),
        ),
        capture_output=True, text=True, timeout=180, env=env(), cwd=ROOT,
    )  # fmt: skip
    server.send_signal(signal.SIGTERM)
    warnings = server.communicate(timeout=60)[1]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (point,) = ScaleRun.load(out).points
    assert point.ops > 0 and point.check.ok, point.check
    assert "not loopback" in warnings


@pytest.mark.netns
@pytest.mark.subprocess
def test_a_killed_sessions_hosts_are_removed_at_the_next_start(
    netns_hosts: Hosts,  # noqa: F811
) -> None:
    """A session killed with its namespaces made leaves them; the next
    start removes them, and only them (this session's set lives on)."""
    from tests.support import netns

    child = subprocess.Popen(
        [PYTHON, "-c",
         "import time\nfrom tests.support import netns\nwith netns.hosts('dead00'):\n"
         "    print('made', flush=True)\n    time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True, env=env(), cwd=ROOT,
    )  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "made"
    child.kill()
    child.wait(30)

    def left() -> list[str]:
        return [n for n in netns._namespaces() + netns._links() if "dead00" in n]

    assert left(), "the killed session made nothing"
    assert "dead00" in netns.clean_stale()
    assert left() == []
    assert netns_hosts.namespace("db") in netns._namespaces()
    assert netns_hosts.token not in netns.clean_stale()


def test_a_seal_opens_once_for_its_token_peer_and_direction() -> None:
    """What the master and its workers put on every frame
    (scenarios.clients.remote.seal): it opens with the run's token, for the peer and
    the direction it was made for, once; any change to the frame, another
    token, a replay or a frame of the other direction does not open."""
    from scenarios.clients.remote.seal import TO_MASTER, TO_WORKER, Seal

    token = "a-token-of-this-run-0123"
    sender, master = Seal(token, TO_MASTER), Seal(token, TO_MASTER)
    frame = sender.seal(b"worker-1", b"payload")
    assert master.open(b"worker-1", frame) == b"payload"
    assert master.open(b"worker-1", frame) is None  # a replay
    second = sender.seal(b"worker-1", b"more")
    assert Seal("another-runs-token-0123", TO_MASTER).open(b"worker-1", second) is None
    assert Seal(token, TO_WORKER).open(b"worker-1", second) is None
    assert master.open(b"worker-2", second) is None
    assert master.open(b"worker-1", second[:-1] + b"X") is None
    assert master.open(b"worker-1", b"plain bytes") is None
    assert master.open(b"worker-1", second) == b"more"


def test_two_workers_of_one_host_are_told_apart() -> None:
    """Two workers on one machine (one host, one address) are named with
    their process ids; workers of different hosts are not."""
    from scenarios.scale.report import hosts_line

    same = (
        {"host": "vm", "address": "127.0.0.1", "pid": 11, "clients": 1, "processes": 1},
        {"host": "vm", "address": "127.0.0.1", "pid": 22, "clients": 1, "processes": 1},
    )
    line = hosts_line(same)
    assert "vm (127.0.0.1, pid 11): 1 client" in line
    assert "vm (127.0.0.1, pid 22): 1 client" in line
    apart = (same[0], {**same[1], "host": "other", "address": "10.0.0.2"})
    assert "pid" not in hosts_line(apart)
