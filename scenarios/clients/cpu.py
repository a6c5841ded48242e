"""CPU seconds of server processes, from /proc (Linux): a process with every
live descendant and its reaped children, as PostgreSQL and MariaDB work
in backends (docs/internals.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float] | None:
    """(ppid, cpu seconds incl. reaped children) of *pid*, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    # after "(comm)": state ppid ... utime(12) stime(13) cutime(14) cstime(15)
    ppid = int(fields[1])
    ticks = sum(int(x) for x in fields[11:15])
    return ppid, ticks / _TICK


def tree_cpu(root: int) -> float | None:
    """CPU seconds of *root* and its live descendants; None when it is gone."""
    stats: dict[int, tuple[int, float]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if entry.isdigit():
            s = _stat(int(entry))
            if s is not None:
                stats[int(entry)] = s
    if root not in stats:
        return None
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo += children.get(pid, [])
    return total


class CPUMeter:
    """CPU seconds of a changing set of server processes since start()."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self._pids = pids
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._started = False

    def sample(self) -> None:
        for pid in self._pids():
            value = tree_cpu(pid)
            if value is None:
                continue
            if pid not in self._first:
                # A process first seen after start() started since: all of
                # its CPU counts.
                self._first[pid] = value if not self._started else 0.0
            self._last[pid] = value

    def start(self) -> None:
        self._first, self._last = {}, {}
        self._started = False
        self.sample()
        self._started = True

    @property
    def seconds(self) -> float | None:
        """CPU seconds used since start() (None: no server process)."""
        if not self._first:
            return None
        return sum(self._last[p] - self._first[p] for p in self._first)


def host_busy_s() -> float | None:
    """CPU seconds every core of this machine has spent busy since it
    booted (/proc/stat: all but idle and iowait); None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    # guest and guest_nice (fields 9, 10) are already in user and nice.
    return (sum(ticks[:8]) - idle) / _TICK
