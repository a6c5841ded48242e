"""Running a matrix: a group per storage, concurrency kind and concurrency,
each on a fresh database (every transaction size and benchmark in it), its
clients in processes Ctrl-C does not reach (scenarios.clients.processes), its
data checked once they stop; storages interleaved so that a slow spell of
the machine falls on all of them.  Servers and processes are stopped on
every way out (the factories' running() and share(), ClientProcesses)."""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import storages
from scenarios.bench.runner import Say, available
from scenarios.clients.processes import ClientProcesses, stop_signals_blocked
from scenarios.errors import ConfigError
from scenarios.interrupts import remove_tree
from scenarios.matrix import check
from scenarios.matrix.client import BARRIER_S, GroupPlan, run_group
from scenarios.matrix.config import MatrixConfig, kind_refusal
from scenarios.matrix.model import MatrixCell, MatrixGroup, MatrixRound, MatrixRun
from scenarios.matrix.objects import PAYLOAD_BYTES
from scenarios.progress import Progress, progress_of
from scenarios.results.formatter import plural
from scenarios.results.metadata import collect as collect_metadata
from storages import StorageError

#: Seconds client processes have to open their database.
READY_S = 120.0
#: Seconds between "go" and the clients' start.
GO_DELAY_S = 0.1
#: Seconds without a benchmark finished before a group is given up.
STALL_S = BARRIER_S + 60.0
#: Seconds per unit of progress assumed before the first group ends.
UNIT_S = 0.15


@dataclasses.dataclass(frozen=True)
class Group:
    storage: str
    factory: storages.StorageFactory
    kind: str
    concurrency: int

    @property
    def label(self) -> str:
        return f"{self.storage}, {self.concurrency} {self.kind}"


def plan(config: MatrixConfig, say: Say) -> tuple[list[Group], list[str]]:
    """The groups to run, concurrency by concurrency, kinds in order, the
    storages interleaved; and what is left out, one line each.  A kind the
    user named that a storage cannot run is a ConfigError (before any
    work); by default it is left out, said."""
    groups: list[Group] = []
    notes: list[str] = []
    factories = list(available(config.storages, config.options, say))
    for kind in config.kinds:
        for name, factory in factories:
            refusal = kind_refusal(factory, kind)
            if refusal is None:
                continue
            if config.kinds_named:
                raise ConfigError(f"--kind {kind}: {name}: {refusal}")
            notes.append(f"{name}: no {kind} ({refusal})")
    for name, factory in factories:
        source = getattr(type(factory), "source", None)
        if source is not None:
            check.refuse_data(check.Database(source=source), name)
    for n in config.concurrency:
        for kind in config.kinds:
            for name, factory in factories:
                if kind_refusal(factory, kind) is not None:
                    continue
                if n == 1 and kind == "processes" and "threads" in config.kinds:
                    # One client in its process either way (each group's
                    # clients run in processes of their own): measured once.
                    continue
                groups.append(Group(name, factory, kind, n))
    if 1 in config.concurrency and {"threads", "processes"} <= set(config.kinds):
        notes.append("1 client: 1 thread and 1 process are the same; measured once")
    return groups, notes


def _units(config: MatrixConfig, group: Group) -> int:
    """A group's progress: every client's run of each benchmark and size."""
    return group.concurrency * len(config.objects) * len(config.benchmarks)


def run(config: MatrixConfig, progress: Progress | Say | None = None) -> MatrixRun:
    """Every group of *config*: the matrix."""
    from scenarios.results import environment

    shown = progress_of(progress, "matrix", "client benchmarks")
    groups, notes = plan(config, shown.line)
    for note in notes:
        shown.line(note)
    if not groups:
        raise StorageError("no storage can run here: nothing to measure")
    start, probes = environment.snapshot(), environment.probes()
    shown.plan(sum(_units(config, g) for g in groups), unit_s=UNIT_S, idle_s=True)
    cells: list[MatrixCell] = []
    done: list[MatrixGroup] = []
    with contextlib.ExitStack() as held:
        # Every storage's shared resources at once (a server pool), so that
        # their groups can take turns.
        for factory in dict.fromkeys(g.factory for g in groups):
            held.enter_context(factory.running())
        for group in groups:
            shown.step(group.label, _units(config, group))
            result, new = run_group_of(config, group, shown)
            cells += new
            done.append(result)
            shown.advance()
            shown.line(_summary(result, new, config), counted=True)
    metadata = collect_metadata(config)
    metadata["payload_bytes"] = PAYLOAD_BYTES
    # Its own clients (and a server) still weigh in the 1-minute load: not
    # another's work.  The warnings are the report's (printed once).
    own = max(g.concurrency for g in groups) + 1
    metadata["environment"] = environment.record(
        start, probes + environment.probes(), own
    )
    if not cells:
        raise StorageError(
            "no group measured anything: "
            + "; ".join(f"{g.storage}: {g.error}" for g in done if g.error)[:500]
        )
    return MatrixRun(metadata=metadata, results=tuple(cells), groups=tuple(done))


