"""What a scale run measured: ScalePoint per storage and client count (its
latencies as encoded HdrHistograms, never percentiles alone), ScaleRun,
and their JSON (SCALE in files.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from scenarios.checker.check import Check
from scenarios.clients import histogram
from scenarios.load.mix import OPERATIONS
from scenarios.results import schema
from scenarios.results.files import SCALE
from scenarios.results.schema import (
    Count,
    ListOf,
    MapOf,
    Object,
    Optional,
    Seconds,
    Text,
)
from vfab import codec


@dataclasses.dataclass(frozen=True)
class ScalePoint:
    """One storage at one client count.

    hists: operation -> encoded HdrHistogram of successful operations'
    latencies (us; open loop: from each arrival).  commits: successful
    writes.  conflicts: conflicting attempts (each retried, or the last of
    an operation that failed); failed: operations whose retries ran out;
    errors: other exceptions by kind.  backlog: open-loop arrivals inside
    the window that no client could start before it ended; late_s: how far
    behind its schedule the latest client was then.  client_cpu_s: CPU of
    every client process in the window; server_cpu_s: of the server
    processes and their children (None: no server process).  fault: the
    fault report (see scenarios.scale.faults), None without one.
    check: the consistency check (scenarios.checker.check; "invariants" in
    the file).
    """

    storage: str
    clients: int
    started: int
    window_s: float
    rate: float | None
    hists: dict[str, str]
    commits: int
    conflicts: int
    failed: int
    errors: dict[str, int]
    backlog: int
    late_s: float
    client_cpu_s: float
    server_cpu_s: float | None
    log_records: int
    killed_clients: int
    check: Check = dataclasses.field(metadata={codec.KEY: "invariants"})
    fault: dict[str, Any] | None = None
    #: open loop: arrivals inside the window the clients started, and of
    #: those the ones that succeeded (0, 0: not counted, a file of format 1)
    arrivals: int = 0
    served: int = 0
    interrupted: bool = False
    notes: tuple[str, ...] = ()
    #: Equal sub-windows of the window, in order: {"hist": encoded
    #: HdrHistogram of every successful operation ending in it, "commits"}
    #: (format 4; () in older files).
    windows: tuple[dict[str, Any], ...] = ()
    #: Several hosts (scale --workers): each that served the point, with
    #: its clients and processes, their CPU and the host's ({"host",
    #: "address", "worker", "clients", "processes", "client_cpu_s",
    #: "cpu_busy_s", "cores", "clock"}); () on one machine.
    hosts: tuple[dict[str, Any], ...] = ()
    #: Why the point is incomplete (a host lost mid-point), None when it is
    #: whole.  An incomplete point keeps no figures: the hosts left did not
    #: measure the point's throughput.
    incomplete: str | None = None

    @property
    def steady(self) -> bool:
        """Whether the sub-windows measure one steady load: at least two,
        and no fault or interruption that changes the load inside them."""
        return len(self.windows) >= 2 and self.fault is None and not self.interrupted

    def window_ops_per_s(self) -> list[float]:
        """Each sub-window's successful operations per second ([] unless
        steady)."""
        if not self.steady or not self.window_s:
            return []
        length = self.window_s / len(self.windows)
        return [
            int(histogram.merged([w["hist"]]).get_total_count()) / length
            for w in self.windows
        ]

    def window_p99_ms(self) -> list[float]:
        """Each sub-window's p99 latency in ms, of the windows that ended an
        operation ([] unless steady)."""
        if not self.steady:
            return []
        out = []
        for w in self.windows:
            s = histogram.summary_ms(histogram.merged([w["hist"]]))
            if s["count"]:
                out.append(float(s["p99"]))
        return out

    def histogram(self, operation: str | None = None) -> Any:
        """The merged histogram of one operation, or of all (None)."""
        if operation is not None:
            return histogram.merged([self.hists.get(operation)])
        return histogram.merged(self.hists.values())

    @property
    def ops(self) -> int:
        return int(self.histogram().get_total_count())

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.window_s if self.window_s else 0.0

    @property
    def commits_per_s(self) -> float:
        return self.commits / self.window_s if self.window_s else 0.0

    @property
    def retries(self) -> int:
        """Conflicting attempts that were retried (the rest ended a failed
        operation)."""
        return max(0, self.conflicts - self.failed)

    @property
    def honoured(self) -> bool | None:
        """Open loop: whether the clients kept up with what was offered: of
        the window's arrivals (those started, plus the backlog never
        started), at least 90% served without failing; None for a closed
        loop.  Against the arrivals, not the rate: in a short window a
        Poisson count is often 15% below its mean; and not "no backlog at
        all": one slow operation at the window's end on a busy machine
        leaves one arrival unstarted."""
        if self.rate is None:
            return None
        if not self.arrivals:  # format 1: the rule of that time
            return self.backlog == 0 and self.ops_per_s >= 0.9 * self.rate
        return self.served >= 0.9 * (self.arrivals + self.backlog)

    def summary(self, cores: int | None = None) -> dict[str, float | int | None]:
        """What a reader of the JSON wants without decoding histograms:
        operations and commits per second of the window, all operations'
        latency percentiles (ms), CPU seconds and, given the machine's
        *cores*, the share of them the point used (on several hosts, the
        cores of every machine that served it, each counted once).  An
        incomplete point's are all None."""
        if self.incomplete is not None:
            return dict.fromkeys(SUMMARY_KEYS)
        s = histogram.summary_ms(self.histogram())
        cpu = self.client_cpu_s + (self.server_cpu_s or 0.0)
        cores = self.cores or cores
        use = cpu / (self.window_s * cores) if cores and self.window_s else None
        return {
            "ops": self.ops,
            "ops_per_s": round(self.ops_per_s, 3),
            "commits_per_s": round(self.commits_per_s, 3),
            "p50_ms": s["p50"],
            "p95_ms": s["p95"],
            "p99_ms": s["p99"],
            "max_ms": s["max"],
            "client_cpu_s": self.client_cpu_s,
            "server_cpu_s": self.server_cpu_s,
            "cpu_use": None if use is None else round(use, 4),
        }

    @property
    def cores(self) -> int | None:
        """The cores of the machines that served the point, each machine
        (kernel) once; None on one machine (the run's own)."""
        kernels = {h.get("kernel"): h.get("cores") for h in self.hosts}
        counts = [c for c in kernels.values() if isinstance(c, int)]
        return sum(counts) if counts else None

    def to_json(self, cores: int | None = None) -> dict[str, Any]:
        return {**codec.encode(self), "summary": self.summary(cores)}


