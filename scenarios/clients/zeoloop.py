"""The same ZEO load as locustfile.py, without locust: the baseline.

N users split over P processes, as locust splits them over its workers:
each process holds one ZODB.DB over one ZEO client and runs its users as
plain threads, each a Session in a closed loop (no think time) for a
fixed duration.  Comparing its ops/s and percentiles with a locust run at
the same concurrency shows what locust and gevent themselves cost.

The processes are children (scenarios.clients.processes) even when there is
one: a server that stops answering holds a client's call for ever (ZEO
bounds only its wait for a connection), and only a process can be
stopped from outside.  Each waits for its users' last operation, and the
parent for the processes at most FINISH_S past the window; a process
that does not answer by then is stopped and called lost.  A user whose
operation loses the connection tries it again once the client has
connected again (RECONNECTS times: a server restarted on its address),
as an application retries a transient error; the attempts cut are in
the history and counted.

Latencies are kept raw (every operation's ms) and percentiles computed from
them by nearest rank; locust rounds before it counts, so its percentiles
are coarser above 100 ms.
"""

from __future__ import annotations

import dataclasses
import random
import secrets
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from scenarios.clients import concurrency, loop
from scenarios.clients.loop import Done
from scenarios.clients.process import Stop, client_process
from scenarios.clients.processes import CLOSE_GRACE_S, ClientProcesses, Control
from scenarios.interrupts import remove_tree
from scenarios.load.history import read_history
from scenarios.load.mix import OPERATIONS, LoadConfig
from scenarios.results.stats import percentiles
from scenarios.results.table import Table
from storages import StorageError
from storages.zeo.factory import WAIT_TIMEOUT_S
from vfab.codec import Json

#: Times a user tries an operation again after it lost the connection.
RECONNECTS = 1
#: Seconds past the window the parent waits for a process's result: an
#: operation in hand at the end waits for the server at most the client's
#: wait timeout per attempt, then this long for the rest.
FINISH_S = (RECONNECTS + 1) * WAIT_TIMEOUT_S + 15.0
#: Seconds past the window by which zeoloop has its verdict: the wait for
#: the processes, their stopping, and the check's wait for the server,
#: which gets what is left (a process stuck on a server that stopped
#: answering leaves none: the data are then not checked).
BOUND_PAST_WINDOW_S = FINISH_S + CLOSE_GRACE_S


@dataclasses.dataclass
class ProcessResult:
    """What one process measured: per operation, the ms of each completed
    operation and of each conflicting attempt, failures, errors, and the
    history of its attempts (scenarios.load.history, drained)."""

    window_s: float
    latencies: dict[str, list[float]]
    conflicts: dict[str, list[float]]
    failures: dict[str, int]
    errors: list[str]
    history: list[dict[str, Any]]
    interrupted: bool = False
    #: The process sent no result though nobody stopped the loop: it was
    #: killed (SIGKILL, the OOM killer) or stuck; what it did is not counted.
    lost: bool = False
    #: Attempts cut by a lost connection and tried again.
    reconnects: int = 0
    #: Warnings ZODB and ZEO logged in the process (counted, not printed).
    log_records: int = 0
    #: time.monotonic() by which the run promised its verdict (set by run()).
    verdict_by: float = 0.0

    def keep(self, done: Done) -> None:
        """Count one operation of a user (scenarios.clients.loop): its time
        is the Session's (Outcome.elapsed_ms)."""
        name, outcome = done.op.name, done.outcome
        if outcome is None:  # raised: counted and carried on, as locust does
            self.failures[name] += 1
            self.errors.append(f"{name}: {type(done.raised).__name__}: {done.raised}")
            return
        self.conflicts[name].extend(outcome.conflicts_ms)
        self.reconnects += outcome.reconnects
        if outcome.error is None:
            self.latencies[name].append(outcome.elapsed_ms)
        else:
            self.failures[name] += 1

    @classmethod
    def empty(cls) -> ProcessResult:
        names = [op.name for op in OPERATIONS]
        return cls(
            0.0,
            {n: [] for n in names},
            {n: [] for n in names},
            dict.fromkeys(names, 0),
            [],
            [],
        )


def users_per_process(users: int, processes: int) -> list[int]:
    """Split users as evenly as possible, the first processes taking the rest."""
    base, rest = divmod(users, processes)
    return [base + (1 if i < rest else 0) for i in range(processes)]


def run_process(
    config: LoadConfig,
    users: int,
    duration: float,
    seed: int | None,
    process: int,
    history_path: str,
    run_token: str,
    control: Control,
) -> ProcessResult:
    """One client process (a child: scenarios.clients.processes): one DB,
    *users* threads for *duration* seconds from the parent's common start;
    the users' history goes to *history_path* as they make it (so a killed
    process leaves it behind).  When the parent sets the stop event each
    user finishes the operation in hand and the result says it was
    interrupted."""
    result = ProcessResult.empty()
    seeds = random.Random(seed)
    with client_process(
        "threads",
        config.target,
        max(users, 1),
        history_path=history_path,
        server_sync=config.server_sync,
    ) as opened:
        for i in range(users):
            rng = random.Random(seeds.getrandbits(64)) if seed is not None else None
            opened.session(
                config, rng, client=f"p{process}u{i}", run=run_token,
                reconnects=RECONNECTS,
            )  # fmt: skip
        lock = threading.Lock()

        def keep(done: Done) -> None:  # the users' one result
            with lock:
                result.keep(done)

        stop = Stop(control.stop)
        if not control.wait_start():
            stop.local.set()
        began = time.monotonic()
        deadline = began + duration

        def one(i: int) -> None:
            loop.run(opened.sessions[i], loop.closed(stop, deadline), keep)

        concurrency.run_each("threads", users, one, stop.local.set)
        result.window_s = time.monotonic() - began
        result.interrupted = stop.is_set()
    result.log_records = opened.counter.count
    return result


