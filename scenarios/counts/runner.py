"""`vfab-bench run --counts`: each storage re-executed three times (natively,
under callgrind, under strace -f; scenarios.counts.child) in the fixed
environment of scenarios.counts.fixed, the children stopped whatever
happens (every process a run started carries its mark, fixed.RUN_VAR; a
parent-death signal when the launcher is killed), each counted child
bounded by what the native one took, and what they left read into a
CountRun (docs/internals.md).
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
from scenarios.results.metadata import code
from scenarios.results.metadata import collect as collect_metadata
from scenarios.results.model import TrialSummary
from storages.process import die_with_parent

#: Seconds a child has to clean up after SIGTERM before SIGKILL.
STOP_GRACE_S = 20.0
#: Seconds what a child left running has after SIGTERM before SIGKILL.
REAP_GRACE_S = 10.0
#: A counted child (under valgrind or strace) is stopped after this many
#: seconds plus COUNTED_FACTOR times the native child's: callgrind costs
#: about 20x on whole trials (docs/counts.md), its start-up a few seconds.
COUNTED_FLOOR_S = 30.0
COUNTED_FACTOR = 40.0

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

#: How this version counts, recorded in every count file: every counted
#: phase starts from the same type attribute cache (scenarios.counts.
#: typecache: "settled") and runs with the cyclic collector off, its
#: garbage collected once at its end ("collected at the end"); files
#: without a method were counted from whatever state the process was in
#: ("unsettled").  A storage with a server ends each phase once the
#: server has answered everything the phase sent ("server answered": a
#: round trip, storages.base.Store.server_round_trip).  Counts of two
#: methods are not compared (scenarios.counts.compare).
METHOD = "settled, collected at the end, server answered"
UNSETTLED = "unsettled"

TOOLS = {
    "valgrind": "valgrind (Debian and Ubuntu: apt-get install valgrind; "
    "or ./bootstrap as root)",
    "vgdb": "valgrind's vgdb (Debian and Ubuntu: apt-get install valgrind)",
    "strace": "strace (Debian and Ubuntu: apt-get install strace; or "
    "./bootstrap as root)",
}


#: Seconds `TOOL --version` has to answer.
VERSION_TIMEOUT_S = 10.0

#: What each tool's --version starts with.
VERSION_PREFIXES = {"valgrind": "valgrind-", "strace": "strace"}


def check_tools() -> None:
    """ConfigError in one line when a variable of fixed.REFUSED_VARIABLES
    is set, when valgrind, vgdb or strace is missing,
    does not answer --version in time or is not what it is named, or the
    client-request extension cannot be built."""
    refused = fixed.refused_variable()
    if refused is not None:
        raise ConfigError(f"--counts: {refused}")
    for tool, how in TOOLS.items():
        if shutil.which(tool) is None:
            raise ConfigError(f"--counts needs {tool}, not found: install {how}")
    for tool, prefix in VERSION_PREFIXES.items():
        path = shutil.which(tool)
        try:
            done = subprocess.run(
                [tool, "--version"],
                capture_output=True,
                text=True,
                timeout=VERSION_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                # Killed with us: a tool that never answers is not left
                # behind by a SIGKILL.
                preexec_fn=die_with_parent(signal.SIGKILL),
            )
        except subprocess.TimeoutExpired:
            raise ConfigError(
                f"--counts: {tool} did not answer --version within "
                f"{VERSION_TIMEOUT_S:g} s: is {path} {tool}?"
            ) from None
        except OSError as e:
            raise ConfigError(f"--counts: {path} cannot run: {e}") from None
        said = (done.stdout or done.stderr).strip().splitlines()
        if done.returncode != 0 or not said or not said[0].startswith(prefix):
            shown = said[0][:60] if said else f"nothing, exit status {done.returncode}"
            raise ConfigError(
                f"--counts: {tool} is not {tool}: {path} --version said {shown!r}"
            )
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


def write_job(config: RunConfig, path: Path, progress: bool = True) -> None:
    """*config* for the children (scenarios.counts.child.read_job), pickled:
    they run this code, from a directory only this user can read; with
    *progress*, whether they tell which trial they count (not under -q)."""
    path.write_bytes(pickle.dumps({"config": config, "progress": progress}))


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
    command: list[str],
    env: dict[str, str],
    what: str,
    bound: float | None = None,
) -> float:
    """Run one child to its end, at most *bound* seconds; its seconds.  Stop
    it (its session, and every process carrying the run's mark: a runzeo in
    a session of its own) however this ends.  RunFailure when it fails (its
    own line is on stderr); ConfigError when it does not end in time."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        # SIGKILL: strace blocks the others while it runs a command.
        preexec_fn=die_with_parent(signal.SIGKILL),
    )
    code: int | None = None
    try:
        code = process.wait(bound)
    except subprocess.TimeoutExpired:
        pass
    finally:
        try:
            stop(process)
        finally:
            reap(env[fixed.RUN_VAR])
    if code is None:
        tool = command[0]
        raise ConfigError(
            f"counting {what}: {tool} ({shutil.which(tool) or 'not found'}) did "
            f"not end within {bound:.0f} s ({COUNTED_FACTOR:g}x the native run, "
            f"plus {COUNTED_FLOOR_S:g} s); it was stopped"
        )
    if code != 0:
        raise RunFailure(f"counting {what} failed (exit status {code})")
    return time.monotonic() - started


