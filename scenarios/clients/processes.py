"""Client processes that Ctrl-C does not reach: the parent stops them.

Ctrl-C in a terminal sends SIGINT to the whole process group (and a
closing terminal SIGHUP, `kill -TERM -PGID` SIGTERM): every client process
would raise KeyboardInterrupt wherever it is (inside a load, inside
two-phase commit, inside multiprocessing's own start-up) and print a
traceback, or die without its result; multiprocessing's resource tracker,
started with the first client, would die of SIGHUP and the parent's
semaphores would then print its traceback at exit.  So client processes
(and the tracker) are started with SIGINT, SIGTERM and SIGHUP blocked (the
mask is inherited through fork and exec, and a spawned Python never
unblocks it): the signal reaches only the parent, which sets the
processes' stop event; each finishes the operation in hand, sends its
result and exits.  A process that does not is killed (SIGKILL).

Each process runs ``worker(*args, control)`` and sends back what it
returns (or the error it raised, as text) through a pipe of its own, so
that a process killed on purpose (a fault) costs only its own result.

What a client process does besides its work is shared here too (scale's
clients and zeoloop's): the records ZODB and ZEO log while a server goes
away and comes back are counted, not printed (count_log_records()).  Its
work is scenarios.clients.loop's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import multiprocessing.connection
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any


def die_with_parent() -> None:
    """In a client process: SIGKILL it when the process that started it
    dies (a worker host killed mid-point must not leave its clients
    running on)."""
    from storages.process import die_with_parent as death_signal

    arm = death_signal(signal.SIGKILL)
    if arm is not None:
        arm()


#: Seconds close() waits for the processes to stop before it kills them.
CLOSE_GRACE_S = 5.0


class LogCounter(logging.Handler):
    """Counts the warnings a client process logs (count_log_records())."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def count_log_records() -> LogCounter:
    """In a client process: every warning logged from now on counted by the
    LogCounter returned, none printed (ZODB's "Couldn't load state" and its
    traceback, while the server is away, would fill the terminal)."""
    counter = LogCounter()
    root = logging.getLogger()
    root.handlers[:] = [counter]
    root.setLevel(logging.WARNING)
    return counter


@dataclasses.dataclass
class Control:
    """What a client process gets from its parent: *stop* (set: finish the
    operation in hand and return), *ready* (a process says it has opened
    its database) and *start_at* (time.monotonic() at which every process
    starts working, set by the parent once all are ready; Linux's
    monotonic clock is the same in every process)."""

    stop: Any
    ready: Any
    start_at: Any
    index: int = 0

    def wait_start(self, timeout: float = 120.0) -> float:
        """Say ready, then wait for the common start; its monotonic time
        (0 when stopped before it came)."""
        self.ready.release()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stop.is_set():
            at = self.start_at.value
            if at:
                return float(at)
            time.sleep(0.005)
        return 0.0


#: The signals that stop a command (scenarios.interrupts.STOP_SIGNALS):
#: blocked in client processes, so that only the parent sees them.
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextlib.contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP held (pending, not lost) in this thread for
    the block; what is started inside inherits the block."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _child(
    worker: Callable[..., Any],
    args: Sequence[Any],
    control: Control,
    conn: multiprocessing.connection.Connection,
) -> None:  # pragma: no cover - runs in the child
    # SIGINT, SIGTERM and SIGHUP stay blocked (inherited): the parent stops
    # this process through the stop event, or kills it.
    try:
        result: Any = ("ok", worker(*args, control))
    except BaseException as e:  # sent to the parent, never printed here
        result = ("error", f"{type(e).__name__}: {e}", traceback.format_exc())
    try:
        conn.send(result)
    finally:
        conn.close()


class ClientProcesses:
    """One spawned process per entry of *args_list*, each running
    ``worker(*args, control)``; use as a context manager (leaving it stops
    and reaps every process)."""

    def __init__(
        self, worker: Callable[..., Any], args_list: Sequence[Sequence[Any]]
    ) -> None:
        self._context = multiprocessing.get_context("spawn")
        self.worker = worker
        self.args_list = list(args_list)
        # The first semaphore starts multiprocessing's resource tracker.
        with stop_signals_blocked():
            self.stop = self._context.Event()
            self._ready = self._context.Semaphore(0)
            self._start_at = self._context.Value("d", 0.0)
        self.processes: list[Any] = []
        self._conns: list[multiprocessing.connection.Connection] = []
        self.killed: set[int] = set()
        self._closed = False

    def start(self) -> None:
        with stop_signals_blocked():
            for i, args in enumerate(self.args_list):
                mine, theirs = self._context.Pipe(duplex=False)
                control = Control(self.stop, self._ready, self._start_at, i)
                p = self._context.Process(
                    target=_child,
                    args=(self.worker, tuple(args), control, theirs),
                    daemon=True,
                )
                p.start()
                theirs.close()
                self.processes.append(p)
                self._conns.append(mine)

    def wait_ready(self, timeout: float) -> int:
        """Wait until every process has said ready (or died, or *timeout*);
        how many are ready."""
        deadline = time.monotonic() + timeout
        ready = 0
        while ready < len(self.processes):
            if self._ready.acquire(timeout=0.05):
                ready += 1
                continue
            if time.monotonic() > deadline:
                break
            # One that died will never say ready: stop waiting for it (one
            # that said ready and then died is counted twice; rare, and the
            # point then says how many started).
            dead = sum(not p.is_alive() for p in self.processes)
            if ready + dead >= len(self.processes):
                break
        return ready

    def go(self, delay: float = 0.05) -> float:
        """Start every process's work *delay* seconds from now; that time."""
        at = time.monotonic() + delay
        self._start_at.value = at
        return at

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes if p.pid is not None]

    def kill(self, index: int) -> None:
        """SIGKILL one process (a fault): its result is lost."""
        p = self.processes[index]
        self.killed.add(index)
        if p.is_alive():
            p.kill()

    def results(self, timeout: float) -> list[tuple[str, Any] | None]:
        """Each process's ("ok", value) or ("error", text, traceback), or
        None for one that died, was killed or did not answer within
        *timeout* seconds (then terminated)."""
        deadline = time.monotonic() + timeout
        out: list[tuple[str, Any] | None] = []
        for conn in self._conns:
            value = None
            remaining = max(0.0, deadline - time.monotonic())
            try:
                if conn.poll(remaining):
                    value = conn.recv()
            except (EOFError, OSError):
                value = None
            out.append(value)
        self.close()
        return out

    def close(self, grace: float = CLOSE_GRACE_S) -> None:
        """Stop and reap every process: the stop event, then SIGKILL (SIGTERM
        is blocked in them, as SIGINT and SIGHUP are).  Once: again, it
        does nothing."""
        if self._closed:
            return
        self._closed = True
        self.stop.set()
        deadline = time.monotonic() + grace
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.kill()
                p.join()
        for conn in self._conns:
            conn.close()
        self._conns = []
        for p in self.processes:
            with contextlib.suppress(ValueError):
                p.close()

    def __enter__(self) -> ClientProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
