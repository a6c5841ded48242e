"""How one case of tests/support/hostile.py runs: its command under the case's
environment, resource limits, working directory and stdout, with an action
beside it (a signal, a stopped server) and a bound on its wait; then what
it left: exit status, output, changed inputs, TMPDIR, processes."""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import hashlib
import os
import re
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.hostile_proc import (
    CASE_VAR,
    GRACE,
    HELPER_START,
    STOP,
    Interrupted,
    kill_marked,
    pause,
    read,
    stop_process,
)
from tests.support.hostile_work import Work

# -- running the command ------------------------------------------------------------


@dataclasses.dataclass
class Invocation:
    """What a case's setup asks to run, and how."""

    argv: list[str]
    #: changes to the environment (None: unset)
    env: dict[str, str | None] = dataclasses.field(default_factory=dict)
    #: resource limits: RLIMIT_* -> (soft, hard)
    limits: dict[int, tuple[int, int]] = dataclasses.field(default_factory=dict)
    #: the working directory (default: work/out)
    cwd: Path | None = None
    #: the working directory is removed once the command is in it
    cwd_deleted: bool = False
    #: stdout a pipe whose reading end is closed (`| true`)
    stdout_closed: bool = False
    #: no stdout at all (`>&-`: descriptor 1 closed)
    stdout_shut: bool = False
    #: without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (root reads anything)
    no_dac: bool = False
    #: what must be byte-identical after (default: work/in)
    watched: list[Path] | None = None
    #: the TMPDIR that must be empty after (default: work/tmp)
    tmpdir: Path | None = None
    #: run beside the command (signals, a stopped server); returns when done
    during: Callable[[Running], None] | None = None
    #: further expectations: a failed one returns its reason
    checks: list[Callable[[Outcome], str | None]] = dataclasses.field(
        default_factory=list
    )


@dataclasses.dataclass
class Running:
    """The command while it runs, for an Invocation's `during`."""

    proc: subprocess.Popen[bytes]
    work: Work
    stdout: Path
    stderr: Path
    tmpdir: Path
    done: threading.Event
    #: what the action meant to do and could not (its trigger never came)
    missed: list[str] = dataclasses.field(default_factory=list)

    def err(self) -> str:
        return read(self.stderr)

    def out(self) -> str:
        return read(self.stdout)


@dataclasses.dataclass
class Outcome:
    status: int | None  # None: it did not end within the bound
    out: bytes
    err: bytes
    elapsed: float
    changed: list[str]
    tmp_left: list[str]
    left_running: list[str]
    work: Work
    invocation: Invocation
    #: what the `during` action could not do (Running.missed)
    during_missed: list[str] = dataclasses.field(default_factory=list)

    @property
    def err_text(self) -> str:
        return self.err.decode(errors="replace")

    @property
    def out_text(self) -> str:
        return self.out.decode(errors="replace")


def snapshot(paths: list[Path]) -> dict[str, str]:
    """Every entry below each path: a symlink as its target, a directory as
    'dir', a file as the digest of its bytes."""
    out: dict[str, str] = {}
    for top in paths:
        if not top.exists():
            continue
        entries = [top] if top.is_file() else []
        for dirpath, dirnames, filenames in os.walk(top):
            entries += [Path(dirpath) / n for n in dirnames + filenames]
        for path in entries:
            key = str(path.relative_to(top.parent))
            if path.is_symlink():
                out[key] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[key] = "dir"
            else:
                try:
                    out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError as e:
                    out[key] = f"unreadable: {e.strerror}"
    return out


_libc = ctypes.CDLL(None, use_errno=True)
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _preexec(inv: Invocation, cwd: Path) -> Callable[[], None]:
    limits = list(inv.limits.items())

    def child() -> None:
        for which, pair in limits:
            resource.setrlimit(which, pair)
        if inv.stdout_shut:
            os.close(1)
        if inv.cwd_deleted:
            os.chdir(cwd)
            os.rmdir(cwd)
        if inv.no_dac:  # root's execve then grants neither capability
            for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
                _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)

    return child


