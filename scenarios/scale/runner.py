"""The scale run: per storage and client count, a fresh shared database, N
client processes (one ZODB.DB each) for a warmup and a measured window, CPU,
an optional fault and the consistency check; Ctrl-C reaches this process
only, and the points measured so far are kept (docs/internals.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import storages
from scenarios.checker import consistency
from scenarios.checker.check import Check
from scenarios.clients import concurrency
from scenarios.clients.cpu import CPUMeter
from scenarios.clients.fleet import (
    Fleet,
    LocalFleet,
    client_names,
    process_plans,
)
from scenarios.clients.loop import ClientPlan
from scenarios.data import dataset
from scenarios.interrupts import remove_tree, stopped
from scenarios.load.history import History, Part, Parts
from scenarios.load.mix import OPERATIONS
from scenarios.load.session import preflight
from scenarios.load.target import open_store
from scenarios.progress import Progress, progress_of
from scenarios.results.formatter import plural
from scenarios.scale import faults
from scenarios.scale.config import ScaleConfig
from scenarios.scale.model import ScalePoint
from scenarios.scale.window import drive
from storages import Shared, StorageError, StorageOptions
from vfab.generate import DataSpec

Say = Callable[[str], None]
log = logging.getLogger("vfab")

#: Seconds a point takes beyond its window (populating, starting the
#: clients, the check), assumed until the first point has ended.
POINT_OVERHEAD_S = 5.0

#: The pseudo-storage name of a run against --target.
TARGET = "target"


class ScaleInterrupted(Exception):
    """Ctrl-C: the points measured so far (the last one cut short, its
    data checked or marked not checked)."""

    def __init__(self, points: list[ScalePoint]) -> None:
        super().__init__("interrupted")
        self.points = points


def run(
    config: ScaleConfig,
    options: StorageOptions,
    target: str | None = None,
    progress: Progress | Say | None = None,
    history: Parts | None = None,
    weight: Callable[[int], float] | None = None,
    fleets: Fleets | None = None,
) -> list[ScalePoint]:
    """Every point, storage by storage, client counts in order, each a step
    of the progress.  *history*: where each checked point's (context,
    events) is appended.  *weight*: a point's weight in the progress by
    its client count, when the caller planned the progress itself
    (verify); else this run plans a point a unit.  *fleets*: where the
    clients run (this machine's processes by default; a Cluster's
    workers).  A point a lost host left incomplete ends the run: the hosts
    that would serve the rest are not the ones asked for."""
    say = progress_of(progress, "scale", "points")
    if weight is None:
        say.plan(
            len(config.storages) * len(config.clients),
            unit_s=config.warmup_s + config.duration_s + POINT_OVERHEAD_S,
        )
    points: list[ScalePoint] = []
    spec = DataSpec.for_scale(config.scale)
    try:
        for name in config.storages:
            if name == TARGET:
                assert target is not None
                held: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
                factory = None
            else:
                factory = storages.get(name, options)
                held = factory.running()
            with held:
                for clients in config.clients:
                    where = f"{name}: {plural(clients, 'client')}"
                    say.step(where, 1.0 if weight is None else weight(clients))
                    say.line(where, counted=True)
                    with _shared(factory, target) as (shared, fresh):
                        if fresh:
                            say.status("populating")
                            _populate(shared.client, spec, config.seed)
                        else:
                            preflight(
                                dataclasses.replace(config.load, target=shared.client)
                            )
                        point = run_point(
                            config, name, clients, shared, say, history, fleets
                        )
                    say.advance()
                    # Interrupted while its clients ran, or while the check
                    # read the data back (which says "not checked:
                    # interrupted" and returns): either way the run stops.
                    if point.interrupted or stopped():
                        # A point whose clients never started work is not one.
                        raise ScaleInterrupted(points + [point] * bool(point.started))
                    points.append(point)
                    if point.incomplete is not None:
                        say(f"  {where}: incomplete; the run stops here")
                        return points
    except KeyboardInterrupt:
        raise ScaleInterrupted(points) from None
    return points


@contextlib.contextmanager
def _shared(factory: Any, target: str | None) -> Iterator[tuple[Shared, bool]]:
    """(the shared database, whether it is fresh and needs populating)."""
    if factory is None:
        assert target is not None
        yield Shared(target), False
        return
    scratch = Path(tempfile.mkdtemp(prefix="vfab-scale-"))
    try:
        data = scratch / "data"
        data.mkdir()
        with factory.share(data) as shared:
            yield shared, True
    finally:
        remove_tree(scratch)


def _populate(client: str, spec: DataSpec, seed: int) -> None:
    store = open_store(client)
    try:
        dataset.populate(store, spec, seed)
    finally:
        store.close()


#: Seconds between "go" and the clients' start on this machine (its
#: processes read the start from shared memory).
GO_DELAY_S = 0.1


def run_point(
    config: ScaleConfig,
    storage: str,
    clients: int,
    shared: Shared,
    say: Progress,
    history: Parts | None = None,
    fleets: Fleets | None = None,
) -> ScalePoint:
    """One point on *shared* (populated): read the baseline, start the
    clients (*fleets*: where; this machine's processes by default),
    measure, apply the fault, stop, check."""
    fleets = fleets or LocalFleets()
    load = dataclasses.replace(config.load, target=shared.client)
    fault = config.fault
    if fault is not None and fault.kind == "kill-server" and not shared.can_kill:
        raise StorageError(
            f"--fault kill-server: {storage} has no server this run started"
        )
    notes: list[str] = []
    baseline = consistency.read_baseline(shared.client) if config.check else None
    scratch = Path(tempfile.mkdtemp(prefix="vfab-scale-history-"))
    plan = ClientPlan(
        config=load,
        warmup_s=config.warmup_s,
        duration_s=config.duration_s,
        rate=config.rate / clients if config.rate else None,
        wait_timeout_s=config.wait_timeout_s,
        timeline=fault is not None,
        run=secrets.token_hex(4),
        windows=config.windows,
    )
    meter = CPUMeter(shared.server_pids)
    try:
        fleet = fleets.fleet(config, plan, clients, scratch)
        with contextlib.closing(fleet):
            run = drive(
                config, fleet, clients, fleets.go_delay_s, shared, meter, say, notes
            )
        results, interrupted, incomplete = run.results, run.interrupted, run.incomplete
        window = (
            max(0.0, run.end_at - run.measure_at) if interrupted else config.duration_s
        )
        merging = time.perf_counter()
        point = _point(config, storage, clients, results, meter, notes, interrupted)
        events = fleet.history()
        merge_s = time.perf_counter() - merging + fleet.absorb_s
        log.debug(
            "%s, %d clients: histograms and %d history records merged in %.3f s",
            storage, clients, len(events), merge_s,
        )  # fmt: skip
        point = dataclasses.replace(point, window_s=window, hosts=fleet.hosts(merge_s))
        if fault is not None:
            timeline = [e for r in _clients(results) for e in r.get("timeline", ())]
            killed = len(fleet.plans[0].clients) if fault.kind == "kill-client" else 0
            point = dataclasses.replace(
                point,
                fault=faults.report(
                    fault, timeline, window, run.applied_at, run.restarted_at
                ),
                killed_clients=killed if run.applied_at else 0,
            )
        notes += fleet.notes()
        lost = fleet.lost()
        if incomplete is None and lost and not interrupted:
            # Lost after the window (stopped, SIGSTOPped, silent): its share
            # of the figures never came, so the point has none.
            incomplete = (
                f"{' and '.join(sorted(set(lost.values())))}: no result "
                "(lost or silent by the window's end)"
            )
            say(f"  {incomplete}")
        say.status("checking the data")
        check = _check(config, shared, baseline, events, lost, notes)
        if history is not None and baseline is not None:
            context = {"storage": storage, "clients": clients, "check": check.to_json()}
            history.append(Part(context, list(events), dict(events.sessions)))
        if incomplete is not None:
            point = _incomplete(point, incomplete)
        return dataclasses.replace(point, check=check, notes=tuple(notes))
    finally:
        remove_tree(scratch)


def _check(
    config: ScaleConfig,
    shared: Shared,
    baseline: Any,
    events: History,
    lost: dict[str, str],
    notes: list[str],
) -> Check:
    """The point's data checked against its history (the server started
    again first if the fault left it down)."""
    if baseline is None:
        return consistency.not_checked("--no-check")
    if not shared.server_running:
        try:
            shared.restart_server()
        except StorageError as e:
            return consistency.not_checked(f"the server did not start again: {e}")
        notes.append("server restarted for the consistency check")
    return consistency.checked(shared.client, baseline, events, config.read_log, lost)


class Fleets(Protocol):
    """Where a run's points place their clients."""

    #: Seconds from "go" to the clients' start.
    go_delay_s: float

    def fleet(
        self, config: ScaleConfig, plan: ClientPlan, clients: int, scratch: Path
    ) -> Fleet: ...