@dataclasses.dataclass(frozen=True)
class ScaleRun(schema.Stored):
    """Every point of one run, in run order, with the run's metadata.
    *points* have figures; a point a lost host left incomplete is in
    *incomplete*, so nothing that reads figures reads its absent ones as 0
    (the JSON keeps it among the points, the text report after them)."""

    FORMAT = SCALE
    WHAT = "scale result"

    metadata: dict[str, Any]
    points: tuple[ScalePoint, ...]
    incomplete: tuple[ScalePoint, ...] = ()

    def __post_init__(self) -> None:
        cut = tuple(p for p in self.points if p.incomplete is not None)
        if cut:
            whole = tuple(p for p in self.points if p.incomplete is None)
            object.__setattr__(self, "points", whole)
            object.__setattr__(self, "incomplete", self.incomplete + cut)

    @property
    def every_point(self) -> tuple[ScalePoint, ...]:
        """The points with figures, then the incomplete ones (run order)."""
        return self.points + self.incomplete

    def storages(self) -> list[str]:
        return list(dict.fromkeys(p.storage for p in self.points))

    @property
    def cores(self) -> int | None:
        cores = self.metadata.get("host", {}).get("cpu_count")
        return cores if isinstance(cores, int) else None

    def to_json(self) -> dict[str, Any]:
        return {
            **SCALE.header(),
            "metadata": self.metadata,
            "points": [p.to_json(self.cores) for p in self.every_point],
        }

    @classmethod
    def schema(cls) -> schema.Object:
        point = schema.of(
            ScalePoint,
            clients=schema.Positive,
            rate=Optional(RATE),
            invariants=Check.schema(),
            fault=Optional(FAULT),
            windows=ListOf(WINDOW),
            summary=MapOf(Optional(schema.Number)),
        )
        seed = {"seed": Optional(schema.Whole)}
        return schema.of(cls, metadata=schema.metadata(seed), points=ListOf(point))


OPERATION_NAMES = tuple(op.name for op in OPERATIONS)

#: A fault's report (scenarios.scale.faults.report).
FAULT = Object(
    {
        "kind": Text,
        "at_s": Seconds,
        "restart_s": Optional(Seconds),
        "applied_at_s": Optional(Seconds),
        "restarted_at_s": Optional(Seconds),
        "outage_s": Optional(Seconds),
        "first_commit_after_restart_s": Optional(Seconds),
        "first_commit_after_fault_s": Optional(Seconds),
        "errors_before": MapOf(Count),
        "errors_during": MapOf(Count),
        "errors_after": MapOf(Count),
    },
    required=("kind", "applied_at_s", "outage_s"),
)

#: Offered operations per second over all clients (scale --rate).
RATE = schema.Field("a finite rate above 0", low=0, high=1e9)
WINDOW = Object({"hist": Text, "commits": Count}, required=("hist", "commits"))
#: The keys of ScalePoint.summary().
SUMMARY_KEYS = (
    "ops",
    "ops_per_s",
    "commits_per_s",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "client_cpu_s",
    "server_cpu_s",
    "cpu_use",
)
