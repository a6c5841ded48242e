"""The processes of tools/probe_failures.py's cases: the checkout under
test, the marks every process started carries, and stopping them.

Every process the probe starts carries VFAB_PROBE_RUN (the probe) and
either VFAB_PROBE_CASE (the command under test and its children) or
VFAB_PROBE_HELPER (what a case's setup started) in its environment, as
tests/conftest.py marks a test session's: what still runs after a case is
found by that mark, reported when it is the command's, and killed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

RUN_VAR, CASE_VAR, HELPER_VAR = "VFAB_PROBE_RUN", "VFAB_PROBE_CASE", "VFAB_PROBE_HELPER"
RUN_ID = os.environ.get(RUN_VAR) or uuid.uuid4().hex
#: Set by the probe on Ctrl-C, SIGTERM or SIGHUP: every wait below gives up,
#: kills what it started and cleans up.
STOP = threading.Event()
#: How long a process of a finished command may take to go away.
GRACE = 10.0
#: What a helper's start may take (a served data set, a runzeo).
HELPER_START = 90.0


class Interrupted(Exception):
    """The probe was asked to stop."""


class Skip(Exception):
    """The case cannot run on this machine (the reason is the message)."""


def pause(seconds: float) -> None:
    """Sleep, unless the probe is stopping."""
    if STOP.wait(seconds):
        raise Interrupted


# -- processes by their mark ------------------------------------------------------


def marked(var: str, value: str) -> dict[int, str]:
    """Live processes (not zombies) whose environment has VAR=VALUE: pid ->
    a short name (its command line's first two words)."""
    mark = f"{var}={value}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if mark not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as f:
                if f.read().rpartition(b")")[2].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0")]
        except OSError:
            continue
        words = [Path(argv[0]).name, *argv[1:3]]
        found[int(entry)] = " ".join(w[:40] for w in words if w)
    return found


def kill_marked(var: str, value: str, grace: float = GRACE) -> list[str]:
    """Wait up to *grace* seconds for the processes marked VAR=VALUE to end,
    then SIGKILL those left; return their names (empty: none was left)."""
    deadline = time.monotonic() + grace
    left = marked(var, value)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = marked(var, value)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)  # a stopped process dies only once woken
            os.kill(pid, signal.SIGKILL)
    return sorted(set(left.values()))


def stop_process(proc: subprocess.Popen[bytes], bound: float = 30.0) -> None:
    """SIGTERM, then SIGKILL to its session after *bound* seconds."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(bound)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# -- the checkout under test ------------------------------------------------------


#: What the caller's environment must not give a command.
DROPPED = ("VFAB_DEBUG", "VFAB_CHECKED_TARGETS", "VFAB_WORKER_TOKEN", "PYTHONPATH")


@dataclasses.dataclass(frozen=True)
class Checkout:
    """A source tree with its own .venv (made by its ./bootstrap)."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / ".venv" / "bin"

    @property
    def python(self) -> str:
        return str(self.bin / "python")

    def cli(self, *args: str) -> list[str]:
        return [str(self.bin / "vfab-bench"), *args]

    def problem(self) -> str:
        """Why this checkout cannot be probed ('' when it can)."""
        if not (self.bin / "vfab-bench").exists():
            return f"{self.root}: no .venv/bin/vfab-bench (run its ./bootstrap)"
        return ""

    def env(self, var: str, value: str, tmpdir: Path) -> dict[str, str]:
        """The environment of a command: this checkout's venv first on PATH
        and on sys.path, the probe's marks, TMPDIR."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k
            not in (
                "VFAB_DEBUG",
                "VFAB_CHECKED_TARGETS",
                "VFAB_WORKER_TOKEN",
                "PYTHONPATH",
            )
            and not k.startswith("VFAB_PROBE_")
        }
        env["PATH"] = os.pathsep.join([str(self.bin), os.environ.get("PATH", "")])
        env["PYTHONPATH"] = str(self.root)
        env.update({RUN_VAR: RUN_ID, var: value, "TMPDIR": str(tmpdir)})
        return env


def run_to_end(
    argv: list[str], env: dict[str, str], cwd: Path, bound: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """A set-up step: run *argv* to its end (bounded), failing loudly."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=bound)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"set-up step {argv[1:4]} failed: {err.strip()[-500:]}")
    return subprocess.CompletedProcess(argv, 0, out, err)


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
