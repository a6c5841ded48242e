"""The runner: a fresh database per trial, every phase timed, raw samples out.
Trials run in rounds of one trial per storage: warmups, timed rounds of
every row, then under a budget top-up rounds of the 2000 rows; only wall
and CPU time are taken inside the timed region (what else a phase and a
trial record: docs/internals.md).
"""

from __future__ import annotations

import contextlib
import cProfile
import gc
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import storages
from scenarios.bench import rss
from scenarios.bench.config import RunConfig
from scenarios.bench.phases import (
    FULL_ANSWERS,
    PHASES,
    PHASES_2000,
    Phase,
    TrialState,
    digest,
)
from scenarios.errors import RunFailure, one_line
from scenarios.interrupts import scratch_directory
from scenarios.progress import Progress, progress_of
from scenarios.results import environment as machine
from scenarios.results.formatter import plural
from scenarios.results.metadata import collect as collect_metadata
from scenarios.results.model import PhaseResult, RunResult, Sample, TrialSummary
from scenarios.results.significance import SHORT_S
from storages import Store
from vfab.generate import load_catalogue

Say = Callable[[str], None]

#: {phase name -> profile}, for one storage.
Profiles = dict[str, cProfile.Profile]

#: What measures a phase in place of the clock (run_trial's *measure*).
Measure = Callable[[Phase, TrialState, Store], Any]


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


def _time_phase(
    phase: Phase,
    state: TrialState,
    store: Store,
    profile: cProfile.Profile | None,
    rss_per_phase: bool,
    gc_clock: GCClock,
) -> Sample:
    # A full collection first, then the untimed prepare: the collection's
    # after-effects on the CPU caches (a walk over every object) are paid by
    # the prepare, not by the timed pass (a hot read right after a collect
    # costs several times a back-to-back one).
    gc.collect()
    if phase.prepare is not None:
        phase.prepare(state)
    store.transfer_counts()  # start each phase from zero
    size0 = store.size_bytes()
    hits0 = store.cache_hits()
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
    hits1 = store.cache_hits()
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
    on_phase: Callable[[str], None] | None = None,
    measure: Measure | None = None,
) -> Trial:
    """One trial on a fresh database.  With *profiles*, each phase runs under
    the profile of its name (created on first use); *on_phase* hears each
    phase's name before it starts (for progress).  *measure*, when given,
    measures each phase instead of the clock (scenarios.counts counts its
    work): it gets the phase, the state and the store, runs the phase's
    prepare and the phase, and returns what the trial keeps for it."""
    catalogue = load_catalogue()
    # Counting never reads RSS (its reads move the counts: see docs/counts.md).
    rss_per_phase = rss.per_phase() if measure is None else False
    with (
        scratch_directory("vfab-", directory) as tmp,
        GCClock() as gc_clock,
    ):
        with factory.open(tmp) as store:
            store.reset()
            state = TrialState(
                store, config.spec, config.seed, catalogue, batch=config.batch_size
            )
            samples: dict[str, Sample] = {}
            for phase in phases:
                if phase.applies is not None and not phase.applies(store):
                    continue
                if on_phase is not None:
                    on_phase(phase.name)
                profile = None
                if profiles is not None:
                    profile = profiles.setdefault(phase.name, cProfile.Profile())
                try:
                    if measure is not None:
                        samples[phase.name] = measure(phase, state, store)
                    else:
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
                    (
                        peak
                        for s in samples.values()
                        if (peak := getattr(s, "rss_peak_bytes", None))
                    ),
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
    names: Sequence[str], options: storages.StorageOptions, say: Say
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


class Timed(NamedTuple):
    """What the runner keeps of a timed trial: its samples, and its summary
    when it ran every row of the run (a top-up trial runs the 2000 rows
    only, and its database's end state is not the run's)."""

    samples: dict[str, Sample]
    summary: TrialSummary | None


