"""choose on the virtual fab's mix: per candidate, scale's points (one
client's latency per operation, throughput and p99 at each client count,
the data checked against every attempt: scenarios.scale.runner and the
checker, as verify uses them) and the data set's size on disk."""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import storages
from scenarios.checker.known_bugs import known_bug
from scenarios.choose.config import ChooseConfig, one_process
from scenarios.choose.databases import fresh
from scenarios.choose.model import Candidate
from scenarios.data import dataset
from scenarios.interrupts import remove_tree
from scenarios.load.mix import LoadConfig
from scenarios.load.target import open_store
from scenarios.progress import Progress
from scenarios.results.formatter import plural
from scenarios.scale import runner as scale_runner
from scenarios.scale.config import ScaleConfig
from scenarios.scale.model import ScalePoint
from scenarios.verify.runner import VerifyConfig
from storages import StorageError, StorageOptions
from storages.errors import one_line
from vfab.generate import DataSpec


def clients_of(config: ChooseConfig, factory: Any) -> tuple[int, ...]:
    """The client counts a candidate is measured at: one for a storage
    only one process opens."""
    return (1,) if one_process(factory) else config.clients


def scale_config(
    config: ChooseConfig, name: str, clients: tuple[int, ...]
) -> ScaleConfig:
    """The virtual fab's mix (scale's default weights), checked."""
    return ScaleConfig(
        storages=(name,),
        clients=clients,
        scale=config.scale,
        seed=config.seed,
        duration_s=config.duration_s,
        warmup_s=config.warmup_s,
        windows=config.windows,
        load=LoadConfig.from_values("127.0.0.1:8100"),
        check=True,
    )


def contention(config: ChooseConfig, name: str, clients: int) -> ScaleConfig:
    """verify's contended load (write-heavy, steep skew, the pairs that
    show a write skew): whether the data stay right with concurrent
    writers, which the mix alone rarely shows."""
    verify = VerifyConfig((name,), (clients,), budget_s=config.duration_s)
    return dataclasses.replace(verify.scale_config(name), seed=config.seed)


def measure(
    config: ChooseConfig, name: str, options: StorageOptions, say: Progress
) -> Candidate:
    """One candidate on the mix: its points, then its size on disk."""
    factory = storages.get(name, options)
    clients = clients_of(config, factory)
    scaled = scale_config(config, name, clients)
    contended: list[ScalePoint] = []
    if factory.shared:
        points = scale_runner.run(scaled, options, None, say, weight=lambda n: 1.0)
        say(f"{name}: verify's contended load at {plural(max(clients), 'client')}")
        contended = scale_runner.run(
            contention(config, name, max(clients)), options, None, say,
            weight=lambda n: 1.0,
        )  # fmt: skip
    else:
        points = [_one_process_point(scaled, name, factory, say)]
    say.step(f"{name}: size on disk", 1.0)
    size = populated_size(factory, config)
    say.advance()
    return Candidate(
        storage=name,
        one_process=one_process(factory),
        points=tuple(points),
        contended=tuple(contended),
        size_bytes=size,
        known_bug=known_bug(name),
    )


def _one_process_point(
    scaled: ScaleConfig, name: str, factory: Any, say: Progress
) -> ScalePoint:
    """The one client of a storage only one process opens: scale's point
    on runzeo's section of it, opened by that one client process."""
    where = f"{name}: 1 client (one process only)"
    say.step(where, 1.0)
    say.line(where, counted=True)
    with factory.running(), fresh(factory) as (shared, _):
        say.status("populating")
        store = open_store(shared.client)
        try:
            dataset.populate(store, DataSpec.for_scale(scaled.scale), scaled.seed)
        finally:
            store.close()
        point = scale_runner.run_point(scaled, name, 1, shared, say)
    say.advance()
    if point.interrupted:
        raise scale_runner.ScaleInterrupted([point])
    return point


def populated_size(factory: Any, config: ChooseConfig) -> int | None:
    """Bytes on disk of the virtual fab's data set in a fresh database of
    *factory* (its Store's own measure)."""
    scratch = Path(tempfile.mkdtemp(prefix="vfab-choose-size-"))
    try:
        with factory.running():
            store = factory.open(scratch)
            try:
                dataset.populate(store, DataSpec.for_scale(config.scale), config.seed)
                return store.size_bytes()
            finally:
                store.close()
    except StorageError:
        return None
    finally:
        remove_tree(scratch)


def own_tasks(config: ChooseConfig, options: StorageOptions) -> int:
    """The tasks choose itself runs at its busiest: the most clients a
    candidate is measured at (processes on the mix, reader threads on
    --from) and a server.  The 1-minute load at the end still counts
    them: not another's work (scenarios.results.environment)."""
    return 1 + max(
        max(clients_of(config, storages.get(name, options))) for name in config.storages
    )


def run(
    config: ChooseConfig, options: StorageOptions, say: Progress
) -> list[Candidate]:
    """Every candidate of *config*, in order."""
    units = 0
    for name in config.storages:
        factory = storages.get(name, options)
        units += len(clients_of(config, factory)) + 1 + int(factory.shared)
    say.plan(units, unit_s=config.warmup_s + config.duration_s + 5.0)
    out = []
    for name in config.storages:
        say(f"{name}: the mix at {plural(len(config.clients), 'client count')}")
        work = functools.partial(measure, config, name, options, say)
        out.append(guarded(name, options, say, work))
    return out


def guarded(
    name: str, options: StorageOptions, say: Progress, work: Callable[[], Candidate]
) -> Candidate:
    """*work*'s candidate, or, when the storage fails in a way a user can
    fix (a server that did not start), one that says so: the others are
    still measured."""
    try:
        return work()
    except StorageError as e:
        why = f"could not be measured: {one_line(e)}"
        say(f"  {name}: {why}")
        factory = storages.get(name, options)
        return Candidate(name, one_process(factory), error=why)
