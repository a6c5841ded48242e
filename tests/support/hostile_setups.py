"""The placeholders of tests/support/hostile.py's command lines and the set-ups a
case adds: each lays out inputs or starts helpers in the case's Work and
may change its Invocation (environment, TMPDIR, an action while the
command runs)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.support.hostile_proc import pause
from tests.support.hostile_run import (
    Invocation,
    Running,
    err_has,
    out_has,
    signal_when,
    wait_for,
)
from tests.support.hostile_work import Work
from tests.support.served import committed_in

Setup = Callable[[Work, Invocation], None]


# -- placeholders ----------------------------------------------------------------------


def resolve(work: Work, word: str) -> str:
    """A word with {placeholders}, each resolved once per case:

    {in} {out}      the inputs (watched) and the working directory
    {NAME}          a copy of base NAME in in/ (hostile_files.make_bases)
    {data/NAME}     a copy of base NAME in data/ (not watched)
    {runs}          a directory of two copies of run.json in in/; of base
                    NAME: {runs=NAME}; with a copy of NAME beside: {runs+NAME}
    {served}        HOST:PORT of `serve --path` on a copy of the file data set
    {zeo6}          [::1]:PORT of a runzeo on a copy of the file data set
    {silent}        127.0.0.1:PORT of a listener that never answers
    {long-name}     a 300-character name in out/; {long-path}: 4096 characters
    """
    return re.sub(r"\{([^{}]+)\}", lambda m: _place(work, m.group(1)), word)


def _place(work: Work, key: str) -> str:
    if key in work.resolved:
        return work.resolved[key]
    if key == "in":
        value = str(work.inputs)
    elif key == "out":
        value = str(work.out)
    elif key.startswith("data/"):
        value = str(work.copy(key[5:], into=work.data))
    elif key.startswith("runs"):
        directory = work.inputs / "runs"
        directory.mkdir()
        first, *extras = key.split("+")
        run = first.partition("=")[2] or "run.json"
        work.copy(run, "a.json", into=directory)
        work.copy(run, "b.json", into=directory)
        for extra in extras:
            work.copy(extra, into=directory)
        value = str(directory)
    elif key == "served":
        data = work.copy("file", into=work.data)
        value = work.serve(data).address
    elif key == "zeo6":
        data = work.copy("file", into=work.data)
        value = f"[::1]:{work.runzeo6(data / 'Data.fs')}"
    elif key == "silent":
        value = f"127.0.0.1:{work.silent_listener()}"
    elif key == "long-name":
        value = str(work.out / ("x" * 300))
    elif key == "long-path":
        value = str(work.out / "/".join(["y" * 200] * 21))
    else:
        value = str(work.copy(key))
    work.resolved[key] = value
    return value


# -- set-ups ---------------------------------------------------------------------------


def second_writer(argv: str) -> Setup:
    """Another program writes to {served} while the case's command runs."""

    def setup(work: Work, inv: Invocation) -> None:
        work.background(work.cli(*(resolve(work, w) for w in shlex.split(argv))))
        pause(3.0)

    return setup


def stop_server(work: Work, inv: Invocation) -> None:
    """SIGSTOP the runzeo of {served} 3 s into the command."""

    def stop(running: Running) -> None:
        pause(3.0)
        os.kill(work.served[0].runzeo_pid(), signal.SIGSTOP)

    inv.during = stop


def fake_valgrind(work: Work, inv: Invocation) -> None:
    """A valgrind that never returns first on PATH."""
    inv.env["PATH"] = os.pathsep.join(
        [str(work.fake_valgrind()), str(work.checkout.bin), os.environ["PATH"]]
    )


def idle_valgrind(work: Work, inv: Invocation) -> None:
    """A valgrind that exits 0 having done nothing first on PATH."""
    inv.env["PATH"] = os.pathsep.join(
        [str(work.idle_valgrind()), str(work.checkout.bin), os.environ["PATH"]]
    )


def killed_with_fake_valgrind(work: Work, inv: Invocation) -> None:
    """vfab-bench SIGKILLed once its native pass is done and the fake
    valgrind runs (it says so by a file: under -q the command does not);
    what SIGKILL leaves in TMPDIR is not held against it."""
    fake_valgrind(work, inv)
    started = work.root / "fakebin" / "started"

    def kill(running: Running) -> None:
        if wait_for(running, lambda _: started.exists(), 60):
            pause(2.0)
            running.proc.kill()

    inv.during = kill
    inv.env["TMPDIR"] = str(work.tmp)
    inv.tmpdir = work.root / "not-checked"
    inv.tmpdir.mkdir()


def send(signum: int, after: str = "", delay: float = 3.0) -> Setup:
    """*signum* to the command *delay* seconds after it puts something in
    its TMPDIR (it is at work), or 0.5 s after its stderr says *after*."""

    def setup(work: Work, inv: Invocation) -> None:
        if after:
            inv.during = signal_when(signum, err_has(after), delay=0.5)
        else:
            inv.during = signal_when(signum, delay=delay)

    return setup


def stop_once_serving(work: Work, inv: Invocation) -> None:
    """serve until it prints 'serving ...', then SIGTERM (exit 0)."""
    inv.during = signal_when(signal.SIGTERM, out_has("serving "), delay=0.5)