#: A storage's top-up rounds (see _rounds) stop once the minimum of each of
#: its 2000 rows is *settled*: SETTLE_COUNT trials within SETTLE_TOLERANCE
#: of it, after at least SETTLE_MIN_TRIALS trials.  Noise here only slows a
#: trial down, and in spells (the machine runs 1.5-1.8x slower for seconds
#: at a time): a minimum that two other trials came within 2% of is one the
#: machine's fast spells reproduce, not one lucky trial.
SETTLE_COUNT = 3
SETTLE_TOLERANCE = 0.02
SETTLE_MIN_TRIALS = 10

#: Speed probes after each round (about 1 ms each; see
#: scenarios.results.environment).
PROBES = 5


def settled(samples: Sequence[Sample]) -> bool:
    """Whether the minimum wall time of *samples* is settled (see
    SETTLE_COUNT); a minimum under SHORT_S (marked ~, not compared) is."""
    if len(samples) < SETTLE_MIN_TRIALS:
        return False
    walls = [s.wall_s for s in samples]
    low = min(walls)
    if low < SHORT_S:
        return True
    return sum(w <= low * (1 + SETTLE_TOLERANCE) for w in walls) >= SETTLE_COUNT


def run(config: RunConfig, progress: Progress | Say | None = None) -> RunResult:
    """Every storage of *config*: warmup rounds, then timed rounds of one
    trial per storage, interleaved (see _rounds)."""
    shown = progress_of(progress, "run", "trials")
    factories = list(available(config.storages, config.storage_options, shown.line))
    phases = config.phases
    trials: dict[str, list[Timed]] = {name: [] for name, _ in factories}
    profiles: dict[str, Profiles] | None = None
    if config.profile_dir is not None:
        profiles = {name: {} for name, _ in factories}
    environment = machine.snapshot()
    probes: list[float] = []
    try:
        # Every trial's directory lives in one of the run's: a signal that
        # lands between a trial directory's creation and its with-block
        # (trials are short) cannot leave it behind.  What a storage's
        # trials share (a server started once per run) lives around all of
        # them, warmups included.
        with (
            scratch_directory("vfab-run-") as scratch,
            contextlib.ExitStack() as running,
        ):
            for _, factory in factories:
                running.enter_context(factory.running())
            _rounds(config, factories, trials, profiles, shown, probes, scratch)
    finally:
        shown.close()
        gc.unfreeze()
    results: list[PhaseResult] = []
    summaries: list[TrialSummary] = []
    for name, _ in factories:
        done = trials[name]
        for phase in phases:
            samples = tuple(
                t.samples[phase.name] for t in done if phase.name in t.samples
            )
            if samples:
                results.append(PhaseResult(name, config.size, phase.name, samples))
        summaries += [t.summary for t in done if t.summary is not None]
        if profiles is not None and config.profile_dir is not None:
            for phase_name, profile in profiles[name].items():
                path = profile_path(config.profile_dir, name, config.size, phase_name)
                profile.dump_stats(path)
    metadata = collect_metadata(config)
    metadata["rss"] = "per-phase" if rss.per_phase() else "since-start"
    metadata["environment"] = machine.finish(environment)
    metadata["environment"]["speed_probes_s"] = probes
    # A busy machine is said once, beside the figures it concerns (the
    # view's machine paragraph), not on stderr as well.
    return RunResult(metadata=metadata, results=tuple(results), trials=tuple(summaries))