def counted_bound(native_s: float) -> float:
    """Seconds a counted child may take, the native one having taken
    *native_s*."""
    return COUNTED_FLOOR_S + COUNTED_FACTOR * native_s


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


def marked(run: str) -> list[int]:
    """Pids of this user's live processes carrying fixed.RUN_VAR=*run* in
    their environment: what this count run started, and nothing else."""
    mark = f"{fixed.RUN_VAR}={run}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_bytes().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            pids.append(int(entry.name))
    return pids


def reap(run: str, grace: float = REAP_GRACE_S) -> None:
    """Stop what a child left running: every process carrying the run's
    mark (valgrind's, strace's and the child's children; a runzeo in a
    session of its own); SIGTERM, then SIGKILL after *grace* seconds."""
    pids = marked(run)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = [p for p in pids if p in marked(run)]
        if not pids:
            return


def count_storage(
    storage: str,
    job: Path,
    private: Path,
    say: Callable[[str], None],
    run: str,
    layouts: int = 1,
) -> tuple[list[CountResult], list[TrialSummary], bool, dict[str, Any] | None]:
    """One storage: natively, under callgrind once per start-up layout
    (*layouts*: 0, the process as it starts, then seeded shifts of its
    heap and type tags, fixed.shift_layout), under strace (each counted
    child bounded by what the native one took); the results, the trials'
    summaries, whether every counted phase started from a settled type
    cache (scenarios.counts.typecache), and the implementations the counted
    child loaded (scenarios.results.metadata.implementations)."""
    env = fixed.child_environment(private, run=run)
    tmp = private / "tmp"
    cg_dir = private / "callgrind"
    for path in (cg_dir, private / "pycache"):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()

    bound: float | None = None  # the native child's sets the others'

    def child(tool: list[str], mode: str, env: dict[str, str], done: str) -> Path:
        """Run the child in *mode* (under *tool*) on a fresh TMPDIR; its
        output file."""
        nonlocal bound
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        out = private / f"{mode}.json"
        what = {"native": "natively", "callgrind": "under valgrind"}.get(mode)
        command = tool + child_command(job, storage, mode, out)
        took = run_child(command, env, f"{storage} {what or 'under ' + mode}", bound)
        if not out.is_file():
            program = shutil.which(command[0]) or command[0]
            raise ConfigError(
                f"counting {storage}: {command[0]} exited 0 and the counted "
                f"process wrote nothing: is {program} the real {command[0]}?"
            )
        say(f"{storage}: {done} ({took:.0f} s)")
        if bound is None:
            bound = counted_bound(took)
        return out

    # Natively first: it fills the bytecode cache the others read.
    native_env = fixed.child_environment(private, write_bytecode=True, run=run)
    child([], "native", native_env, "ran natively")
    counted: list[tuple[int, dict[str, Any], callgrind.Dumps]] = []
    for layout in range(layouts):
        done = "instructions counted"
        if layouts > 1:
            done += f" (layout {layout + 1} of {layouts})"
        layout_env = dict(env, **{fixed.LAYOUT_VAR: str(layout)}) if layout else env
        cg_out = child(callgrind_command(private, cg_dir), "callgrind", layout_env,
                       done)  # fmt: skip
        counted.append((layout, json.loads(cg_out.read_text()),
                        callgrind.read_dumps(cg_dir, SKIP)))  # fmt: skip
        for path in cg_dir.iterdir():
            path.unlink()
    st_log = private / "strace.log"
    st_out = child(strace_command(st_log), "strace", env, "system calls counted")
    st_plan = json.loads(st_out.read_text())
    servers_st = st_plan["server_pids"]
    calls = syscalls.read_log(st_log, st_plan["client_tids"] if servers_st else None)
    by_phase: dict[str, list[CountSample]] = {}
    for layout, cg_plan, dumps in counted:
        for r in assemble(storage, cg_plan, dumps, calls, layout):
            by_phase.setdefault(r.phase, []).extend(r.samples)
    size = counted[0][1].get("size", "")
    results = [CountResult(storage, size, p, tuple(s)) for p, s in by_phase.items()]
    summaries = [TrialSummary(**t) for t in counted[0][1]["trials"]]
    settled = all(plan.get("settled") for _, plan, _ in counted)
    loaded = counted[0][1].get("implementations")
    return results, summaries, settled, loaded


