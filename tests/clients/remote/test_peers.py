"""The locustfile's --master hears only workers holding the run's token
(issue 35): real `locust --master` and `--worker` processes on 127.0.0.1,
a peer of tests/support/hostile_peers.py beside them, a served small data set.

The master makes its token and logs it; the test starts its worker with
that token in the environment, as docs/locust.md tells a user to.  A peer
sending forged history unsealed changes nothing; the same history sealed
with the token (the control) makes the check fail, so the forgery would
count if it were heard.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
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
    [("records", False, 0), ("junk", False, 0), ("sealed-records", True, 1)],
    ids=["forged-history", "junk-frames", "control-sealed-forgery"],
)
def test_only_the_runs_workers_are_heard(
    served: Served, peer: str, sealed: bool, status: int, no_leaked_servers: None
) -> None:
    port = free_port()
    workers = "2" if sealed else "1"  # the control's forger joins
    master = start(
        [str(LOCUST), "-f", "locustfile.py", "--master", "--headless",
         "--expect-workers", workers, "--expect-workers-max-wait", "40",
         "-u", "2", "-r", "2", "-t", "3s", "--master-bind-port", str(port),
         "--zeo-address", served.address],
        untokened(),
    )  # fmt: skip
    output = Lines(master)
    others: list[subprocess.Popen[str]] = []
    try:
        token = output.wait_for(rf"{TOKEN_VAR}=(\S+) locust -f", 60).group(1)
        peer_argv = [sys.executable, str(PEERS), peer, str(port)]
        others.append(start(peer_argv + ([token] if sealed else []), untokened()))
        worker = start(
            [str(LOCUST), "-f", "locustfile.py", "--worker",
             "--master-port", str(port)],
            untokened() | {TOKEN_VAR: token},
        )  # fmt: skip
        others.append(worker)
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
    if status == 0:
        assert "consistency: 0 violations" in check[0]
        ignored = [ln for ln in lines if "ignoring" in ln]
        if peer == "records":  # junk's TCP bytes may never make a frame
            assert len(ignored) == 1, lines
        assert worker_status == 0
    else:
        # heard: the forged sequence, created twice and never stored
        assert "sequence 987654" in text, text[-3000:]
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
