"""The locustfile's --master hears only workers holding the run's token
(issue 35): real `locust --master` and `--worker` processes on 127.0.0.1,
a peer of tests/support/hostile_peers.py beside them, a served small data set.

The test gives master and worker one token in their environment, as
docs/locust.md tells a user to; a master without one refuses, and the
token's value is never logged (the web UI serves the log at /logs).  A peer
sending forged history unsealed changes nothing; the same history sealed
with the token (the control) makes the check fail, so the forgery would
count if it were heard.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from storages.zeo import free_port
from tests.support.served import LOCUST, ROOT, Served, env, locust_pids, serve
from tests.support.tiers import starts

pytestmark = pytest.mark.skipif(not LOCUST.exists(), reason="locust is not installed")

PEERS = ROOT / "tests" / "support" / "hostile_peers.py"
TOKEN_VAR = "VFAB_WORKER_TOKEN"


@pytest.fixture(scope="module")
@starts("subprocess")
def served() -> Iterator[Served]:
    with serve() as s:
        yield s


def untokened() -> dict[str, str]:
    """The suite's environment without a token of the developer's."""
    out = env()
    out.pop(TOKEN_VAR, None)
    return out


class Lines:
    """A process's merged output, read as it comes."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        assert process.stdout is not None
        stdout = process.stdout
        self._thread = threading.Thread(
            target=lambda: self.lines.extend(stdout), daemon=True
        )
        self._thread.start()

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if found := re.search(pattern, line):
                    return found
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"no {pattern!r} in:\n" + "".join(self.lines)[-3000:])

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "".join(self.lines)


def start(argv: list[str], environ: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=environ, cwd=ROOT,
    )  # fmt: skip


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("peer", "sealed", "status"),
    [
        ("records", False, 0),
        ("junk", False, 0),
        ("sealed-records", True, 1),
        ("victims-records", True, 0),
    ],
    ids=["forged-history", "junk-frames", "control-sealed-forgery", "bound"],
)
def test_only_the_runs_workers_are_heard(
    served: Served, peer: str, sealed: bool, status: int, no_leaked_servers: None
) -> None:
    """*bound*: a peer holding the token sends the forged records as the
    real worker's clients: refused and said, never checked as that
    worker's (they made the verdict "1 violation")."""
    port = free_port()
    workers = "2" if sealed else "1"  # the forger with the token joins
    token = "t0ken-of-this-test-" + str(port)
    master = start(
        [str(LOCUST), "-f", "locustfile.py", "--master", "--headless",
         "--expect-workers", workers, "--expect-workers-max-wait", "40",
         "-u", "2", "-r", "2", "-t", "3s", "--master-bind-port", str(port),
         "--zeo-address", served.address],
        untokened() | {TOKEN_VAR: token},
    )  # fmt: skip
    output = Lines(master)
    others: list[subprocess.Popen[str]] = []
    try:
        output.wait_for(rf"{TOKEN_VAR}=<the same token> locust -f", 60)
        worker = start(
            [str(LOCUST), "-f", "locustfile.py", "--worker",
             "--master-port", str(port)],
            untokened() | {TOKEN_VAR: token},
        )  # fmt: skip
        others.append(worker)
        peer_argv = [sys.executable, str(PEERS), peer, str(port)]
        if peer == "victims-records":
            victim = output.wait_for(r"(\S+) \(index \d+\) reported as ready", 60)
            peer_argv = peer_argv[:2] + ["sealed-records", str(port), token]
            peer_argv.append(f"w{victim.group(1)[-6:]}.")
        elif sealed:
            peer_argv.append(token)
        others.append(start(peer_argv, untokened()))
        master.wait(timeout=120)
        worker_status = worker.wait(timeout=60)
    finally:
        for process in [master, *others]:
            stop(process)
    text = output.text()
    lines = [ln for ln in text.splitlines() if "/vfab:" in ln]
    check = [ln for ln in lines if "consistency:" in ln]
    assert master.returncode == status, "\n".join(lines) or text[-3000:]
    assert len(check) == 1, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert token not in text
    if status == 0:
        assert "consistency: 0 violations" in check[0]
        ignored = [ln for ln in lines if "ignoring" in ln]
        if peer == "records":  # junk's TCP bytes may never make a frame
            assert len(ignored) == 1, lines
        assert worker_status == 0
    else:
        # heard: the forged sequence, created twice and never stored
        assert "sequence 987654" in text, text[-3000:]
    refused = [ln for ln in lines if "refused" in ln and "history record" in ln]
    if peer == "victims-records":
        assert "sequence 987654" not in text, text[-3000:]
        assert len(refused) == 2, lines  # said once, and counted at the end
        assert "clients of another worker" in refused[0]
    else:
        assert not refused, lines
    assert not locust_pids(), "locust processes outlived the run"


