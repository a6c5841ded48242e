"""One client of a scale point: a process with one ZODB.DB on the target and
one simulated user (its own transaction manager and connection).

Closed loop: the user starts its next operation when the last one ends.
Open loop (*rate*): operations arrive as a Poisson process at *rate* per
second whether or not the last one has ended; each one's latency runs from
its *intended* start (its arrival), so time spent waiting behind a slow
operation counts (no coordinated omission).  Arrivals the client could not
start before the window closed are its backlog, reported, never dropped
silently.

Operations that end inside the measured window count (an open loop's
backlog from the warmup included, with the latency it has by then); the
warmup before it runs the same loop unrecorded.
Every attempt (its outcome, what it read and wrote) is appended to a history
file and flushed at once (scenarios.load.history.FileHistory), reads as
well as writes, so that what a client was told survives the client being
killed.  Errors other than
conflicts (ClientDisconnected while the server is away, "Couldn't load
state" after it) are counted by kind against their operation; the log
records ZODB and ZEO write meanwhile are counted, not printed.
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from typing import Any

from scenarios.load.clients import ERROR_PAUSE_S, Control, count_log_records
from scenarios.load.history import FileHistory, NoHistory
from scenarios.load.mix import OPERATIONS, LoadConfig
from scenarios.scale import hist


@dataclasses.dataclass(frozen=True)
class ClientPlan:
    """What one client process does (picklable: it crosses to the child)."""

    config: LoadConfig
    warmup_s: float
    duration_s: float
    #: Poisson arrivals per second for this client (None: closed loop).
    rate: float | None
    seed: int | None
    #: Where the client appends its history (None: --no-check, none kept).
    history_path: str | None
    #: How the history names the client (c0, c1, ...).
    name: str = "c0"
    #: Seconds an operation waits for an absent server before failing.
    wait_timeout_s: float = 3.0
    #: Keep each operation's (end, kind) for the fault report.
    timeline: bool = False
    #: Where the process's stderr goes (None: inherited).  What drivers
    #: print there when their server dies (psycopg2 prints the exception
    #: it could not raise) is not for the terminal.
    stderr_path: str | None = None
    #: The point's token in the notes of its transactions (the check finds
    #: them in the storage's log by it)
    run: str = ""
    #: Equal sub-windows of the measured window, each with its own
    #: histogram and commits (an interval for the point: ScalePoint.windows).
    windows: int = 1


class _Tally:
    """What a client measured in its window."""

    def __init__(self, windows: int = 1) -> None:
        self.hists = {op.name: hist.new() for op in OPERATIONS}
        #: per sub-window: every successful operation's latency, and commits
        self.window_hists = [hist.new() for _ in range(windows)]
        self.window_commits = [0] * windows
        self.commits = 0
        self.conflicts = 0
        self.failed = 0  # retries ran out
        self.errors: dict[str, int] = {}
        #: kind -> the first message of that kind (one line)
        self.examples: dict[str, str] = {}
        self.timeline: list[tuple[float, float, str]] = []

    def to_json(self) -> dict[str, Any]:
        return {
            "hists": {name: hist.encode(h) for name, h in self.hists.items()},
            "commits": self.commits,
            "conflicts": self.conflicts,
            "failed": self.failed,
            "errors": self.errors,
            "examples": self.examples,
            "timeline": self.timeline,
            "windows": [
                {"hist": hist.encode(h), "commits": c}
                for h, c in zip(self.window_hists, self.window_commits, strict=True)
            ],
        }


def run_client(plan: ClientPlan, control: Control) -> dict[str, Any]:
    """The client's loop; a JSON-able dict of what it measured."""
    from scenarios.load.session import Session, open_database

    if plan.stderr_path is not None:
        fd = os.open(plan.stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(fd, 2)
        os.close(fd)
    counter = count_log_records()
    history: Any = FileHistory(plan.history_path) if plan.history_path else NoHistory()
    db = open_database(
        plan.config.target,
        pool_size=1,
        wait_timeout=plan.wait_timeout_s,
        server_sync=plan.config.server_sync,
    )
    rng = random.Random(plan.seed)
    session = None
    try:
        session = Session(db, plan.config, history, rng, client=plan.name, run=plan.run)
        start_at = control.wait_start()
        if not start_at:
            return {"started": False}
        return _loop(plan, control, session, start_at, rng) | {
            "started": True,
            "log_records": counter.count,
        }
    finally:
        if session is not None:
            try:
                session.close()
            except Exception:  # the server may be gone: nothing to abort
                pass
        try:
            db.close()
        except Exception:
            pass
        if isinstance(history, FileHistory):
            history.close()


def _loop(
    plan: ClientPlan, control: Control, session: Any, start_at: float, rng: Any
) -> dict[str, Any]:
    measure_at = start_at + plan.warmup_s
    end_at = measure_at + plan.duration_s
    windows = max(1, plan.windows)
    window_s = plan.duration_s / windows
    tally = _Tally(windows)
    cpu_start: float | None = None
    arrival = start_at
    backlog = 0
    arrivals = 0  # open loop: arrivals inside the window that were started
    served = 0  # ... and of those, the ones that succeeded (whenever they ended)
    late_s = 0.0
    while not control.stop.is_set():
        if plan.rate:
            arrival += rng.expovariate(plan.rate)
            if arrival >= end_at:
                break
            now = time.monotonic()
            if now >= end_at:
                # Behind schedule at the end: what is left is backlog.
                late_s = now - arrival
                backlog = 1 + _arrivals_before(rng, plan.rate, arrival, end_at)
                break
            while now < arrival and not control.stop.is_set():
                time.sleep(min(arrival - now, 0.05))
                now = time.monotonic()
            if control.stop.is_set():
                break
            intended = arrival
            if intended >= measure_at:
                arrivals += 1
        else:
            intended = time.monotonic()
            if intended >= end_at:
                break
        if cpu_start is None and time.monotonic() >= measure_at:
            cpu_start = time.process_time()
        op = session.pick()
        kind = "ok"
        try:
            outcome = session.run(op)
        except Exception as e:  # counted against the operation, not printed
            kind = type(e).__name__
            outcome = None
            if kind not in tally.examples:
                tally.examples[kind] = f"{op.name}: {e}".splitlines()[0][:200]
        done = time.monotonic()
        if kind != "ok":
            # A server that refuses connections fails every operation at
            # once: pause rather than spin (counted as part of no service).
            time.sleep(ERROR_PAUSE_S)
        if plan.rate and intended >= measure_at and kind == "ok":
            if outcome is None or outcome.error is None:
                served += 1
        if done < measure_at:
            continue
        if outcome is not None:
            tally.conflicts += len(outcome.conflicts_ms)
            if outcome.error is not None:  # its retries ran out
                kind = "failed"
                tally.failed += 1
        if kind == "ok":
            ms = (done - intended) * 1000
            hist.record_ms(tally.hists[op.name], ms)
            # By when it ended: an operation ending after the window (begun
            # inside it) goes with the last sub-window, as with the point.
            w = min(int((done - measure_at) / window_s), windows - 1)
            hist.record_ms(tally.window_hists[w], ms)
            if op.writes:
                tally.commits += 1
                tally.window_commits[w] += 1
                kind = "commit"
        elif kind != "failed":
            tally.errors[kind] = tally.errors.get(kind, 0) + 1
        if plan.timeline:
            tally.timeline.append((done - measure_at, intended - measure_at, kind))
    cpu_s = time.process_time() - cpu_start if cpu_start is not None else 0.0
    return tally.to_json() | {
        "cpu_s": cpu_s,
        "backlog": backlog,
        "arrivals": arrivals,
        "served": served,
        "late_s": late_s,
        "interrupted": control.stop.is_set(),
    }


def _arrivals_before(rng: Any, rate: float, after: float, end: float) -> int:
    n, t = 0, after
    while True:
        t += rng.expovariate(rate)
        if t >= end:
            return n
        n += 1