def assemble(
    storage: str,
    plan: dict[str, Any],
    dumps: callgrind.Dumps,
    calls: syscalls.PhaseCalls,
    layout: int = 0,
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
            layout=layout,
        )
        by_phase.setdefault(p["phase"], []).append(sample)
    return [
        CountResult(storage, size, phase, tuple(samples))
        for phase, samples in by_phase.items()
    ]


def plan_has_server(plan: dict[str, Any]) -> bool:
    return bool(plan.get("server_pids"))


def count(
    config: RunConfig,
    say: Callable[[str], None],
    child_progress: bool = True,
    layouts: int = 1,
) -> CountRun:
    """Count every storage of *config* that can run here (check_tools()
    first), under *layouts* start-up layouts (count_storage); each child
    reads *config* from the job file and, with *child_progress*, says on
    stderr which trial it counts."""
    from scenarios.bench.runner import available
    from scenarios.results import environment

    results: list[CountResult] = []
    summaries: list[TrialSummary] = []
    started = time.monotonic()
    start, probes = environment.snapshot(), environment.probes()
    factories = list(available(config.storages, config.storage_options, say))
    names = [n for n, _ in factories]
    settled = True
    loaded: dict[str, Any] | None = None
    with fixed.private_directory() as private:
        job = private / "job.pickle"
        write_job(config, job, child_progress)
        run = fixed.new_run_mark()
        for name in names:
            r, s, ok, used = count_storage(name, job, private, say, run, layouts)
            settled = settled and ok
            loaded = loaded or used
            results += [
                CountResult(x.storage, config.size, x.phase, x.samples) for x in r
            ]
            summaries += s
    metadata = collect_metadata(config)
    # The project's commit and patched tree: what compare names first when
    # two count files differ in it (results.metadata.differences).
    metadata["code"] = code()
    # What the counted children loaded, not this process (the same
    # variables reach them: fixed.CARRIED_VARIABLES).
    if loaded is not None:
        metadata["implementations"] = loaded
    # The machine does not change a count; kept as every result keeps it.
    metadata["environment"] = environment.record(start, probes + environment.probes())
    metadata["counts"] = {
        "valgrind": tool_version("valgrind"),
        "strace": tool_version("strace"),
        "hash_seed": fixed.HASH_SEED,
        # What a count means (docs/counts.md): counts of another method
        # are not compared.
        "method": METHOD if settled else UNSETTLED,
        "layouts": layouts,
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
