"""The same ZEO load as locustfile.py, without locust: the baseline.

N users split over P processes, as locust splits them over its workers:
each process holds one ZODB.DB over one ZEO client and runs its users as
plain threads, each a Session in a closed loop (no think time) for a
fixed duration.  Comparing its ops/s and percentiles with a locust run at
the same concurrency shows what locust and gevent themselves cost.

Latencies are kept raw (every operation's ms) and percentiles computed from
them by nearest rank; locust rounds before it counts, so its percentiles
are coarser above 100 ms.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import multiprocessing
import random
import threading
import time
from typing import Any

from scenarios.load.journal import Journal
from scenarios.load.mix import OPERATIONS, LoadConfig
from scenarios.load.session import Session, open_database
from scenarios.results.stats import percentiles
from scenarios.results.table import Table


@dataclasses.dataclass
class ProcessResult:
    """What one process measured: per operation, the ms of each completed
    operation and of each conflicting attempt, failures, errors, and the
    journal of its commits."""

    window_s: float
    latencies: dict[str, list[float]]
    conflicts: dict[str, list[float]]
    failures: dict[str, int]
    errors: list[str]
    journal: dict[str, Any]

    @classmethod
    def empty(cls) -> ProcessResult:
        names = [op.name for op in OPERATIONS]
        return cls(
            0.0,
            {n: [] for n in names},
            {n: [] for n in names},
            dict.fromkeys(names, 0),
            [],
            {},
        )


def users_per_process(users: int, processes: int) -> list[int]:
    """Split users as evenly as possible, the first processes taking the rest."""
    base, rest = divmod(users, processes)
    return [base + (1 if i < rest else 0) for i in range(processes)]


def run_process(
    config: LoadConfig, users: int, duration: float, seed: int | None
) -> ProcessResult:
    """One client process: one DB, *users* threads for *duration* seconds."""
    names = [op.name for op in OPERATIONS]
    result = ProcessResult.empty()
    journal = Journal()
    seeds = random.Random(seed)
    db = open_database(config.target, pool_size=max(users, 1))
    sessions: list[Session] = []
    parts: list[ProcessResult] = []
    try:
        for _ in range(users):
            rng = random.Random(seeds.getrandbits(64)) if seed is not None else None
            sessions.append(Session(db, config, journal, rng))
        start = threading.Barrier(users + 1)
        deadline = [0.0]

        def work(session: Session, mine: ProcessResult) -> None:
            start.wait()
            while time.perf_counter() < deadline[0]:
                op = session.pick()
                try:
                    outcome = session.run(op)
                except Exception as e:  # counted and carried on, as locust does
                    mine.failures[op.name] += 1
                    mine.errors.append(f"{op.name}: {type(e).__name__}: {e}")
                    continue
                mine.conflicts[op.name].extend(outcome.conflicts_ms)
                if outcome.error is None:
                    mine.latencies[op.name].append(outcome.elapsed_ms)
                else:
                    mine.failures[op.name] += 1

        threads = []
        for session in sessions:
            mine = ProcessResult.empty()
            parts.append(mine)
            threads.append(threading.Thread(target=work, args=(session, mine)))
        for t in threads:
            t.start()
        began = time.perf_counter()
        deadline[0] = began + duration
        start.wait()
        try:
            for t in threads:
                t.join()
        except KeyboardInterrupt:
            deadline[0] = 0.0  # let each user finish its operation, then stop
            for t in threads:
                t.join()
            raise
        result.window_s = time.perf_counter() - began
    finally:
        for s in sessions:
            s.close()
        db.close()
    for part in parts:
        for n in names:
            result.latencies[n] += part.latencies[n]
            result.conflicts[n] += part.conflicts[n]
            result.failures[n] += part.failures[n]
        result.errors += part.errors
    result.journal = journal.drain()
    return result


def run(
    config: LoadConfig,
    users: int,
    processes: int,
    duration: float,
    seed: int | None = None,
) -> list[ProcessResult]:
    """Run the loop; one process runs here, several run as spawned children."""
    split = [n for n in users_per_process(users, processes) if n]
    seeds = [None if seed is None else seed + i for i in range(len(split))]
    if len(split) == 1:
        return [run_process(config, split[0], duration, seeds[0])]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(len(split), mp_context=context) as pool:
        futures = [
            pool.submit(run_process, config, n, duration, s)
            for n, s in zip(split, seeds, strict=True)
        ]
        return [f.result() for f in futures]


@dataclasses.dataclass(frozen=True)
class Row:
    """One line of the summary: an operation, or 'all' of them."""

    name: str
    ops: int
    ops_per_s: float
    conflicts: int
    failures: int
    p50: float
    p95: float
    p99: float

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def summarize(results: list[ProcessResult]) -> list[Row]:
    """Per operation and overall: completed ops, their rate (each process's
    count over its own window, summed), conflicts, failures, percentiles."""
    rows = []
    everything: list[float] = []
    total_rate = 0.0
    total_conflicts = total_failures = 0
    for op in OPERATIONS:
        values = [v for r in results for v in r.latencies[op.name]]
        rate = sum(len(r.latencies[op.name]) / r.window_s for r in results)
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
