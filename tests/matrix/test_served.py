"""vfab-bench matrix on the storages other processes open: each kind a
storage's driver allows, tiny settings (a few seconds each), every group
checked, nothing left running, Ctrl-C included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import storages
from scenarios.matrix.model import MatrixRun
from tests.conftest import runzeo_pids, storage_params
from tests.support.cli_helpers import run_cli
from tests.support.served import ROOT, env

TINY = [
    "--concurrency", "2", "--objects", "2", "--rounds", "1", "--transactions", "1",
    "--benchmark", "add,write-read,cold,conflicts", "-q",
]  # fmt: skip


def _skip_unavailable(name: str) -> None:
    factory = storages.REGISTRY.get(name)
    reason = "not in the registry" if factory is None else factory().unavailable()
    if reason:
        pytest.skip(f"{name}: {reason}")


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "name, kind",
    [
        pytest.param(*p.values, marks=p.marks, id="-".join(p.values))
        for p in storage_params(
            [
                pytest.param("zeo", "processes"),
                pytest.param("zeo", "greenlets"),
                pytest.param("zeo+bdb", "threads"),
                pytest.param("relstorage-sqlite", "processes"),
                pytest.param("relstorage-pg", "threads"),
                pytest.param("relstorage-mysql", "threads"),
            ]
        )
    ],
)
def test_a_served_storage_runs_checked(
    name: str,
    kind: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_leaked_servers: None,
) -> None:
    _skip_unavailable(name)
    out = tmp_path / "m.json"
    r = run_cli(
        capsys, "matrix", "--storage", name, "--kind", kind, *TINY, "--json", str(out)
    )
    assert r.status == 0, r.err
    run = MatrixRun.from_json(json.loads(out.read_text()))
    assert [(g.storage, g.kind, g.ok) for g in run.groups] == [(name, kind, True)]
    assert len(run.results) == 4
    cold = run.get(name, "cold", kind, 2, 2)
    assert cold is not None and len(cold.rounds[0].clients_s) == 2
    assert "the OS page cache" in run.groups[0].kept


@pytest.mark.server
@pytest.mark.subprocess
@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_leaves_nothing_running(presses: int, no_leaked_servers: None) -> None:
    # Twice 0.3 s apart (issue 46: a second press while clients start once
    # gave 17-25 lines of tracebacks from multiprocessing's semaphores).
    before = runzeo_pids()
    process = subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", "matrix", "--storage", "zeo",
         "--kind", "processes", "--concurrency", "3", "--rounds", "50"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env(), cwd=ROOT, start_new_session=True,
    )  # fmt: skip
    time.sleep(4)
    for press in range(presses):
        if press:
            time.sleep(0.3)
        os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    # A second press that lands once the command has cleaned up and said
    # so ends the process by the signal itself: a shell says 130 for both.
    assert process.returncode in (130, -signal.SIGINT), err
    assert "Traceback" not in out + err
    assert "vfab-bench: interrupted" in err
    deadline = time.monotonic() + 5
    while _alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(process.pid), "a client process outlived the run"
    assert not runzeo_pids() - before


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