def _summary(group: MatrixGroup, cells: list[MatrixCell], config: MatrixConfig) -> str:
    where = f"{group.storage}, {cells[0].axis if cells else group.kind}"
    if group.error is not None:
        return f"{where}: FAILED: {group.error}"
    verdict = "checked" if group.ok else f"{plural(len(group.problems), 'problem')}"
    return (
        f"{where}: {plural(len(cells), 'cell')} in {group.seconds_s:.1f} s, {verdict}"
    )


@contextlib.contextmanager
def database(factory: storages.StorageFactory) -> Iterator[check.Database]:
    """A fresh database for one group (a served one's client spec, a
    FileStorage's ZConfig text), or the database the user named; whatever
    it started stopped, its files removed, on every way out."""
    source = getattr(type(factory), "source", None)
    if source is not None:
        yield check.Database(source=source)
        return
    scratch = Path(tempfile.mkdtemp(prefix="vfab-matrix-"))
    try:
        data = scratch / "data"
        data.mkdir()
        if factory.shared:
            with factory.share(data) as shared:
                yield check.Database(spec=shared.client)
            return
        if not factory.servable:
            raise StorageError(f"{factory.name}: no other process can open it")
        section, imports = factory.served_section(data)
        lines = [f"%import {m}" for m in imports]
        spec = "\n".join([*lines, "<zodb>", section.strip(), "</zodb>", ""])
        yield check.Database(spec=spec)
    finally:
        remove_tree(scratch)


def run_group_of(
    config: MatrixConfig, group: Group, shown: Progress
) -> tuple[MatrixGroup, list[MatrixCell]]:
    """One group: its database, its data, its clients, their check."""
    began = time.monotonic()
    key = f"vfab-matrix-{secrets.token_hex(4)}"
    sizes = config.objects
    error: str | None = None
    results: list[dict[str, Any]] = []
    problems: list[str] = []
    checked = False
    with database(group.factory) as where:
        shown.status("populating")
        check.populate(where, key, group.concurrency, sizes)
        try:
            results, error = _clients(config, group, where, key, shown)
        finally:
            # Read back whatever was acknowledged, and remove the group's
            # data, even after a failure (a database the user named).
            clients = [c for r in results for c in r["clients"]]
            shown.status("checking")
            problems = check.check(where, key, sizes, clients)
            checked = error is None
    cold: dict[str, list[str]] = next(
        (r["cold"] for r in results), {"cleared": [], "kept": []}
    )
    result = MatrixGroup(
        storage=group.storage,
        kind=group.kind,
        concurrency=group.concurrency,
        checked=checked,
        problems=tuple(problems),
        error=error,
        cleared=tuple(cold["cleared"]),
        kept=tuple(cold["kept"]),
        seconds_s=time.monotonic() - began,
    )
    cells = _cells(config, group, [c for r in results for c in r["clients"]])
    return result, cells if error is None else []


