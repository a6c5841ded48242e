"""The runner: fresh database per trial, every phase timed, raw samples out.

For each storage, `warmups` untimed trials and then `repeat` timed trials;
each trial opens a fresh database in a new temporary directory through the
registry, runs the phases in order in this process, and closes the database
(stopping any server it started) whatever happens.

Per phase, after its untimed prepare, it records wall time (perf_counter),
CPU time of this process (process_time), the time Python's cyclic garbage
collector took and, where they exist, the objects the connection loaded and
stored, the storage size before and after, the peak RSS of this process
during the phase (scenarios.bench.rss), the ZEO client cache hits and the time
spent in batch commits.  Only wall and CPU time are
taken inside the timed region; everything else is read around it.  Per trial
it records the model objects built, the storage size at the end and the
backend counters (a ZEO server's status).

With a profile directory, each timed phase also runs under cProfile; one
profile accumulates every timed trial of a phase on a storage and is written
as DIR/<storage>-<size>-<phase>.prof (read it with pstats).  Profiling slows
what it measures: the run's metadata records that it was on.
"""

from __future__ import annotations

import cProfile
import gc
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import storages
from scenarios.bench import rss
from scenarios.bench.config import RunConfig
from scenarios.bench.phases import FULL_ANSWERS, PHASES, Phase, TrialState, digest
from scenarios.errors import RunFailure, one_line
from scenarios.results.metadata import collect as collect_metadata
from scenarios.results.model import PhaseResult, RunResult, Sample, TrialSummary
from storages import Store
from vfab.generate import load_catalogue

Progress = Callable[[str], None]

#: {phase name -> profile}, for one storage.
Profiles = dict[str, cProfile.Profile]


class Trial(NamedTuple):
    """What one trial gives: a Sample per phase that applied to the store (by
    phase name, in phase order), the state the phases left (answers of the
    queries), and the trial's summary."""

    samples: dict[str, Sample]
    state: TrialState
    summary: TrialSummary


def profile_path(directory: Path, storage: str, size: str, phase: str) -> Path:
    """Where the profile of *phase* on *storage* goes: a name safe on any
    filesystem (letters, digits, '.', '_', '+' and '-' only)."""

    def safe(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._+]+", "-", text).strip("-").lower()

    return Path(directory) / f"{safe(storage)}-{safe(size)}-{safe(phase)}.prof"


