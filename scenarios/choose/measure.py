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
from scenarios.progress import Machine, Progress, duration, machine_now
from scenarios.results.formatter import plural
from scenarios.scale import runner as scale_runner
from scenarios.scale.config import ScaleConfig
from scenarios.scale.model import ScalePoint
from scenarios.verify.runner import POPULATE_S, SERVER_S, WARMUP_S, VerifyConfig
from storages import StorageError, StorageOptions
from storages.errors import one_line
from vfab.generate import DataSpec

#: Seconds the size on disk takes: a fresh database, populated.
SIZE_S = SERVER_S + POPULATE_S


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


def point_s(config: ChooseConfig, clients: int, factor: float = 1.0) -> float:
    """Seconds a point of the mix is planned to take on a machine *factor*
    times slower than an idle one: verify's estimate of a point (a server,
    populating, client start and check scaled; the window as it is) with
    choose's warmup and window."""
    verify = VerifyConfig(("-",), (clients,), budget_s=config.duration_s)
    return verify.point_s(clients, factor) - WARMUP_S + config.warmup_s


def steps(
    config: ChooseConfig, options: StorageOptions, factor: float = 1.0
) -> list[tuple[str, float]]:
    """Every step of the run on the mix, in order: (label, seconds planned)."""
    out = []
    for name in config.storages:
        factory = storages.get(name, options)
        clients = clients_of(config, factory)
        where = f"{name}: {{}}"
        out += [(where.format(plural(n, "client")), point_s(config, n, factor))
                for n in clients]  # fmt: skip
        if factory.shared:
            top = max(clients)
            verify = VerifyConfig((name,), (top,), budget_s=config.duration_s)
            out.append((where.format("contended"), verify.point_s(top, factor)))
        out.append((where.format("size on disk"), SIZE_S * factor))
    return out


def measure(
    config: ChooseConfig,
    name: str,
    options: StorageOptions,
    say: Progress,
    factor: float = 1.0,
) -> Candidate:
    """One candidate on the mix: its points, then its size on disk (each a
    step weighted by its seconds planned, *factor*: as point_s)."""
    factory = storages.get(name, options)
    clients = clients_of(config, factory)
    scaled = scale_config(config, name, clients)
    contended: list[ScalePoint] = []
    if factory.shared:
        each = functools.partial(point_s, config, factor=factor)
        points = scale_runner.run(scaled, options, None, say, weight=each)
        top = max(clients)
        say(f"{name}: verify's contended load at {plural(top, 'client')}")
        verify = VerifyConfig((name,), (top,), budget_s=config.duration_s)
        contended = scale_runner.run(
            contention(config, name, top), options, None, say,
            weight=functools.partial(verify.point_s, factor=factor),
        )  # fmt: skip
    else:
        one = point_s(config, 1, factor)
        points = [_one_process_point(scaled, name, factory, say, one)]
    say.step(f"{name}: size on disk", SIZE_S * factor)
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
    scaled: ScaleConfig, name: str, factory: Any, say: Progress, weight: float
) -> ScalePoint:
    """The one client of a storage only one process opens: scale's point
    on runzeo's section of it, opened by that one client process."""
    where = f"{name}: 1 client (one process only)"
    say.step(where, weight)
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
    config: ChooseConfig,
    options: StorageOptions,
    say: Progress,
    machine: Machine | None = None,
) -> list[Candidate]:
    """Every candidate of *config*, in order, planned on this machine now
    (*machine*: its speed probe and load; measured when None)."""
    machine = machine_now() if machine is None else machine
    planned = steps(config, options, machine.factor)
    total = sum(s for _, s in planned)
    say.plan(total, unit_s=1.0)
    counts = ",".join(map(str, config.clients))
    say(
        f"choose: about {duration(total)} in all: "
        f"{plural(len(config.storages), 'storage')} at {counts} clients, "
        f"windows of {config.warmup_s + config.duration_s:g} s"
    )
    if abs(machine.factor - 1.0) > 0.2:
        say(f"  set-up and checks planned at {machine.words()}")
    out = []
    for name in config.storages:
        say(f"{name}: the mix at {plural(len(config.clients), 'client count')}")
        work = functools.partial(measure, config, name, options, say, machine.factor)
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
