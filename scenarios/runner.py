"""The runner: fresh database per trial, every phase timed, raw samples out.

For each storage, `warmups` untimed trials and then `repeat` timed trials;
each trial opens a fresh database in a new temporary directory through the
registry, runs the phases in order in this process, and closes the database
(stopping any server it started) whatever happens.  Per phase it records
wall time (perf_counter), CPU time of this process (process_time) and, on
ZODB storages, the objects the connection loaded and stored.
"""

from __future__ import annotations

import gc
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import storages
from scenarios.config import RunConfig
from scenarios.metadata import collect as collect_metadata
from scenarios.phases import PHASES, Phase, TrialState
from scenarios.results import PhaseResult, RunResult, Sample
from vfab.generate import load_catalogue

Progress = Callable[[str], None]


def run_trial(
    factory: storages.StorageFactory,
    config: RunConfig,
    phases: Sequence[Phase] = PHASES,
    directory: Path | None = None,
) -> tuple[list[Sample], TrialState]:
    """One trial on a fresh database: a Sample per phase, and the state the
    phases left (answers of the queries)."""
    catalogue = load_catalogue()
    with tempfile.TemporaryDirectory(prefix="vfab-", dir=directory) as tmp:
        with factory.open(Path(tmp)) as store:
            store.reset()
            state = TrialState(store, config.spec, config.seed, catalogue)
            samples = []
            for phase in phases:
                gc.collect()
                store.transfer_counts()  # start each phase from zero
                wall0, cpu0 = time.perf_counter(), time.process_time()
                phase.run(state)
                cpu1, wall1 = time.process_time(), time.perf_counter()
                counts = store.transfer_counts()
                loads, stores_ = counts if counts is not None else (None, None)
                samples.append(Sample(wall1 - wall0, cpu1 - cpu0, loads, stores_))
            store.abort()
    return samples, state


def run(config: RunConfig, progress: Progress | None = None) -> RunResult:
    """Every storage of *config*, warmups then timed trials."""
    say = progress or (lambda line: None)
    results: list[PhaseResult] = []
    for name in config.storages:
        factory = storages.get(name, config.options)
        reason = factory.unavailable()
        if reason is not None:
            say(f"{name}: skipped ({reason})")
            continue
        t0 = time.perf_counter()
        for _ in range(config.warmups):
            run_trial(factory, config)
        trials = [run_trial(factory, config)[0] for _ in range(config.repeat)]
        for i, phase in enumerate(PHASES):
            results.append(
                PhaseResult(
                    storage=name,
                    size=config.size,
                    phase=phase.name,
                    samples=tuple(t[i] for t in trials),
                )
            )
        total = sum(s.wall_s for t in trials for s in t)
        say(
            f"{name}: {config.repeat} trial(s) of {config.size} "
            f"(+{config.warmups} warmup), phases {total:.2f} s, "
            f"elapsed {time.perf_counter() - t0:.1f} s"
        )
    return RunResult(metadata=collect_metadata(config), results=tuple(results))
