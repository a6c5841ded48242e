"""Running one timed target in pedantic mode and recording what
pytest-benchmark does not: CPU time and objects loaded and stored per round.

Rounds: pytest-benchmark's automatic mode cannot take an untimed setup per
round, so these tests use pedantic mode and choose the number of rounds the
way the automatic mode does: one calibration round (untimed, which doubles
as warm-up), then as many rounds as fit in --benchmark-max-time (default 1 s)
counting the untimed setup too, never fewer than --benchmark-min-rounds
(default 5) nor more than MAX_ROUNDS.  With benchmarks disabled (the normal
test run) the target runs once and nothing is calibrated.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import pytest

from storages import Store

#: Set in the pytest process a count run starts (the plugin's dump directory).
COUNTS_VARIABLE = "VFAB_COUNTS_DUMPS"

#: A ceiling on rounds for targets of a few microseconds.
MAX_ROUNDS = 1000

#: pyperf's rule: a value under 1 ms is too short to time well (the timer,
#: a cache miss or one collection are a large share of it).  A target of
#: microseconds is looped until one value takes at least this long.
MIN_VALUE_S = 0.1

#: A ceiling on loops per value, for targets of nanoseconds.
MAX_LOOPS = 2**20


def plan_rounds(config: pytest.Config, setup_s: float, timed_s: float) -> int:
    """Rounds for a target whose setup took *setup_s* and which took
    *timed_s* once."""
    min_rounds = int(config.getoption("benchmark_min_rounds"))
    max_time = float(str(config.getoption("benchmark_max_time")))
    fit = int(max_time / max(setup_s + timed_s, 1e-9))
    return max(min_rounds, min(fit, MAX_ROUNDS))


def calibrate_loops(
    target: Callable[[], Any], min_time: float = MIN_VALUE_S
) -> tuple[int, float]:
    """(loops, seconds per call): double the loops, as pyperf does, until
    *loops* back-to-back calls of *target* take at least *min_time*.  Doubles
    as warm-up.  Under counts (scenarios.counts.pytest_counts) one call: the
    count run's clock advances a microsecond per reading, so the doubling
    would run to MAX_LOOPS, and a count needs no loop to be exact."""
    loops = 1
    if os.environ.get(COUNTS_VARIABLE):
        t0 = time.perf_counter()
        target()
        return 1, time.perf_counter() - t0
    while True:
        t0 = time.perf_counter()
        for _ in range(loops):
            target()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time or loops >= MAX_LOOPS:
            return loops, elapsed / loops
        loops *= 2


def min_single_call(target: Callable[[], Any], calls: int) -> float:
    """The shortest of *calls* back-to-back calls of *target*, each timed on
    its own with perf_counter: a figure taken by hand to check a looped
    benchmark against."""
    best = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        target()
        best = min(best, time.perf_counter() - t0)
    return best


Counts = Callable[[], "tuple[int, int] | None"]


class Meter:
    """Wraps a target so each call records its CPU time (process_time, this
    process only: a server's CPU is not in it) and the objects loaded and
    stored, read from *counts* (a function that returns and clears them,
    like Store.transfer_counts)."""

    def __init__(self, counts: Counts) -> None:
        self.counts = counts
        self.cpu_s: list[float] = []
        self.loads: list[int] = []
        self.stores: list[int] = []

    def wrap(self, target: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def timed(arg: Any) -> Any:
            cpu0 = time.process_time()
            result = target(arg)
            self.cpu_s.append(time.process_time() - cpu0)
            counts = self.counts()
            if counts is not None:
                self.loads.append(counts[0])
                self.stores.append(counts[1])
            return result

        return timed

    def extra_info(self) -> dict[str, Any]:
        """Medians over the rounds, plus every round's CPU time."""
        info: dict[str, Any] = {
            "cpu_s": statistics.median(self.cpu_s),
            "cpu_s_rounds": self.cpu_s,
            "loads": statistics.median_low(self.loads) if self.loads else None,
            "stores": statistics.median_low(self.stores) if self.stores else None,
        }
        return info


def measure(
    benchmark: Any,
    config: pytest.Config,
    store: Store,
    target: Callable[[Any], Any],
    setup: Callable[[], Any],
    collect: bool = True,
    counts: Counts | None = None,
    **extra: Any,
) -> Meter:
    """Time *target(setup())* in pedantic mode, one fresh setup per round,
    and put cpu_s, loads, stores and *extra* into the benchmark's
    extra_info.  *collect*: run the garbage collector after each setup, as
    the runner does before each phase (worth it for targets of milliseconds
    and more; it would be most of the setup time of a microsecond target).
    *counts*: where loads and stores come from (default: the store's own
    connection).  Returns the meter (its lists hold every timed round)."""
    counts = counts or store.transfer_counts
    meter = Meter(counts)

    def pedantic_setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        arg = setup()
        if collect:
            gc.collect()
        counts()
        return (arg,), {}

    rounds = 1
    if benchmark.enabled:
        t0 = time.perf_counter()
        (arg,), _ = pedantic_setup()
        t1 = time.perf_counter()
        target(arg)
        t2 = time.perf_counter()
        rounds = plan_rounds(config, t1 - t0, t2 - t1)

    benchmark.pedantic(meter.wrap(target), setup=pedantic_setup, rounds=rounds)
    benchmark.extra_info.update(meter.extra_info())
    benchmark.extra_info.update(extra)
    return meter
