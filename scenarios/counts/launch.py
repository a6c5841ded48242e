"""`vfab-bench run --counts`: each storage re-executed three times (natively,
under callgrind, under strace -f; scenarios.counts.child) in the fixed
environment of scenarios.counts.fixed, the children stopped whatever
happens, and what they left read into a CountRun (docs/internals.md).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scenarios.bench.config import RunConfig
from scenarios.counts import build, callgrind, fixed, syscalls
from scenarios.counts.meters import SKIP
from scenarios.counts.model import CountResult, CountRun, CountSample
from scenarios.errors import ConfigError, RunFailure
from scenarios.results.metadata import collect as collect_metadata
from scenarios.results.model import TrialSummary

#: Seconds a child has to clean up after SIGTERM before SIGKILL.
STOP_GRACE_S = 20.0
#: Seconds what a child left running has after SIGTERM before SIGKILL.
REAP_GRACE_S = 10.0

#: Programs valgrind must not follow into (its own helpers, database
#: servers that are not Python).
SKIP_CHILDREN = (
    "*/vgdb",
    "*callgrind_control*",
    "*postgres*",
    "*initdb*",
    "*pg_ctl*",
    "*mariadb*",
    "*mysql*",
)

TOOLS = {
    "valgrind": "valgrind (Debian and Ubuntu: apt-get install valgrind; "
    "or ./bootstrap as root)",
    "vgdb": "valgrind's vgdb (Debian and Ubuntu: apt-get install valgrind)",
    "strace": "strace (Debian and Ubuntu: apt-get install strace; or "
    "./bootstrap as root)",
}


def check_tools() -> None:
    """ConfigError in one line when valgrind, vgdb or strace is missing or
    the client-request extension cannot be built."""
    for tool, how in TOOLS.items():
        if shutil.which(tool) is None:
            raise ConfigError(f"--counts needs {tool}, not found: install {how}")
    try:
        build.build()
    except build.BuildError as e:
        raise ConfigError(f"--counts: {e}") from None


def callgrind_command(private: Path, out_dir: Path) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--trace-children=yes",
        f"--trace-children-skip={','.join(SKIP_CHILDREN)}",
        f"--callgrind-out-file={out_dir}/callgrind.out.%p",
        f"--log-file={private}/valgrind.%p.log",
    ]


def strace_command(log: Path) -> list[str]:
    return [
        "strace",
        "-f",
        "-qq",
        "-e",
        f"trace={','.join(syscalls.TRACED)}",
        "-o",
        str(log),
    ]


def write_job(config: RunConfig, path: Path) -> None:
    """*config* for the children (scenarios.counts.child.read_job), pickled:
    they run this code, from a directory only this user can read."""
    path.write_bytes(pickle.dumps(config))


def child_command(job: Path, storage: str, mode: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-P",
        "-m",
        "scenarios.counts.child",
        str(job),
        storage,
        mode,
        str(out),
    ]


def run_child(
    command: list[str], env: dict[str, str], what: str, private: Path
) -> None:
    """Run one child to its end; stop it (its session, and whatever it
    started that names *private*: a runzeo in a session of its own) however
    this ends.  RunFailure when it fails (its own line is on stderr)."""
    process = subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        code = process.wait()
    finally:
        try:
            stop(process)
        finally:
            reap(private)
    if code != 0:
        raise RunFailure(f"counting {what} failed (exit status {code})")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child, wait STOP_GRACE_S, then SIGKILL its session."""
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt:  # a second Ctrl-C: do not wait
            pass
    # Whatever the child left in its session (a runzeo it could not stop).
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if process.poll() is None:
        process.wait()


