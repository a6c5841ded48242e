"""A ZEO server's counts are a property of the code: each phase's window
ends once the server has answered everything the phase sent, so that runs
of identical code count the same calls per phase, the server's and the
client's (system calls, counted under strace: what the gate judges
exactly).
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from scenarios.bench.config import RunConfig
from scenarios.counts import fixed, runner, syscalls
from scenarios.counts.compare import compare_counts
from scenarios.counts.model import CountResult, CountRun, CountSample

#: Count runs of one storage with identical code: the issue saw 2 in 9
#: move a server's lseek into the next phase's window.
RUNS = 20

#: {phase: {"client" or "server": {group: calls}}}
Calls = dict[str, dict[str, dict[str, int]]]


def counted_calls(private: Path, job: Path, mark: str) -> Calls:
    """One counted child of zeo under strace: each side's calls per phase."""
    tmp = private / "tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    log, out = private / "strace.log", private / "strace.json"
    command = runner.strace_command(log) + runner.child_command(
        job, "zeo", "strace", out
    )
    runner.run_child(command, fixed.child_environment(private, run=mark), "zeo", 300)
    plan = json.loads(out.read_text())
    calls = syscalls.read_log(log, plan["client_tids"])
    return {p["phase"]: calls[p["label"]] for p in plan["phases"]}


def as_run(calls: Calls) -> CountRun:
    """A count file of those calls alone (the instructions fixed)."""
    results = tuple(
        CountResult(
            "zeo", "small", phase, (CountSample(1, 1, c["client"], c["server"]),)
        )
        for phase, c in calls.items()
    )
    meta = {"config": {"scale": 1, "seed": 1, "rows": "2000"}}
    return CountRun(metadata=meta, results=results)


@pytest.mark.server
@pytest.mark.subprocess
@pytest.mark.valgrind
def test_identical_code_counts_identical_server_calls_per_phase() -> None:
    if shutil.which("strace") is None:
        pytest.skip("strace not installed (apt-get install strace)")
    config = RunConfig(storages=("zeo",), rows="2000", repeat=1, warmups=1, budget_s=0)
    runs = []
    with fixed.private_directory() as private:
        for name in ("pycache", "tmp"):
            (private / name).mkdir(exist_ok=True)
        job = private / "job.pickle"
        runner.write_job(config, job, False)
        mark = fixed.new_run_mark()
        native = runner.child_command(job, "zeo", "native", private / "native.json")
        env = fixed.child_environment(private, write_bytecode=True, run=mark)
        runner.run_child(native, env, "zeo natively", 300)
        for _ in range(RUNS):
            runs.append(counted_calls(private, job, mark))
    gated = [
        {
            (phase, side): {
                g: n for g, n in c[side].items() if g not in syscalls.TIMING_GROUPS
            }
            for phase, c in r.items()
            for side in ("client", "server")
        }
        for r in runs
    ]
    assert gated[0][("commit users/groups", "server")]["seek"] > 0
    moved = [
        (i, key, gated[0][key], r[key])
        for i, r in enumerate(gated)
        for key in r
        if r[key] != gated[0][key]
    ]
    assert not moved, moved
    for a, b in itertools.permutations(range(RUNS), 2):
        assert not compare_counts(as_run(runs[a]), as_run(runs[b])).above(0.02)