class GCClock:
    """Wall seconds spent in Python's cyclic garbage collector, through
    gc.callbacks; installed only while a trial runs."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start

    def __enter__(self) -> GCClock:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def _cache_hits(store: Store) -> int | None:
    hits = store.jar_stats().get("client_cache", {}).get("hits")
    return int(hits) if hits is not None else None


def _time_phase(
    phase: Phase,
    state: TrialState,
    store: Store,
    profile: cProfile.Profile | None,
    rss_per_phase: bool,
    gc_clock: GCClock,
) -> Sample:
    if phase.prepare is not None:
        phase.prepare(state)
    gc.collect()
    store.transfer_counts()  # start each phase from zero
    size0 = store.size_bytes()
    hits0 = _cache_hits(store)
    batch0 = state.batcher.commit_s
    if rss_per_phase:
        rss.reset_peak()
    gc0 = gc_clock.total
    if profile is not None:
        profile.enable()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    phase.run(state)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    if profile is not None:
        profile.disable()
    gc_s = gc_clock.total - gc0
    peak = rss.peak_bytes()
    counts = store.transfer_counts()
    loads, stores_ = counts if counts is not None else (None, None)
    hits1 = _cache_hits(store)
    batch_s = state.batcher.commit_s - batch0
    return Sample(
        wall_s=wall1 - wall0,
        cpu_s=cpu1 - cpu0,
        loads=loads,
        stores=stores_,
        size_before_bytes=size0,
        size_after_bytes=store.size_bytes(),
        rss_peak_bytes=peak,
        cache_hits=hits1 - hits0 if hits0 is not None and hits1 is not None else None,
        batch_commit_s=batch_s if state.batch else None,
        gc_s=gc_s,
    )


def phase_failure(
    storage: str, phase: str, error: Exception, store: Store
) -> RunFailure:
    """One line for a phase that raised: the storage, the phase, the error
    and what the store knows of why (a server it started exited)."""
    note = store.diagnose()
    return RunFailure(
        f"{storage}: phase {phase!r} failed: {one_line(error)}"
        + (f"; {note}" if note else "")
    )


def _settle_answers(state: TrialState) -> None:
    """Keep a digest of every answer, and the full answer of the 2000 rows
    only (outside the timed region: digesting xlarge answers takes time)."""
    for name in list(state.answers):
        if name not in state.digests:
            state.digests[name] = digest(state.answers[name])
        if name not in FULL_ANSWERS:
            del state.answers[name]


def run_trial(
    factory: storages.StorageFactory,
    config: RunConfig,
    phases: Sequence[Phase] = PHASES,
    directory: Path | None = None,
    profiles: Profiles | None = None,
) -> Trial:
    """One trial on a fresh database.  With *profiles*, each phase runs under
    the profile of its name (created on first use)."""
    catalogue = load_catalogue()
    rss_per_phase = rss.per_phase()
    with (
        tempfile.TemporaryDirectory(prefix="vfab-", dir=directory) as tmp,
        GCClock() as gc_clock,
    ):
        with factory.open(Path(tmp)) as store:
            store.reset()
            state = TrialState(
                store, config.spec, config.seed, catalogue, batch=config.batch_size
            )
            samples: dict[str, Sample] = {}
            for phase in phases:
                if phase.applies is not None and not phase.applies(store):
                    continue
                profile = None
                if profiles is not None:
                    profile = profiles.setdefault(phase.name, cProfile.Profile())
                try:
                    samples[phase.name] = _time_phase(
                        phase, state, store, profile, rss_per_phase, gc_clock
                    )
                except Exception as e:
                    raise phase_failure(factory.name, phase.name, e, store) from e
                _settle_answers(state)
            store.abort()
            summary = TrialSummary(
                storage=factory.name,
                size=config.size,
                objects=state.batcher.objects,
                batch=state.batch,
                batch_commits=state.batcher.commits,
                size_bytes=store.size_bytes(),
                rss_peak_bytes=max(
                    (s.rss_peak_bytes for s in samples.values() if s.rss_peak_bytes),
                    default=None,
                ),
                stats=_json_safe(store.jar_stats()),
            )
    return Trial(samples, state, summary)


def _json_safe(value: Any) -> Any:
    """Backend counters as JSON values (a ZEO server's status holds bytes and
    a few other types here and there)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def available(
    names: Sequence[str], options: storages.StorageOptions, say: Progress
) -> Iterator[tuple[str, storages.StorageFactory]]:
    """(name, factory) of each storage of *names* that can run here; the
    others are skipped, saying why."""
    for name in names:
        factory = storages.get(name, options)
        reason = factory.unavailable()
        if reason is not None:
            say(f"{name}: skipped ({reason})")
            continue
        yield name, factory


def run(config: RunConfig, progress: Progress | None = None) -> RunResult:
    """Every storage of *config*, warmups then timed trials."""
    say = progress or (lambda line: None)
    results: list[PhaseResult] = []
    summaries: list[TrialSummary] = []
    for name, factory in available(config.storages, config.storage_options, say):
        t0 = time.perf_counter()
        profiles: Profiles | None = {} if config.profile_dir is not None else None
        # What the storage's trials share (a server started once per run)
        # lives around all of them, warmups included.
        with factory.running():
            for _ in range(config.warmups):
                run_trial(factory, config)
            trials = [
                run_trial(factory, config, profiles=profiles)
                for _ in range(config.repeat)
            ]
        for phase in PHASES:
            samples = tuple(
                t.samples[phase.name] for t in trials if phase.name in t.samples
            )
            if samples:
                results.append(PhaseResult(name, config.size, phase.name, samples))
        summaries += [t.summary for t in trials]
        if profiles and config.profile_dir is not None:
            for phase_name, profile in profiles.items():
                path = profile_path(config.profile_dir, name, config.size, phase_name)
                profile.dump_stats(path)
        total = sum(s.wall_s for t in trials for s in t.samples.values())
        peak = max((t.summary.rss_peak_bytes or 0) for t in trials)
        say(
            f"{name}: {config.repeat} trial(s) of {config.size} "
            f"(+{config.warmups} warmup), phases {total:.2f} s, "
            f"peak RSS {peak / 2**20:.0f} MB, "
            f"elapsed {time.perf_counter() - t0:.1f} s"
        )
    metadata = collect_metadata(config)
    metadata["rss"] = "per-phase" if rss.per_phase() else "since-start"
    return RunResult(metadata=metadata, results=tuple(results), trials=tuple(summaries))
