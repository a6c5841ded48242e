"""The scale run: for each storage and client count, a fresh shared database
populated with the data set, N client processes running the operation mix
for a warmup and a measured window, the server's and clients' CPU, an
optional fault, and the consistency check of the data against the history
of every attempt (scenarios.load.consistency).

A client is one process: one ZODB.DB (one ZEO connection, one RelStorage
connection set) and one simulated user.  So N clients are N processes
whatever the number of cores: on a 2-core machine the curve past 2 clients
shows what the CPU limit does, which is the point of it.

Ctrl-C (SIGINT to the whole process group) reaches only this process
(scenarios.load.clients): the clients are stopped, each finishing its
operation, the data are checked (or said not to be), and ScaleInterrupted
carries the points measured so far.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import storages
from scenarios.data import dataset
from scenarios.load import consistency
from scenarios.load.clients import ClientProcesses
from scenarios.load.history import History, Part, Parts, read_history
from scenarios.load.mix import OPERATIONS
from scenarios.load.session import preflight
from scenarios.load.target import open_store
from scenarios.progress import Progress, progress_of
from scenarios.results.formatter import plural
from scenarios.scale import faults
from scenarios.scale.config import ScaleConfig
from scenarios.scale.cpu import CPUMeter
from scenarios.scale.results import ScalePoint
from scenarios.scale.worker import ClientPlan, run_client
from storages import Shared, StorageError, StorageOptions
from vfab.generate import DataSpec

Say = Callable[[str], None]

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
) -> list[ScalePoint]:
    """Every point, storage by storage, client counts in order, each a step
    of the progress.  *history*: where each checked point's (context,
    events) is appended.  *weight*: a point's weight in the progress by
    its client count, when the caller planned the progress itself
    (verify); else this run plans a point a unit."""
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
                        point = run_point(config, name, clients, shared, say, history)
                    say.advance()
                    if point.interrupted:
                        # A point whose clients never started work is not one.
                        raise ScaleInterrupted(points + [point] * bool(point.started))
                    points.append(point)
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
        shutil.rmtree(scratch, ignore_errors=True)


def _populate(client: str, spec: DataSpec, seed: int) -> None:
    store = open_store(client)
    try:
        dataset.populate(store, spec, seed)
    finally:
        store.close()


def run_point(
    config: ScaleConfig,
    storage: str,
    clients: int,
    shared: Shared,
    say: Progress,
    history: Parts | None = None,
) -> ScalePoint:
    """One point on *shared* (populated): read the baseline, start the
    clients, measure, apply the fault, stop, check."""
    load = dataclasses.replace(config.load, target=shared.client)
    fault = config.fault
    if fault is not None and fault.kind == "kill-server" and not shared.can_kill:
        raise StorageError(
            f"--fault kill-server: {storage} has no server this run started"
        )
    notes: list[str] = []
    baseline = consistency.read_baseline(shared.client) if config.check else None
    scratch = Path(tempfile.mkdtemp(prefix="vfab-scale-history-"))
    per_client_rate = config.rate / clients if config.rate else None
    run_token = secrets.token_hex(4)
    plans = [
        ClientPlan(
            config=load,
            warmup_s=config.warmup_s,
            duration_s=config.duration_s,
            rate=per_client_rate,
            seed=None if config.seed is None else config.seed * 1000 + i,
            history_path=str(scratch / f"client-{i}.jsonl") if config.check else None,
            name=f"c{i}",
            stderr_path=str(scratch / f"client-{i}.stderr"),
            wait_timeout_s=config.wait_timeout_s,
            timeline=fault is not None,
            run=run_token,
            windows=config.windows,
        )
        for i in range(clients)
    ]
    meter = CPUMeter(shared.server_pids)
    applied_at = restarted_at = None
    interrupted = False
    results: list[Any] = [None] * clients
    ready = 0
    measure_at = end_at = float("inf")
    try:
        with ClientProcesses(run_client, [(p,) for p in plans]) as procs:
            try:
                say.status("starting the clients")
                procs.start()
                ready = procs.wait_ready(timeout=30 + 3 * clients)
                if ready < clients:
                    notes.append(f"only {ready} of {clients} clients started")
                start_at = procs.go(0.1)
                measure_at = start_at + config.warmup_s
                end_at = measure_at + config.duration_s
                say.status("warmup")
                _sleep_until(measure_at)
                say.status("measuring")
                meter.start()
                if fault is not None:
                    _sleep_until(measure_at + fault.at_s)
                    applied_at = time.monotonic() - measure_at
                    if fault.kind == "kill-server":
                        meter.sample()
                        shared.kill_server()
                        say(f"  killed the server at {applied_at:.1f} s")
                        if fault.restart_s is not None:
                            _sleep_until(measure_at + fault.at_s + fault.restart_s)
                            try:
                                shared.restart_server()
                            except StorageError as e:
                                notes.append(f"the restart failed: {e}")
                            else:
                                restarted_at = time.monotonic() - measure_at
                                say(f"  restarted it at {restarted_at:.1f} s")
                    else:
                        procs.kill(0)
                        say(f"  killed client 0 at {applied_at:.1f} s")
                _sleep_until(end_at)
                meter.sample()
                results = procs.results(timeout=config.wait_timeout_s + 15)
            except KeyboardInterrupt:
                interrupted = True
                end_at = min(end_at, time.monotonic())
                say("  interrupted: stopping the clients")
                meter.sample()
                procs.stop.set()
                try:
                    results = procs.results(timeout=config.wait_timeout_s + 10)
                except KeyboardInterrupt:  # again: stop waiting for them
                    procs.close(grace=0)
                    notes.append("Ctrl-C twice: the clients' results are lost")
        window = max(0.0, end_at - measure_at) if interrupted else config.duration_s
        point = _point(config, storage, clients, results, meter, notes, interrupted)
        point = dataclasses.replace(point, window_s=window)
        events = History()
        for plan in plans:
            if plan.history_path is not None:
                events.absorb(read_history(plan.history_path))
        if fault is not None:
            timeline = [e for r in _oks(results) for e in r.get("timeline", ())]
            point = dataclasses.replace(
                point,
                fault=faults.report(fault, timeline, window, applied_at, restarted_at),
                killed_clients=1 if fault.kind == "kill-client" and applied_at else 0,
            )
        notes += _stderr_notes([p.stderr_path for p in plans])
        say.status("checking the data")
        if baseline is None:
            invariants = consistency.not_checked("--no-check")
        elif shared.server_running:
            invariants = consistency.checked(
                shared.client, baseline, events, read_log=config.read_log
            )
        else:
            try:
                shared.restart_server()
            except StorageError as e:
                invariants = consistency.not_checked(
                    f"the server did not start again: {e}"
                )
            else:
                notes.append("server restarted for the consistency check")
                invariants = consistency.checked(
                    shared.client, baseline, events, read_log=config.read_log
                )
        if history is not None and baseline is not None:
            context = {"storage": storage, "clients": clients, "check": invariants}
            history.append(Part(context, list(events), dict(events.sessions)))
        return dataclasses.replace(point, invariants=invariants, notes=tuple(notes))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _stderr_notes(paths: list[str | None]) -> list[str]:
    """What the clients wrote on stderr, summed up in a note."""
    lines: list[str] = []
    for path in paths:
        if path is not None:
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            lines += [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    last = lines[-1][:200]
    return [f"clients wrote {plural(len(lines), 'line')} on stderr; the last: {last}"]


def _oks(results: list[Any]) -> list[dict[str, Any]]:
    return [
        r[1] for r in results if r is not None and r[0] == "ok" and r[1].get("started")
    ]


def _point(
    config: ScaleConfig,
    storage: str,
    clients: int,
    results: list[Any],
    meter: CPUMeter,
    notes: list[str],
    interrupted: bool,
) -> ScalePoint:
    from scenarios.scale import hist

    oks = _oks(results)
    for r in results:
        if r is not None and r[0] == "error":
            notes.append(f"a client failed: {r[1]}")
    lost = sum(1 for r in results if r is None)
    if lost:
        notes.append(f"{plural(lost, 'client')} sent no result (killed or stuck)")
    hists = {
        op.name: hist.encode(hist.merged(r["hists"].get(op.name) for r in oks))
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
    windows = hist.merged_windows([r.get("windows", []) for r in oks])
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
        client_cpu_s=sum(r["cpu_s"] for r in oks),
        server_cpu_s=meter.seconds,
        log_records=sum(r.get("log_records", 0) for r in oks),
        killed_clients=0,
        invariants=consistency.not_checked("not run"),
        interrupted=interrupted,
        notes=tuple(notes),
        windows=windows,
    )


def _sleep_until(at: float) -> None:
    while True:
        left = at - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))