def run(
    config: LoadConfig,
    users: int,
    processes: int,
    duration: float,
    seed: int | None = None,
) -> list[ProcessResult]:
    """Run the loop in child processes that Ctrl-C does not reach
    (scenarios.clients.processes): Ctrl-C stops them, and the results they send
    say they were interrupted; one that does not answer within FINISH_S of
    the window's end is stopped and lost."""
    split = [n for n in users_per_process(users, processes) if n]
    seeds = [None if seed is None else seed + i for i in range(len(split))]
    token = secrets.token_hex(4)
    scratch = Path(tempfile.mkdtemp(prefix="vfab-zeoloop-history-"))
    paths = [str(scratch / f"process-{i}.jsonl") for i in range(len(split))]
    args = [
        (config, n, duration, s, i, path, token)
        for i, (n, s, path) in enumerate(zip(split, seeds, paths, strict=True))
    ]
    stopped = False
    verdict_by = 0.0
    try:
        with ClientProcesses(run_process, args) as procs:
            try:
                procs.start()
                procs.wait_ready(timeout=60 + 5 * len(split))
                procs.go()
                verdict_by = time.monotonic() + duration + BOUND_PAST_WINDOW_S
                answers = procs.results(timeout=duration + FINISH_S)
            except KeyboardInterrupt:
                stopped = True
                procs.stop.set()
                verdict_by = time.monotonic() + BOUND_PAST_WINDOW_S
                answers = procs.results(timeout=FINISH_S)
        histories = [read_history(path) for path in paths]
    finally:
        remove_tree(scratch)
    out = []
    for answer in answers:
        if answer is None:
            # Stopped by a signal: cut short.  Otherwise it died on its
            # own, was killed (scale's kill-client) or did not finish its
            # operation in time (a server that stopped answering): lost.
            lost = ProcessResult.empty()
            lost.interrupted = stopped
            lost.lost = not stopped
            lost.errors.append(
                "a client process sent no result"
                + ("" if stopped else " (killed or stuck)")
            )
            out.append(lost)
        elif answer[0] == "error":
            raise StorageError(f"a client process failed: {answer[1]}")
        else:
            out.append(answer[1])
    for result, history in zip(out, histories, strict=True):
        result.history = history
        result.verdict_by = verdict_by
    return out


def check_wait(results: list[ProcessResult]) -> float:
    """Seconds the check's fresh client may wait for the server: a ZEO
    client's usual wait, or less, what is left of BOUND_PAST_WINDOW_S."""
    left = min((r.verdict_by for r in results), default=0.0) - time.monotonic()
    return max(0.0, min(WAIT_TIMEOUT_S, left))


@dataclasses.dataclass(frozen=True)
class Row(Json):
    """One line of the summary: an operation, or 'all' of them."""

    name: str
    ops: int
    ops_per_s: float
    conflicts: int
    failures: int
    p50: float
    p95: float
    p99: float


def summarize(results: list[ProcessResult]) -> list[Row]:
    """Per operation and overall: completed ops, their rate (each process's
    count over its own window, summed), conflicts, failures, percentiles."""
    rows = []
    everything: list[float] = []
    total_rate = 0.0
    total_conflicts = total_failures = 0
    for op in OPERATIONS:
        values = [v for r in results for v in r.latencies[op.name]]
        rate = sum(
            len(r.latencies[op.name]) / r.window_s for r in results if r.window_s
        )
        n_conflicts = sum(len(r.conflicts[op.name]) for r in results)
        n_failures = sum(r.failures[op.name] for r in results)
        everything += values
        total_rate += rate
        total_conflicts += n_conflicts
        total_failures += n_failures
        p50, p95, p99 = percentiles(values)
        rows.append(
            Row(op.name, len(values), rate, n_conflicts, n_failures, p50, p95, p99)
        )
    p50, p95, p99 = percentiles(everything)
    rows.append(
        Row(
            "all",
            len(everything),
            total_rate,
            total_conflicts,
            total_failures,
            p50,
            p95,
            p99,
        )
    )
    return rows


def table(rows: list[Row]) -> str:
    """The rows as an aligned text table."""
    header = ["operation", "ops", "ops/s", "conflicts", "failed"]
    header += ["p50 ms", "p95 ms", "p99 ms"]
    cells = [
        [r.name, f"{r.ops:d}", f"{r.ops_per_s:.1f}", f"{r.conflicts:d}"]
        + [f"{r.failures:d}", f"{r.p50:.2f}", f"{r.p95:.2f}", f"{r.p99:.2f}"]
        for r in rows
    ]
    return Table("", header, cells).text() + "\n"
