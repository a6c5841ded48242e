"""One client of a scale point: its loop, closed or open, and what it
measured (scenarios.scale.client runs one or more of them in a process).

Closed loop: the user starts its next operation when the last one ends.
Open loop (*rate*): operations arrive as a Poisson process at *rate* per
second whether or not the last one has ended; each one's latency runs from
its *intended* start (its arrival), so time spent waiting behind a slow
operation counts (no coordinated omission).  Arrivals the client could not
start before the window closed are its backlog, reported, never dropped
silently.

Operations that end inside the measured window count (an open loop's
backlog from the warmup included, with the latency it has by then); the
warmup before it runs the same loop unrecorded.  Errors other than
conflicts (ClientDisconnected while the server is away, "Couldn't load
state" after it) are counted by kind against their operation.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from scenarios.load.clients import ERROR_PAUSE_S
from scenarios.load.mix import OPERATIONS, LoadConfig
from scenarios.scale import histogram


@dataclasses.dataclass(frozen=True)
class ClientPlan:
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

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["config"]["weights"] = [list(w) for w in self.config.weights]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientPlan:
        config = dict(data["config"])
        config["weights"] = tuple((str(n), int(w)) for n, w in config["weights"])
        return cls(**{**data, "config": LoadConfig(**config)})


class _Tally:
    """What a client measured in its window."""

    def __init__(self, windows: int = 1) -> None:
        self.hists = {op.name: histogram.new() for op in OPERATIONS}
        #: per sub-window: every successful operation's latency, and commits
        self.window_hists = [histogram.new() for _ in range(windows)]
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


def run_loop(
    plan: ClientPlan, stop: Any, session: Any, start_at: float, rng: Any, cpu: Any
) -> dict[str, Any]:
    """One client's loop on *session* from *start_at* (time.monotonic())
    until the window ends or *stop* is set; what it measured (the CPU is
    its process's: *cpu* is told when the window starts)."""
    measure_at = start_at + plan.warmup_s
    end_at = measure_at + plan.duration_s
    windows = max(1, plan.windows)
    window_s = plan.duration_s / windows
    tally = _Tally(windows)
    arrival = start_at
    backlog = 0
    arrivals = 0  # open loop: arrivals inside the window that were started
    served = 0  # ... and of those, the ones that succeeded (whenever they ended)
    late_s = 0.0
    while not stop.is_set():
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
            while now < arrival and not stop.is_set():
                time.sleep(min(arrival - now, 0.05))
                now = time.monotonic()
            if stop.is_set():
                break
            intended = arrival
            if intended >= measure_at:
                arrivals += 1
        else:
            intended = time.monotonic()
            if intended >= end_at:
                break
        if time.monotonic() >= measure_at:
            cpu.window_started()
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
            histogram.record_ms(tally.hists[op.name], ms)
            # By when it ended: an operation ending after the window (begun
            # inside it) goes with the last sub-window, as with the point.
            w = min(int((done - measure_at) / window_s), windows - 1)
            histogram.record_ms(tally.window_hists[w], ms)
            if op.writes:
                tally.commits += 1
                tally.window_commits[w] += 1
                kind = "commit"
        elif kind != "failed":
            tally.errors[kind] = tally.errors.get(kind, 0) + 1
        if plan.timeline:
            tally.timeline.append((done - measure_at, intended - measure_at, kind))
    return tally.to_json() | {
        "backlog": backlog,
        "arrivals": arrivals,
        "served": served,
        "late_s": late_s,
        "interrupted": stop.is_set(),
    }


def _arrivals_before(rng: Any, rate: float, after: float, end: float) -> int:
    n, t = 0, after
    while True:
        t += rng.expovariate(rate)
        if t >= end:
            return n
        n += 1
