"""What marks a phase's start and end inside the counted process: client
requests and vgdb under callgrind (CallgrindMeter), a marker system call
under strace (StraceMeter); the measured rules they follow:
docs/internals.md.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from types import ModuleType

#: The marker paths StraceMeter touches: MARK/begin/LABEL, MARK/end/LABEL.
MARK = "/vfab-counts-mark"

#: The label of the throwaway dump before each phase.
SKIP = "vfab-skip"


def child_pids() -> list[int]:
    """This process's child processes (every thread's children)."""
    pids: list[int] = []
    base = Path(f"/proc/{os.getpid()}/task")
    try:
        tasks = list(base.iterdir())
    except OSError:
        return pids
    for task in tasks:
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return pids


def under_callgrind(pid: int) -> bool:
    """Whether process *pid* runs under valgrind's callgrind tool."""
    try:
        return "callgrind" in os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False


class Meter:
    """The common part: labels seen, thread and server ids seen."""

    def __init__(self, servers: bool) -> None:
        #: Whether to look for server processes this process started.
        self.servers = servers
        self.client_tids: set[int] = set()
        self.server_pids: set[int] = set()

    def _threads(self) -> None:
        for t in threading.enumerate():
            if t.native_id is not None:
                self.client_tids.add(t.native_id)

    def start(self) -> None:
        """Called once, after the warmups."""

    def begin(self, label: str) -> None:
        raise NotImplementedError

    def end(self, label: str) -> None:
        raise NotImplementedError


class CallgrindMeter(Meter):
    def __init__(self, ext: ModuleType, servers: bool) -> None:
        super().__init__(servers)
        self.ext = ext
        self._instrumented: set[int] = set()
        self._current: list[int] = []

    def _vgdb(self, pid: int, *command: str) -> None:
        done = subprocess.run(
            ["vgdb", f"--pid={pid}", *command],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"vgdb {' '.join(command)} to server pid {pid} failed: "
                + (done.stderr.strip().splitlines() or ["no output"])[-1]
            )

    def start(self) -> None:
        self.ext.start_instrumentation()

    def begin(self, label: str) -> None:
        self._threads()
        self._current = []
        if self.servers:
            for pid in child_pids():
                if not under_callgrind(pid):
                    continue
                if pid not in self._instrumented:
                    self._vgdb(pid, "instrumentation", "on")
                    self._instrumented.add(pid)
                self._vgdb(pid, "dump", SKIP)
                self._current.append(pid)
                self.server_pids.add(pid)
        self.ext.dump_stats_at(SKIP)
        self.ext.zero_stats()

    def end(self, label: str) -> None:
        self.ext.dump_stats_at(label)
        for pid in self._current:
            self._vgdb(pid, "dump", label)
        self._threads()


class StraceMeter(Meter):
    def begin(self, label: str) -> None:
        self._threads()
        if self.servers:
            self.server_pids.update(child_pids())
        os.access(f"{MARK}/begin/{label}", os.F_OK)

    def end(self, label: str) -> None:
        os.access(f"{MARK}/end/{label}", os.F_OK)
        self._threads()
