"""The client processes of one scale point, wherever they run: on this
machine (LocalFleet: scenarios.clients.processes) or on locust workers
(scenarios.clients.remote.cluster.ClusterFleet).  The point's steps are the same
either way (scenarios.scale.runner.run_point): start the processes, wait
until each has opened its database, "go in Δ s", the window, a fault,
stop, each process's result, the history of every attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from scenarios.clients import concurrency
from scenarios.clients.loop import ClientPlan
from scenarios.clients.process import Client, ProcessPlan, run_process
from scenarios.clients.processes import ClientProcesses
from scenarios.load.history import History, read_history
from scenarios.results.formatter import plural


class WorkerLost(Exception):
    """A worker of the point was lost (its heartbeats stopped, or it quit):
    the point cannot be measured whole."""


class FleetConfig(Protocol):
    """What a fleet reads of its run's configuration (scale's ScaleConfig):
    the names' seed, the concurrency kind and clients per process, whether
    the history is recorded for a check, an absent server's wait."""

    @property
    def seed(self) -> int: ...
    @property
    def concurrency(self) -> str: ...
    @property
    def clients_per_process(self) -> int | None: ...
    @property
    def check(self) -> bool: ...
    @property
    def wait_timeout_s(self) -> float: ...


class Fleet(Protocol):
    """What a point asks of its client processes (the processes in the
    order of *plans*, their clients in order within them)."""

    plans: list[ProcessPlan]
    #: Seconds this process spent taking in the clients' history as it came.
    absorb_s: float

    def start(self) -> None: ...

    def wait_ready(self, timeout: float) -> int:
        """How many processes opened their database within *timeout*."""
        ...

    def go(self, delay: float) -> float:
        """Start every client *delay* seconds from now: that time on this
        process's clock (time.monotonic())."""
        ...

    def poll(self) -> None:
        """WorkerLost when a host of the point was lost."""
        ...

    def kill(self, process: int) -> None: ...

    def stop(self) -> None:
        """Every client finishes its operation in hand and returns."""
        ...

    def results(self, timeout: float) -> list[Any]:
        """Each process's ("ok", value) or ("error", text, traceback), or
        None (killed, lost, silent for *timeout* seconds)."""
        ...

    def close(self, grace: float = 5.0) -> None: ...

    def history(self) -> History:
        """Every record the clients made that reached this process."""
        ...

    def notes(self) -> list[str]:
        """What the point should say about its processes (their stderr,
        a lost host)."""
        ...

    def lost(self) -> dict[str, str]:
        """Client-name prefix -> host, for hosts whose history did not all
        arrive (the check's *lost*)."""
        ...

    def hosts(self, merge_s: float | None = None) -> tuple[dict[str, Any], ...]:
        """The hosts that served the point (() on this machine alone);
        *merge_s*: what merging their figures and histories cost here."""
        ...


def process_plans(
    plan: ClientPlan,
    clients: Sequence[Client],
    kind: str,
    per_process: int,
    directory: Path,
    record: bool,
) -> list[ProcessPlan]:
    """*clients* cut into processes of *per_process* each, each with its
    history file (when *record*) and stderr file in *directory*."""
    out = []
    first = 0
    for j, n in enumerate(concurrency.split(len(clients), per_process)):
        out.append(
            ProcessPlan(
                plan,
                tuple(clients[first : first + n]),
                kind,
                history_path=str(directory / f"process-{j}.jsonl") if record else None,
                stderr_path=str(directory / f"process-{j}.stderr"),
            )
        )
        first += n
    return out


def client_names(
    seed: int | None, indexes: Iterable[int], prefix: str = ""
) -> list[Client]:
    """The clients of these indexes: their names in the history (c3, or a
    worker's w3f2a1c.c3) and their seeds (the run's *seed* * 1000 + index)."""
    return [
        Client(f"{prefix}c{i}", None if seed is None else seed * 1000 + i)
        for i in indexes
    ]


def stderr_notes(paths: Sequence[str | None], where: str = "") -> list[str]:
    """What the clients wrote on stderr, summed up in a note."""
    lines: list[str] = []
    for path in paths:
        if path is not None:
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            lines += [ln.strip() for ln in text.splitlines() if ln.strip()]
    return stderr_note(lines, where)


def stderr_note(lines: Sequence[str], where: str = "") -> list[str]:
    if not lines:
        return []
    last = lines[-1][:200]
    who = f"clients on {where}" if where else "clients"
    return [f"{who} wrote {plural(len(lines), 'line')} on stderr; the last: {last}"]


class LocalFleet:
    """The point's client processes on this machine."""

    absorb_s = 0.0

    def __init__(self, plans: list[ProcessPlan]) -> None:
        self.plans = plans
        self._procs = ClientProcesses(run_process, [(p,) for p in plans])

    def start(self) -> None:
        self._procs.start()

    def wait_ready(self, timeout: float) -> int:
        return self._procs.wait_ready(timeout)

    def go(self, delay: float) -> float:
        return self._procs.go(delay)

    def poll(self) -> None:
        pass

    def kill(self, process: int) -> None:
        self._procs.kill(process)

    def stop(self) -> None:
        self._procs.stop.set()

    def results(self, timeout: float) -> list[Any]:
        return self._procs.results(timeout)

    def close(self, grace: float = 5.0) -> None:
        self._procs.close(grace)

    def history(self) -> History:
        events = History()
        for plan in self.plans:
            if plan.history_path is not None:
                events.absorb(read_history(plan.history_path))
        return events

    def notes(self) -> list[str]:
        return stderr_notes([p.stderr_path for p in self.plans])

    def lost(self) -> dict[str, str]:
        return {}

    def hosts(self, merge_s: float | None = None) -> tuple[dict[str, Any], ...]:
        return ()
