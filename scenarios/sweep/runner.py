"""Running a sweep: one trial is one timed commit of N new ProcessSteps, in
a BTree or a flat list, on a fresh database holding the small data set;
everything else is untimed (the steps of a trial: docs/internals.md).
"""

from __future__ import annotations

import gc
import random
import time
from pathlib import Path

import storages
from scenarios.bench.runner import Say, available
from scenarios.data import dataset
from scenarios.interrupts import scratch_directory
from scenarios.progress import Progress, progress_of
from scenarios.results import significance
from scenarios.results.formatter import plural
from scenarios.results.metadata import collect as collect_metadata
from scenarios.sweep.config import SWEEP_KEY, VARIANTS, SweepConfig
from scenarios.sweep.model import SweepPoint, SweepRun, SweepSample
from vfab.generate import DEFAULT_SEED, DataSpec, draw
from vfab.model import ProcessStep, VirtualFab

#: The data set populated (untimed) before each trial: its capabilities are
#: what the committed steps order.
BASE_SPEC = DataSpec.for_size("small")


def make_steps(fab: VirtualFab, n: int, seed: int) -> list[ProcessStep]:
    """*n* new ProcessSteps ordering random capabilities of *fab*, with
    settings drawn inside each capability's ranges."""
    rng = random.Random(f"{seed}/sweep/{n}")
    capabilities = list(fab.library.capabilities.values())
    steps = []
    for _ in range(n):
        cap = rng.choice(capabilities)
        settings = {name: draw(rng, lo, hi) for name, (lo, hi) in cap.ranges.items()}
        steps.append(ProcessStep(cap, rng.randint(1, cap.lot_size), settings))
    return steps


def run_trial(
    factory: storages.StorageFactory,
    variant: str,
    objects: int,
    seed: int = DEFAULT_SEED,
    directory: Path | None = None,
) -> SweepSample:
    """One timed commit of *objects* steps in *variant*'s container, on a
    fresh database (closed, and any server stopped, whatever happens)."""
    build = VARIANTS[variant].build
    with scratch_directory("vfab-sweep-", directory) as tmp:
        with factory.open(tmp) as store:
            store.reset()
            fab = dataset.populate(store, BASE_SPEC, seed)
            container = build(make_steps(fab, objects, seed))
            store.root()[SWEEP_KEY] = container
            store.transfer_counts()
            size0 = store.size_bytes()
            gc.collect()
            wall0, cpu0 = time.perf_counter(), time.process_time()
            store.commit()
            cpu1, wall1 = time.process_time(), time.perf_counter()
            counts = store.transfer_counts()
            size1 = store.size_bytes()
            store.abort()
    return SweepSample(
        wall_s=wall1 - wall0,
        cpu_s=cpu1 - cpu0,
        stores=None if counts is None else counts[1],
        bytes_written=None if size0 is None or size1 is None else size1 - size0,
    )


def _sweep_storage(
    factory: storages.StorageFactory, config: SweepConfig, shown: Progress
) -> list[SweepPoint]:
    """Every transaction size and variant of *config* on one storage; each
    trial a step of the progress, weighing its objects."""
    name = factory.name
    # The statistic the sweep's tables and charts show.
    stat = significance.statistic(significance.DEFAULT_STATISTIC)
    points: list[SweepPoint] = []
    for variant in config.variants:
        for w in range(config.warmups):
            shown.step(f"{name} {variant} warmup {w + 1}", min(config.objects))
            run_trial(factory, variant, min(config.objects), config.seed)
            shown.advance()
    for n in config.objects:
        for variant in config.variants:
            samples = []
            for t in range(config.repeat):
                shown.step(f"{name} {variant} {n:,} objects, trial {t + 1}", n)
                samples.append(run_trial(factory, variant, n, config.seed))
                shown.advance()
            point = SweepPoint(name, variant, n, tuple(samples))
            points.append(point)
            wall, cpu = (stat(point.per_object_us(c)) for c in (False, True))
            shown.line(
                f"{name} {variant} {n:,} objects: {wall:.1f} µs/object wall, "
                f"{cpu:.1f} CPU ({stat.label} of {plural(config.repeat, 'trial')})",
                counted=True,
            )
    return points


def objects_of(config: SweepConfig) -> int:
    """Objects one storage's trials commit in all (warmups included): the
    progress's units."""
    warm = config.warmups * min(config.objects)
    return len(config.variants) * (warm + config.repeat * sum(config.objects))


def run(config: SweepConfig, progress: Progress | Say | None = None) -> SweepRun:
    """Every storage, transaction size and variant of *config*."""
    from scenarios.results import environment

    shown = progress_of(progress, "sweep", "objects")
    start, probes = environment.snapshot(), environment.probes()
    points: list[SweepPoint] = []
    factories = list(available(config.storages, config.options, shown.line))
    shown.plan(len(factories) * objects_of(config))
    for _name, factory in factories:
        with factory.running():  # around all of this storage's trials
            points += _sweep_storage(factory, config, shown)
    metadata = collect_metadata(config)
    # The machine, as every result keeps it (load, speed, busy warning).
    metadata["environment"] = environment.record(start, probes + environment.probes())
    for warning in metadata["environment"].get("warnings", []):
        shown.line(f"warning: {warning}")
    return SweepRun(metadata=metadata, points=tuple(points))