class LocalFleets:
    """Every point's clients as processes of this machine."""

    go_delay_s = GO_DELAY_S

    def fleet(
        self, config: ScaleConfig, plan: ClientPlan, clients: int, scratch: Path
    ) -> Fleet:
        per = concurrency.per_process(
            config.concurrency, config.clients_per_process, clients
        )
        return LocalFleet(
            process_plans(
                plan, client_names(config.seed, range(clients)), config.concurrency,
                per, scratch, config.check,
            )
        )  # fmt: skip


def _incomplete(point: ScalePoint, why: str) -> ScalePoint:
    """A point a lost host cut short: said, and none of its figures kept
    (what the other hosts measured is not the point's throughput)."""
    return dataclasses.replace(
        point,
        incomplete=why,
        hists={},
        windows=(),
        commits=0,
        conflicts=0,
        failed=0,
        errors={},
        backlog=0,
        arrivals=0,
        served=0,
        late_s=0.0,
        client_cpu_s=0.0,
        server_cpu_s=None,
        log_records=0,
    )


def _oks(results: list[Any]) -> list[dict[str, Any]]:
    """The results of the processes whose clients started."""
    return [
        r[1] for r in results if r is not None and r[0] == "ok" and r[1].get("started")
    ]


def _clients(results: list[Any]) -> list[dict[str, Any]]:
    """What each client of those processes measured."""
    return [c for r in _oks(results) for c in r["clients"]]


