"""The workers `locust --processes N` forks beside its master: ended when
the master refuses its options, waited for when locust quits."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Any

import gevent

#: Seconds the master waits for its forked workers to exit.
EXIT_WAIT_S = 10.0


def _children() -> dict[int, str]:
    """This process's children: pid -> state (R, S, Z, ...), from /proc."""
    me = str(os.getpid())
    out: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # "pid (comm) state ppid ...": comm may hold spaces
                state, ppid = f.read().rpartition(")")[2].split()[:2]
        except (OSError, ValueError):
            continue
        if ppid == me:
            out[int(entry)] = state
    return out


def end_forked_workers() -> None:
    """SIGTERM the workers --processes forked from this process, by pid.

    Exiting from the init event leaves them behind otherwise: they retry the
    vanished master for a minute.  Forked workers are this process's only
    children at init time; locust's own exit handler reaps them.
    """
    for pid in _children():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def wait_forked_workers(**_kw: Any) -> None:
    """At locust's quit: wait (at most EXIT_WAIT_S) until the workers
    --processes forked have exited, so that the command ends after them
    (locust's exit handler does not wait: it reaps, without reaping them
    here, what has exited)."""
    deadline = time.monotonic() + EXIT_WAIT_S
    while any(state != "Z" for state in _children().values()):
        if time.monotonic() > deadline:
            return
        gevent.sleep(0.05)