def execute(inv: Invocation, work: Work, bound: float) -> Outcome:
    """Run the invocation with a bound on its wait; say what it left."""
    tmpdir = inv.tmpdir or work.tmp
    env = work.checkout.env(CASE_VAR, work.mark, tmpdir)
    for key, value in inv.env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    watched = [work.inputs] if inv.watched is None else inv.watched
    before = snapshot(watched)
    cwd = inv.cwd or work.out
    stdout_path, stderr_path = work.root / "stdout", work.root / "stderr"
    with open(stdout_path, "wb") as out_file, open(stderr_path, "wb") as err_file:
        stdout: int = out_file.fileno()
        if inv.stdout_closed:
            read_end, stdout = os.pipe()
            os.close(read_end)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                inv.argv,
                cwd=cwd if not inv.cwd_deleted else work.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=err_file,
                start_new_session=True,
                preexec_fn=_preexec(inv, cwd),
            )
        finally:
            if inv.stdout_closed:
                os.close(stdout)
    done = threading.Event()
    running = Running(proc, work, stdout_path, stderr_path, tmpdir, done)
    helper = None
    if inv.during is not None:
        helper = threading.Thread(target=_during, args=(inv.during, running))
        helper.start()
    status: int | None = None
    try:
        while True:
            code = proc.poll()
            if code is not None:
                status = code
                break
            if time.monotonic() - started > bound:
                break
            if STOP.wait(0.1):
                raise Interrupted
    finally:
        elapsed = time.monotonic() - started
        done.set()
        if proc.poll() is None:
            # past its bound: stopped as a supervisor would, SIGTERM first,
            # so that what it then leaves is its own
            if not STOP.is_set():
                stop_process(proc, GRACE)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if helper is not None:
            helper.join(HELPER_START)
        left = kill_marked(CASE_VAR, work.mark, 0 if STOP.is_set() else GRACE)
    after = snapshot(watched)
    changed = sorted(
        {k for k in before if before[k] != after.get(k)}
        | {f"+{k}" for k in after if k not in before}
    )
    err = stderr_path.read_bytes()
    tmp_left = _left_in(tmpdir, err)
    return Outcome(
        status,
        stdout_path.read_bytes(),
        err,
        elapsed,
        changed,
        tmp_left,
        left,
        work,
        inv,
        running.missed,
    )


def _during(action: Callable[[Running], None], running: Running) -> None:
    with contextlib.suppress(Interrupted, ProcessLookupError):
        action(running)


def _left_in(tmpdir: Path, err: bytes) -> list[str]:
    """What the command left in its TMPDIR, but for a file its stderr says
    it saved there (a result kept when its output could not be written)."""
    try:
        names = sorted(os.listdir(tmpdir))
    except OSError:
        return []
    kept = re.findall(rb"(?:saved|kept) (?:in|at|as) (\S+)", err)
    return [n for n in names if not any(os.fsencode(n) in k for k in kept)]


# -- actions while the command runs ---------------------------------------------------


def wait_for(running: Running, ready: Callable[[Running], bool], bound: float) -> bool:
    """Poll *ready* until it holds (True), the command ends or *bound*
    passes (False)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline and not running.done.is_set():
        if running.proc.poll() is not None:
            return False
        if ready(running):
            return True
        pause(0.1)
    return False


def tmp_in_use(running: Running) -> bool:
    """The command has made something in its TMPDIR (it is at work)."""
    try:
        return bool(os.listdir(running.tmpdir))
    except OSError:
        return False


def err_has(text: str) -> Callable[[Running], bool]:
    return lambda running: text in running.err()


def out_has(text: str) -> Callable[[Running], bool]:
    return lambda running: text in running.out()


def signal_when(
    signum: int,
    ready: Callable[[Running], bool] = tmp_in_use,
    delay: float = 2.0,
) -> Callable[[Running], None]:
    """Send *signum* to the command *delay* seconds after *ready* holds,
    waiting for it as long as the command runs (the case's bound bounds
    both): a loaded machine reaches a release's later parts minutes late.
    A signal never sent is a miss of the case, said as such."""

    def action(running: Running) -> None:
        if wait_for(running, ready, float("inf")):
            pause(delay)
            if running.proc.poll() is None:
                running.proc.send_signal(signum)
                return
        name = signal.Signals(signum).name
        running.missed.append(f"{name} never sent: the command ended first")

    return action