def tmpdir_at(kind: str) -> Setup:
    """TMPDIR a read-only tmpfs, a path of 74 characters (or more: the
    case's own directory's), or one of about 4000."""

    def setup(work: Work, inv: Invocation) -> None:
        if kind == "read-only":
            where = work.tmpfs("ro-tmp", "size=1m,ro")
        elif kind == "74":
            # Under /tmp, not the case's directory: PostgreSQL runs as
            # postgres under root, and pytest's directories are 0700.
            top = Path(tempfile.mkdtemp(prefix="vfab-h74-", dir="/tmp"))
            work.stack.callback(shutil.rmtree, top, ignore_errors=True)
            top.chmod(0o755)
            where = top / ("t" * max(1, 73 - len(str(top))))
            where.mkdir()
            inv.cwd = where  # initdb enters it
        else:
            where = work.root / "long" / "/".join(["z" * 200] * 19)
            where.mkdir(parents=True)
        inv.env["TMPDIR"] = str(where)
        inv.tmpdir = where

    return setup


def full_fs(work: Work, inv: Invocation) -> None:
    """--out DIR on a 64 KiB tmpfs with 24 KiB free."""
    mount = work.tmpfs("full", "size=64k")
    (mount / "filler").write_bytes(b"\0" * 40 * 1024)
    inv.argv += ["--out", str(mount / "rel")]


def undecodable_name(work: Work, inv: Invocation) -> None:
    """b.json of {runs} renamed b-\\xff.json (not UTF-8)."""
    directory = os.fsencode(work.resolved["runs"])
    os.rename(directory + b"/b.json", directory + b"/b-\xff.json")


def unreadable(work: Work, inv: Invocation) -> None:
    """in/locked: a run file in a directory of mode 000."""
    locked = work.inputs / "locked"
    locked.mkdir()
    work.copy("run.json", into=locked)
    locked.chmod(0)
    inv.argv.append(str(locked))


def restart_server(work: Work, inv: Invocation) -> None:
    """{served}'s runzeo SIGKILLed once the load is under way (a client
    committed an operation: a fixed 3 s was before the clients had
    connected, 4 runs in 20 under load), then the data set served again on
    the same port (serve --recover: what a crash left)."""
    first = work.served[0]
    data = work.data / "file"

    def kill_and_restart(running: Running) -> None:
        if not wait_for(running, lambda r: committed_in(r.tmpdir), float("inf")):
            running.missed.append("runzeo never killed: no operation committed")
            return
        pause(0.5)
        os.kill(first.runzeo_pid(), signal.SIGKILL)
        first.proc.wait(30)
        work.serve(data, "--recover", port=first.port)

    inv.during = kill_and_restart


def zconfig_of(base: str) -> Setup:
    """--target a ZConfig file naming the copy of *base*'s Data.fs."""

    def setup(work: Work, inv: Invocation) -> None:
        conf = work.inputs / "db.conf"
        path = Path(_place(work, base)) / "Data.fs"
        conf.write_text(
            f"<zodb>\n<filestorage>\n  path {path}\n</filestorage>\n</zodb>\n"
        )
        inv.argv += ["--target", str(conf)]

    return setup


def not_json(work: Work, inv: Invocation) -> None:
    f = work.inputs / "notes.json"
    f.write_text("these are notes, not JSON\n")
    inv.argv.append(str(f))


# -- issue 35: the distributed scale's peers ------------------------------------------

#: The token the cluster cases give their master and its worker.
TOKEN = "hostile-cases-token-0123456789"
PEERS = Path(__file__).resolve().parent / "hostile_peers.py"


def _peer(work: Work, mode: str, port: int) -> None:
    work.background([work.checkout.python, str(PEERS), mode, str(port), TOKEN])


def cluster(peer: str = "", worker: bool = True) -> Setup:
    """The command a master of --workers 1 on a free port, with the run's
    token in its environment; a real worker given it, and a peer of
    tests/support/hostile_peers.py (*peer*), in the background."""

    def setup(work: Work, inv: Invocation) -> None:
        port = work.free_port()
        inv.argv += ["--workers", "1", "--master-port", str(port)]
        inv.env["VFAB_WORKER_TOKEN"] = TOKEN
        if worker:
            work.background(
                work.cli("worker", "-q", "--master-port", str(port), "--token", TOKEN)
            )
        if peer:
            _peer(work, peer, port)

    return setup


def fake_master(mode: str) -> Setup:
    """The command a worker of a master of tests/support/hostile_peers.py (*mode*)
    on a free port, given the token that master seals with; "" for none
    (the worker waits for a master that never comes)."""

    def setup(work: Work, inv: Invocation) -> None:
        port = work.free_port()
        inv.argv += ["--master-port", str(port), "--token", TOKEN]
        if mode:
            _peer(work, mode, port)
            pause(1.0)

    return setup


def signal_after(signum: int, text: str, then: Setup) -> Setup:
    """*then*, and *signum* to the command 0.5 s after its stderr says
    *text*."""

    def setup(work: Work, inv: Invocation) -> None:
        then(work, inv)
        inv.during = signal_when(signum, err_has(text), delay=0.5)

    return setup


def stopped_worker(work: Work, inv: Invocation) -> None:
    """cluster(), and its worker SIGSTOPped once its client has begun (its
    history file in the worker's TMPDIR has a line): the window (1 s) ends
    before locust finds the worker missing (3 heartbeats)."""
    port = work.free_port()
    inv.argv += ["--workers", "1", "--master-port", str(port)]
    inv.env["VFAB_WORKER_TOKEN"] = TOKEN
    worker = work.background(
        work.cli("worker", "-q", "--master-port", str(port), "--token", TOKEN)
    )

    def begun(_: Running) -> bool:
        files = work.helper_tmp.glob("vfab-worker-*/process-*.jsonl")
        return any(f.stat().st_size for f in files if f.exists())

    def stop(running: Running) -> None:
        if wait_for(running, begun, 120):
            os.kill(worker.pid, signal.SIGSTOP)

    inv.during = stop
