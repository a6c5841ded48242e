"""The client loop every load shares: zeoloop's users, scale's clients
(closed or open loop) and, one operation a task, locust's users.

A client takes its starts from a schedule (closed(): each as the last
operation ends, until a deadline or a stop; scale's open loop: Poisson
arrivals), picks an operation, runs it (Session.run: one transaction,
conflicts retried, every attempt in the history) and hands what happened
(a Done) to what its load keeps: zeoloop each operation's ms, scale
histograms, locust requests.  After an error the Session raised (a server
gone, not a conflict) the client pauses ERROR_PAUSE_S rather than spin.
Locust schedules its users itself, so its plugin takes attempt() alone.

Each load keeps its own clock: scale times Done.intended to Done.ended
(the pick included); zeoloop and locust the Session's Outcome.elapsed_ms,
and locust a raised error from after the pick.

A scale point's client (run_loop, its ClientPlan): closed loop, the user
starts its next operation when the last one ends.  Open loop (*rate*):
operations arrive as a Poisson process at *rate* per second whether or not
the last one has ended; each one's latency runs from its *intended* start
(its arrival), so time spent waiting behind a slow operation counts (no
coordinated omission).  Arrivals the client could not start before the
window closed are its backlog, reported, never dropped silently.

Operations that end inside the measured window count (an open loop's
backlog from the warmup included, with the latency it has by then); the
warmup before it runs the same loop unrecorded.  Errors other than
conflicts (ClientDisconnected while the server is away, "Couldn't load
state" after it) are counted by kind against their operation.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from scenarios.clients import histogram
from scenarios.load.mix import OPERATIONS, LoadConfig, Operation
from scenarios.load.session import Outcome, Session
from vfab.codec import Json

#: Seconds a client pauses after an operation failed with an error.
ERROR_PAUSE_S = 0.01


@dataclasses.dataclass(frozen=True)
class Done:
    """One operation ended: the Session's Outcome, or the error it raised;
    when it was due to start and when it ended (time.monotonic())."""

    op: Operation
    outcome: Outcome | None
    raised: Exception | None
    intended: float
    ended: float


def attempt(session: Session, intended: float, op: Operation | None = None) -> Done:
    """Run *op* (else the session's next pick) on *session*."""
    if op is None:
        op = session.pick()
    try:
        outcome = session.run(op)
    except Exception as e:  # the load counts it against the operation
        return Done(op, None, e, intended, time.monotonic())
    return Done(op, outcome, None, intended, time.monotonic())


def run(session: Session, starts: Iterable[float], keep: Callable[[Done], Any]) -> None:
    """An operation at each of *starts* (time.monotonic()), each to *keep*."""
    for intended in starts:
        done = attempt(session, intended)
        keep(done)
        if done.raised is not None:
            time.sleep(ERROR_PAUSE_S)


def closed(stop: Any, end_at: float) -> Iterator[float]:
    """A closed loop's starts: the next as the last operation ends (no think
    time), until *end_at* (time.monotonic()) or *stop* is set."""
    while not stop.is_set():
        now = time.monotonic()
        if now >= end_at:
            return
        yield now


@dataclasses.dataclass(frozen=True)
class ClientPlan(Json):
    """What every client of a point does (picklable, and JSON for a
    worker on another host)."""

    config: LoadConfig
    warmup_s: float
    duration_s: float
    #: Poisson arrivals per second for each client (None: closed loop).
    rate: float | None
    #: Seconds an operation waits for an absent server before failing.
    wait_timeout_s: float = 3.0
    #: Keep each operation's (end, kind) for the fault report.
    timeline: bool = False
    #: The point's token in the notes of its transactions (the check finds
    #: them in the storage's log by it)
    run: str = ""
    #: Equal sub-windows of the measured window, each with its own
    #: histogram and commits (an interval for the point: ScalePoint.windows).
    windows: int = 1


class _Tally:
    """What a client measured in its window: keep() takes each operation."""

    def __init__(self, plan: ClientPlan, measure_at: float) -> None:
        self.plan = plan
        self.measure_at = measure_at
        self.windows = max(1, plan.windows)
        self.window_s = plan.duration_s / self.windows
        self.hists = {op.name: histogram.new() for op in OPERATIONS}
        #: per sub-window: every successful operation's latency, and commits
        self.window_hists = [histogram.new() for _ in range(self.windows)]
        self.window_commits = [0] * self.windows
        self.commits = 0
        self.conflicts = 0
        self.failed = 0  # retries ran out
        self.errors: dict[str, int] = {}
        #: kind -> the first message of that kind (one line)
        self.examples: dict[str, str] = {}
        self.timeline: list[tuple[float, float, str]] = []
        #: open loop: arrivals inside the window that succeeded (whenever
        #: they ended)
        self.served = 0

    def keep(self, done: Done) -> None:
        """Count *done* (ended before the window: only its error's example,
        and the open loop's arrival it served)."""
        outcome, measure_at = done.outcome, self.measure_at
        if outcome is None:
            kind = type(done.raised).__name__
            text = f"{done.op.name}: {done.raised}"
            self.examples.setdefault(kind, text.splitlines()[0][:200])
        elif self.plan.rate and done.intended >= measure_at and outcome.error is None:
            self.served += 1
        if done.ended < measure_at:
            return
        if outcome is None:
            self.errors[kind] = self.errors.get(kind, 0) + 1
        else:
            self.conflicts += len(outcome.conflicts_ms)
            self.failed += outcome.error is not None  # its retries ran out
            kind = "failed" if outcome.error is not None else self._succeeded(done)
        if self.plan.timeline:
            at = (done.ended - measure_at, done.intended - measure_at, kind)
            self.timeline.append(at)

    def _succeeded(self, done: Done) -> str:
        """Record a successful operation's latency: "commit" or "ok"."""
        ms = (done.ended - done.intended) * 1000
        histogram.record_ms(self.hists[done.op.name], ms)
        # By when it ended: an operation ending after the window (begun
        # inside it) goes with the last sub-window, as with the point.
        w = int((done.ended - self.measure_at) / self.window_s)
        w = min(w, self.windows - 1)
        histogram.record_ms(self.window_hists[w], ms)
        if not done.op.writes:
            return "ok"
        self.commits += 1
        self.window_commits[w] += 1
        return "commit"

    def to_json(self) -> dict[str, Any]:
        return {
            "hists": {name: histogram.encode(h) for name, h in self.hists.items()},
            "commits": self.commits,
            "conflicts": self.conflicts,
            "failed": self.failed,
            "errors": self.errors,
            "examples": self.examples,
            "timeline": self.timeline,
            "windows": [
                {"hist": histogram.encode(h), "commits": c}
                for h, c in zip(self.window_hists, self.window_commits, strict=True)
            ],
        }


def _arrivals(
    stop: Any, plan: ClientPlan, rng: Any, start_at: float, counts: dict[str, Any]
) -> Iterator[float]:
    """An open loop's starts: Poisson arrivals at the plan's rate from
    *start_at* until the window ends; in *counts*, the arrivals inside the
    window that were started, and when the client fell behind, what was
    left (backlog) and how late."""
    rate = float(plan.rate or 0.0)
    measure_at = start_at + plan.warmup_s
    end_at = measure_at + plan.duration_s
    arrival = start_at
    while not stop.is_set():
        arrival += rng.expovariate(rate)
        if arrival >= end_at:
            return
        now = time.monotonic()
        if now >= end_at:
            # Behind schedule at the end: what is left is backlog.
            counts["late_s"] = now - arrival
            counts["backlog"] = 1 + _arrivals_before(rng, rate, arrival, end_at)
            return
        while now < arrival and not stop.is_set():
            time.sleep(min(arrival - now, 0.05))
            now = time.monotonic()
        if stop.is_set():
            return
        if arrival >= measure_at:
            counts["arrivals"] += 1
        yield arrival


def run_loop(
    plan: ClientPlan, stop: Any, session: Any, start_at: float, rng: Any, cpu: Any
) -> dict[str, Any]:
    """One client's loop on *session* from *start_at*
    (time.monotonic()) until the window ends or *stop* is set; what it
    measured (the CPU is its process's: *cpu* is told when the window
    starts)."""
    measure_at = start_at + plan.warmup_s
    tally = _Tally(plan, measure_at)
    counts: dict[str, Any] = {"backlog": 0, "arrivals": 0, "late_s": 0.0}
    if plan.rate:
        starts = _arrivals(stop, plan, rng, start_at, counts)
    else:
        starts = closed(stop, measure_at + plan.duration_s)

    def started() -> Iterator[float]:
        for intended in starts:
            if time.monotonic() >= measure_at:
                cpu.window_started()
            yield intended

    run(session, started(), tally.keep)
    return (
        tally.to_json()
        | counts
        | {"served": tally.served, "interrupted": stop.is_set()}
    )


def _arrivals_before(rng: Any, rate: float, after: float, end: float) -> int:
    n, t = 0, after
    while True:
        t += rng.expovariate(rate)
        if t >= end:
            return n
        n += 1