def _rounds(
    config: RunConfig,
    factories: list[tuple[str, storages.StorageFactory]],
    trials: dict[str, list[Timed]],
    profiles: dict[str, Profiles] | None,
    shown: Progress,
    probes: list[float],
    scratch: Path | None = None,
) -> None:
    """The warmup rounds, then the timed ones, into *trials*; PROBES speed
    probes (environment.probe) after the warmups and after each round,
    into *probes*; each trial's directory in *scratch*.

    A storage's trials in one block can all fall in one of the machine's
    slow spells; rounds spread every storage over the same spells, and the
    order within a round turns each round so no storage always follows the
    same one.

    The first config.repeat rounds time every row of the run.  With a
    budget, *top-up* rounds follow while the budget lasts (up to
    config.max_trials): they time the eight 2000 rows only (the first rows
    of every trial, on a fresh database as always), of the storages whose
    2000 minimums have not settled yet (see settled), so the budget goes
    where the noise is and a run on a quiet machine ends early.

    After the warmups, Python's collector stops walking the objects alive
    then (gc.freeze: imported modules, servers' clients): a storage's
    figures then do not depend on what else the run imported, and the full
    collection before each phase costs microseconds, not milliseconds."""
    phases = config.phases
    n = len(factories)
    # The budget includes the full rounds: until they start, count it whole
    # on top (an ETA too high), then as a floor.  The count's total is known
    # now: with a budget, the most trials the top-up rounds may add.
    needed = n * (config.warmups + config.repeat)
    most = n * (config.warmups + config.max_trials) if config.budget_s > 0 else needed
    shown.plan(
        most, extra_s=config.budget_s, required=needed if most > needed else None
    )
    if config.warmups:
        # The first round line comes after the warmups: say what comes first.
        shown.line(
            f"warming up: {plural(config.warmups, 'untimed round')} of "
            f"{', '.join(name for name, _ in factories)} at {config.size}, "
            "then the timed rounds"
        )
    for w in range(config.warmups):
        for name, factory in _turned(factories, w):
            shown.step(f"warmup {w + 1} {name}")
            run_trial(factory, config, phases, scratch, on_phase=shown.status)
            shown.advance()
    gc.collect()
    gc.freeze()
    probes += (machine.probe() for _ in range(PROBES))
    if config.budget_s > 0:
        shown.not_before(config.budget_s)
    started = time.perf_counter()
    rounds = 0
    #: The wall time of each storage's last trial, to plan the next round.
    last_s: dict[str, float] = {}
    while True:
        full = rounds < config.repeat
        todo = [
            (name, factory)
            for name, factory in _turned(factories, rounds)
            if full
            or (len(trials[name]) < config.max_trials and not _settled(trials[name]))
        ]
        if not full:
            left = config.budget_s - (time.perf_counter() - started)
            if not todo or sum(last_s[name] for name, _ in todo) > left:
                return
        round_started = time.perf_counter()
        for name, factory in todo:
            shown.step(f"trial {len(trials[name]) + 1} {name}")
            profile = profiles[name] if profiles is not None else None
            trial_started = time.perf_counter()
            trial = run_trial(
                factory,
                config,
                phases if full else PHASES_2000,
                scratch,
                profiles=profile,
                on_phase=shown.status,
            )
            summary = trial.summary if full or phases == PHASES_2000 else None
            trials[name].append(Timed(trial.samples, summary))
            del trial
            shown.advance()
            last_s[name] = time.perf_counter() - trial_started
        rounds += 1
        probes += (machine.probe() for _ in range(PROBES))
        now = time.perf_counter()
        phases_s = ", ".join(
            f"{name} {sum(s.wall_s for s in trials[name][-1].samples.values()):.2f} s"
            for name, _ in todo
        )
        kind = "" if full else " (2000 rows)"
        shown.line(
            f"round {rounds}{kind} of {config.size}: {phases_s} in the phases "
            f"(round {now - round_started:.1f} s, elapsed {shown.elapsed():.1f} s)",
            counted=True,
        )
        if config.budget_s <= 0 and rounds >= config.repeat:
            return


def _settled(done: list[Timed]) -> bool:
    """Whether every 2000 row of a storage's trials is settled."""
    return all(
        settled([t.samples[p.name] for t in done if p.name in t.samples])
        for p in PHASES_2000
        if any(p.name in t.samples for t in done)
    )


def _turned(
    factories: list[tuple[str, storages.StorageFactory]], k: int
) -> list[tuple[str, storages.StorageFactory]]:
    """*factories* rotated by *k*: round k starts with its k-th storage."""
    if not factories:
        return []
    k %= len(factories)
    return factories[k:] + factories[:k]