def _clients(
    config: MatrixConfig,
    group: Group,
    where: check.Database,
    key: str,
    shown: Progress,
) -> tuple[list[dict[str, Any]], str | None]:
    """Start the group's client processes, follow them, collect what each
    measured: (results of the processes that finished, the first error)."""
    n = group.concurrency
    base = GroupPlan(
        target=where.spec,
        kind=group.kind,
        clients=tuple(range(n)),
        concurrency=n,
        objects=config.objects,
        benchmarks=config.benchmarks,
        rounds=config.rounds,
        transactions=config.transactions,
        key=key,
    )
    if not group.factory.shared:
        return _inline(group, base, where, shown)
    if group.kind == "processes":
        plans = [dataclasses.replace(base, clients=(c,)) for c in range(n)]
    else:
        plans = [base]
    context = multiprocessing.get_context("spawn")
    with stop_signals_blocked():
        done = context.Value("i", 0)
        barrier = context.Barrier(n) if len(plans) > 1 else None
    total = _units(config, group)
    with ClientProcesses(run_group, [(p, barrier, done) for p in plans]) as procs:
        shown.status(
            f"starting {plural(len(plans), 'client process', 'client processes')}"
        )
        procs.start()
        ready = procs.wait_ready(READY_S)
        if ready == len(plans):
            procs.go(GO_DELAY_S)
            shown.status("measuring")
            _follow(procs, done, total, barrier, shown)
        else:
            procs.stop.set()
        answers = procs.results(30.0)
    results: list[dict[str, Any]] = []
    error: str | None = None
    for answer in answers:
        if answer is None:
            error = error or "a client process died or did not answer"
        elif answer[0] == "error":
            error = error or str(answer[1]).splitlines()[0][:300]
        elif not answer[1].get("started"):
            error = error or f"{ready} of {len(plans)} client processes started"
        else:
            results.append(answer[1])
    return results, error


class _Count:
    """A count of finished benchmarks, as multiprocessing's Value offers it."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def get_lock(self) -> threading.Lock:
        return self._lock


class _Here:
    """What a client process gets from its parent (load.clients.Control),
    for clients run in this process: start at once, stop when told."""

    def __init__(self) -> None:
        self.stop = threading.Event()

    def wait_start(self) -> float:
        return time.monotonic()


def _inline(
    group: Group, plan: GroupPlan, where: check.Database, shown: Progress
) -> tuple[list[dict[str, Any]], str | None]:
    """A storage only one process opens (FileStorage): its clients are
    threads of this process, as the FAQ ran it; followed as the others."""
    done, control = _Count(), _Here()
    answer: list[Any] = []

    def work() -> None:
        try:
            answer.append(("ok", run_group(plan, None, done, control, where)))
        except Exception as e:  # the group's failure, said by the caller
            answer.append(("error", f"{type(e).__name__}: {e}"))

    thread = threading.Thread(target=work, name="matrix-clients", daemon=True)
    shown.status("measuring")
    thread.start()
    try:
        counted, last = 0, time.monotonic()
        while thread.is_alive():
            thread.join(0.05)
            if done.value > counted:
                shown.count(done.value - counted)
                counted, last = done.value, time.monotonic()
            if time.monotonic() - last > STALL_S:
                break
    finally:
        # Ctrl-C or a stall: the clients stop at their next round.
        control.stop.set()
        thread.join(STALL_S)
    if not answer:
        return [], f"{group.label}: the clients did not finish"
    if answer[0][0] == "error":
        return [], str(answer[0][1]).splitlines()[0][:300]
    return [answer[0][1]], None


def _follow(
    procs: ClientProcesses, done: Any, total: int, barrier: Any, shown: Progress
) -> None:
    """Wait for the group's clients, counting their progress; a process
    dead before the end breaks the barrier for the others; bounded by the
    time since the last benchmark finished."""
    counted = 0
    last = time.monotonic()
    while True:
        value = done.value
        if value > counted:
            shown.count(value - counted)
            counted, last = value, time.monotonic()
        if value >= total:
            return
        if not all(p.is_alive() for p in procs.processes):
            if barrier is not None:
                barrier.abort()
            return
        if time.monotonic() - last > STALL_S:
            procs.stop.set()
            if barrier is not None:
                barrier.abort()
            return
        time.sleep(0.05)


def _cells(
    config: MatrixConfig, group: Group, clients: list[dict[str, Any]]
) -> list[MatrixCell]:
    """The group's cells from its clients' timings: a round's value is its
    slowest client's."""
    if not clients:
        return []
    out = []
    for n in config.objects:
        for bench in config.benchmarks:
            rounds = []
            for r in range(config.rounds):
                each = tuple(float(c["times"][bench][n][r]) for c in clients)
                rounds.append(MatrixRound(wall_s=max(each), clients_s=each))
            conflicts = sum(c["conflicts"].get(n, 0) for c in clients)
            out.append(
                MatrixCell(
                    storage=group.storage,
                    benchmark=bench,
                    kind=group.kind,
                    concurrency=group.concurrency,
                    objects=n,
                    transactions=config.transactions,
                    rounds=tuple(rounds),
                    conflicts=conflicts if bench == "conflicts" else 0,
                )
            )
    return out