@pytest.mark.subprocess
@pytest.mark.parametrize("token", [None, "short"], ids=["none", "too-short"])
def test_a_worker_without_a_token_refuses(token: str | None) -> None:
    """No master needed: the worker refuses before it connects, in one
    line of its own (beside locust's start banner), exit 2."""
    environ = untokened() | ({TOKEN_VAR: token} if token else {})
    proc = subprocess.run(
        [str(LOCUST), "-f", "locustfile.py", "--worker",
         "--master-port", str(free_port())],
        capture_output=True, text=True, timeout=60, env=environ, cwd=ROOT,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output[-3000:]
    ours = [ln for ln in output.splitlines() if "/vfab:" in ln]
    assert len(ours) == 1 and TOKEN_VAR in ours[0], output[-3000:]
    assert "Traceback" not in output
    assert not locust_pids(), "the worker outlived its refusal"


def free_ports(n: int) -> list[int]:
    ports: set[int] = set()
    while len(ports) < n:
        ports.add(free_port())
    return sorted(ports)


def web_logs(port: int, process: subprocess.Popen[str], timeout: float) -> str:
    """The web UI's /logs (no authentication), once it answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            url = f"http://127.0.0.1:{port}/logs"
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode()
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)


@pytest.mark.subprocess
def test_a_master_without_a_token_refuses_and_logs_none(
    served: Served, no_leaked_servers: None
) -> None:
    """`locust --master` without VFAB_WORKER_TOKEN logged the worker's
    command line with a token it made, and the web UI served it at /logs:
    now one line naming the variable, exit 2, no token made or shown."""
    web, port = free_ports(2)
    master = start(
        [str(LOCUST), "-f", "locustfile.py", "--master", "--web-port", str(web),
         "--master-bind-port", str(port), "--zeo-address", served.address],
        untokened(),
    )  # fmt: skip
    output = Lines(master)
    try:
        status = master.wait(timeout=60)
    except subprocess.TimeoutExpired:
        status = None
    finally:
        stop(master)
    text = output.text()
    ours = [ln for ln in text.splitlines() if "/vfab:" in ln]
    assert status == 2, text[-3000:]
    assert len(ours) == 1 and TOKEN_VAR in ours[0], text[-3000:]
    assert not re.search(rf"{TOKEN_VAR}=[^<\s]", text), text[-3000:]
    assert "Traceback" not in text
    assert not locust_pids(), "locust outlived its refusal"


@pytest.mark.subprocess
def test_the_web_uis_logs_hold_no_token(
    served: Served, no_leaked_servers: None
) -> None:
    """--processes 2 makes its own token (its forked workers hold it) and a
    master given one takes it: neither is in the log the web UI serves."""
    token = "t0ken-of-the-web-ui-test"
    for mode, environ in (
        (["--processes", "2"], untokened()),
        (["--master"], untokened() | {TOKEN_VAR: token}),
    ):
        web, port = free_ports(2)
        master = subprocess.Popen(
            [str(LOCUST), "-f", "locustfile.py", *mode, "--web-port", str(web),
             "--master-bind-port", str(port), "--zeo-address", served.address],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=environ, cwd=ROOT, start_new_session=True,
        )  # fmt: skip
        output = Lines(master)
        try:
            output.wait_for("Starting web interface", 60)
            logs = web_logs(web, master, 30)
        finally:
            os.killpg(master.pid, signal.SIGINT)  # Ctrl-C: the whole group
            try:
                master.wait(timeout=60)
            finally:
                if master.poll() is None:
                    os.killpg(master.pid, signal.SIGKILL)
                stop(master)
        text = output.text()
        assert token not in logs + text
        assert not re.search(rf"{TOKEN_VAR}=[^<\s]", logs + text), logs
    assert not locust_pids(), "locust outlived Ctrl-C"