def naming(text: str) -> list[int]:
    """Pids of this user's processes whose command line holds *text*."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid == os.getuid() and text.encode() in (
                (entry / "cmdline").read_bytes()
            ):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def reap(private: Path, grace: float = REAP_GRACE_S) -> None:
    """Stop what a child left running: every process naming the private
    directory (valgrind's arguments name it, and a runzeo's config lives in
    it); SIGTERM, then SIGKILL after *grace* seconds."""
    text = f"{private}/"
    pids = naming(text)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = [p for p in pids if p in naming(text)]
        if not pids:
            return


def count_storage(
    storage: str,
    job: Path,
    private: Path,
    say: Callable[[str], None],
) -> tuple[list[CountResult], list[TrialSummary]]:
    """One storage: natively, under callgrind, under strace."""
    env = fixed.child_environment(private)
    tmp = private / "tmp"
    cg_dir = private / "callgrind"
    for path in (cg_dir, private / "pycache"):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()

    def child(tool: list[str], mode: str, env: dict[str, str], done: str) -> Path:
        """Run the child in *mode* (under *tool*) on a fresh TMPDIR; its
        output file."""
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        out = private / f"{mode}.json"
        started = time.monotonic()
        what = {"native": "natively", "callgrind": "under valgrind"}.get(mode)
        command = tool + child_command(job, storage, mode, out)
        run_child(command, env, f"{storage} {what or 'under ' + mode}", private)
        say(f"{storage}: {done} ({time.monotonic() - started:.0f} s)")
        return out

    # Natively first: it fills the bytecode cache the others read.
    native_env = fixed.child_environment(private, write_bytecode=True)
    child([], "native", native_env, "ran natively")
    cg_out = child(callgrind_command(private, cg_dir), "callgrind", env,
                   "instructions counted")  # fmt: skip
    st_log = private / "strace.log"
    st_out = child(strace_command(st_log), "strace", env, "system calls counted")
    cg_plan = json.loads(cg_out.read_text())
    st_plan = json.loads(st_out.read_text())
    dumps = callgrind.read_dumps(cg_dir, SKIP)
    servers_st = st_plan["server_pids"]
    calls = syscalls.read_log(st_log, st_plan["client_tids"] if servers_st else None)
    results = assemble(storage, cg_plan, dumps, calls)
    summaries = [TrialSummary(**t) for t in cg_plan["trials"]]
    for path in cg_dir.iterdir():
        path.unlink()
    return results, summaries


def assemble(
    storage: str,
    plan: dict[str, Any],
    dumps: callgrind.Dumps,
    calls: syscalls.PhaseCalls,
) -> list[CountResult]:
    """Per phase, one CountSample per counted trial: the client's dump (the
    counted child's own pid, which the plan records: a runzeo dumps every
    label too, and pids wrap, so the lower pid may be the server's), the
    servers' (every other process that dumped), and the system calls
    between the phase's marks."""
    labels = [p["label"] for p in plan["phases"]]
    client_pid = plan.get("pid")
    if client_pid not in dumps or not all(lb in dumps[client_pid] for lb in labels):
        client_pid = None
    if client_pid is None:
        raise RunFailure(f"{storage}: callgrind wrote no dump for some phases")
    server_pids = [pid for pid in dumps if pid != client_pid]
    by_phase: dict[str, list[CountSample]] = {}
    size = plan.get("size", "")
    for p in plan["phases"]:
        label = p["label"]
        server = None
        if server_pids:
            server = sum(dumps[pid].get(label, 0) for pid in server_pids)
        st = calls.get(label)
        sample = CountSample(
            instructions=dumps[client_pid][label],
            server_instructions=server,
            syscalls=st["client"] if st else None,
            server_syscalls=st["server"] if st and plan_has_server(plan) else None,
        )
        by_phase.setdefault(p["phase"], []).append(sample)
    return [
        CountResult(storage, size, phase, tuple(samples))
        for phase, samples in by_phase.items()
    ]


def plan_has_server(plan: dict[str, Any]) -> bool:
    return bool(plan.get("server_pids"))


def count(config: RunConfig, say: Callable[[str], None]) -> CountRun:
    """Count every storage of *config* that can run here (check_tools()
    first); each child reads *config* from the job file."""
    from scenarios.bench.runner import available
    from scenarios.results import environment

    results: list[CountResult] = []
    summaries: list[TrialSummary] = []
    started = time.monotonic()
    start, probes = environment.snapshot(), environment.probes()
    factories = list(available(config.storages, config.storage_options, say))
    names = [n for n, _ in factories]
    with fixed.private_directory() as private:
        job = private / "job.pickle"
        write_job(config, job)
        for name in names:
            r, s = count_storage(name, job, private, say)
            results += [
                CountResult(x.storage, config.size, x.phase, x.samples) for x in r
            ]
            summaries += s
    metadata = collect_metadata(config)
    # The machine does not change a count; kept as every result keeps it.
    metadata["environment"] = environment.record(start, probes + environment.probes())
    metadata["counts"] = {
        "valgrind": tool_version("valgrind"),
        "strace": tool_version("strace"),
        "hash_seed": fixed.HASH_SEED,
        # Storages that talk to a server (whether or not the run started
        # it): their instructions are not exact (model.CountRun.has_server).
        "served": [n for n, f in factories if f.starts_server],
        "wall_s": round(time.monotonic() - started, 1),
    }
    return CountRun(metadata=metadata, results=tuple(results), trials=tuple(summaries))


def tool_version(tool: str) -> str | None:
    try:
        done = subprocess.run(
            [tool, "--version"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0] if lines else None