def _point(
    config: ScaleConfig,
    storage: str,
    clients: int,
    results: list[Any],
    meter: CPUMeter,
    notes: list[str],
    interrupted: bool,
) -> ScalePoint:
    from scenarios.clients import histogram

    processes = _oks(results)
    oks = _clients(results)
    for r in results:
        if r is not None and r[0] == "error":
            notes.append(f"a client process failed: {r[1]}")
    lost = sum(1 for r in results if r is None)
    if lost:
        notes.append(
            f"{plural(lost, 'client process', 'client processes')} sent no "
            "result (killed, lost or stuck)"
        )
    hists = {
        op.name: histogram.encode(
            histogram.merged(r["hists"].get(op.name) for r in oks)
        )
        for op in OPERATIONS
    }
    errors: dict[str, int] = {}
    examples: dict[str, str] = {}
    for r in oks:
        for kind, n in r["errors"].items():
            errors[kind] = errors.get(kind, 0) + n
        for kind, text in r.get("examples", {}).items():
            examples.setdefault(kind, text)
    notes += [f"first {kind}: {text}" for kind, text in sorted(examples.items())]
    windows = histogram.merged_windows([r.get("windows", []) for r in oks])
    return ScalePoint(
        storage=storage,
        clients=clients,
        started=len(oks),
        window_s=config.duration_s,
        rate=config.rate,
        hists=hists,
        commits=sum(r["commits"] for r in oks),
        conflicts=sum(r["conflicts"] for r in oks),
        failed=sum(r["failed"] for r in oks),
        errors=errors,
        backlog=sum(r["backlog"] for r in oks),
        arrivals=sum(r.get("arrivals", 0) for r in oks),
        served=sum(r.get("served", 0) for r in oks),
        late_s=max((r["late_s"] for r in oks), default=0.0),
        client_cpu_s=sum(r["cpu_s"] for r in processes),
        server_cpu_s=meter.seconds,
        log_records=sum(r.get("log_records", 0) for r in processes),
        killed_clients=0,
        check=consistency.not_checked("not run"),
        interrupted=interrupted,
        notes=tuple(notes),
        windows=windows,
    )
