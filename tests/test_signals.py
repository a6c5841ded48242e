"""SIGINT, SIGTERM and SIGHUP end every command with 130, 143 and 129 and
no traceback from any process, scale and zeoloop included, whether the
signal reaches the command alone or its whole process group (a terminal
closing, `kill -TERM -PGID`); a zeoloop client process SIGKILLed by
someone else is a lost client, as in scale, not an interrupt (issue 21,
item 5).  Real subprocesses and real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.conftest import runzeo_pids
from tests.served import ROOT, env, serve

STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
LAST_LINE = {
    signal.SIGINT: "vfab-bench: interrupted",
    signal.SIGTERM: "vfab-bench: terminated (SIGTERM)",
    signal.SIGHUP: "vfab-bench: terminated (SIGHUP)",
}


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
        start_new_session=True,  # its own process group, as in a terminal
    )


def children(pid: int) -> Iterator[int]:
    """The processes whose parent is *pid*."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            yield int(entry)


def clients_of(pid: int) -> list[int]:
    """The client processes *pid* spawned (multiprocessing's spawn_main,
    not its resource tracker)."""
    out = []
    for child in children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"spawn_main" in cmd and b"resource_tracker" not in cmd:
            out.append(child)
    return out


def wait_for(what: str, predicate: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("to_group", [False, True], ids=["process", "group"])
@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name
)
def test_scale_exits_128_plus_the_signal_without_a_traceback(
    signum: signal.Signals, to_group: bool
) -> None:
    before = runzeo_pids()
    process = start("scale", "--clients", "2", "--duration", "30", "--warmup", "0.5")
    wait_for("the clients", lambda: len(clients_of(process.pid)) == 2)
    time.sleep(1.0)
    if to_group:
        os.killpg(process.pid, signum)
    else:
        os.kill(process.pid, signum)
    out, err = process.communicate(timeout=90)
    assert "Traceback" not in out + err, err
    assert process.returncode == STATUS[signum], err
    assert err.strip().splitlines()[-1] == LAST_LINE[signum], err
    wait_for("the process group to end", lambda: group_gone(process.pid), 10)
    assert not runzeo_pids() - before


@pytest.mark.slow
@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name
)
def test_zeoloop_exits_128_plus_the_signal(signum: signal.Signals) -> None:
    with serve() as served:
        process = start(
            *("zeoloop", "--target", served.address, "--users", "2"),
            *("--processes", "2", "--duration", "30"),
        )
        wait_for("the clients", lambda: len(clients_of(process.pid)) == 2)
        time.sleep(2.0)
        os.killpg(process.pid, signum)
        out, err = process.communicate(timeout=90)
    assert "Traceback" not in out + err, err
    assert process.returncode == STATUS[signum], err
    assert err.strip().splitlines()[-1].startswith(LAST_LINE[signum]), err


@pytest.mark.slow
def test_a_zeoloop_client_killed_by_someone_else_is_a_lost_client() -> None:
    with serve() as served:
        process = start(
            *("zeoloop", "--target", served.address, "--users", "2"),
            *("--processes", "2", "--duration", "6"),
        )
        wait_for("the clients", lambda: len(clients_of(process.pid)) == 2)
        time.sleep(2.0)
        clients = clients_of(process.pid)
        os.kill(clients[0], signal.SIGKILL)
        out, err = process.communicate(timeout=120)
    assert "Traceback" not in out + err, err
    assert process.returncode == 1, (out, err)
    assert "interrupted" not in out + err
    assert "1 client process(es) sent no result (killed or stuck)" in err
    # its history (appended as it went) was checked with the others'
    assert "consistency: 0 violations" in out
