"""One client process of a scale point: one ZODB.DB on the target and one
or more users on it, inline, as threads or as gevent greenlets (the
point's concurrency kind), in a closed loop or an open one (latency from
each arrival: no coordinated omission).  Every attempt goes to a history
file at once, so what a client was told survives its death
(docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
import time
from typing import Any

from scenarios.clients import concurrency
from scenarios.clients.loop import ClientPlan, run_loop
from scenarios.clients.processes import Control, count_log_records, die_with_parent


@dataclasses.dataclass(frozen=True)
class Client:
    """One client of a process: its name in the history and its seed."""

    name: str
    seed: int | None


@dataclasses.dataclass(frozen=True)
class ProcessPlan:
    """What one client process does (picklable; JSON between hosts)."""

    plan: ClientPlan
    clients: tuple[Client, ...]
    kind: str = "processes"
    #: Where the process appends its clients' history (None: --no-check).
    history_path: str | None = None
    #: Where the process's stderr goes (None: inherited).  What drivers
    #: print there when their server dies (psycopg2 prints the exception
    #: it could not raise) is not for the terminal.
    stderr_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_json(),
            "clients": [[c.name, c.seed] for c in self.clients],
            "kind": self.kind,
        }

    @classmethod
    def from_json(
        cls,
        data: dict[str, Any],
        history_path: str | None = None,
        stderr_path: str | None = None,
    ) -> ProcessPlan:
        return cls(
            ClientPlan.from_json(data["plan"]),
            tuple(
                Client(str(n), None if s is None else int(s))
                for n, s in data["clients"]
            ),
            str(data["kind"]),
            history_path,
            stderr_path,
        )


class ProcessCPU:
    """This process's CPU seconds from the window's start (the first client
    to see it says so) to the end (read once every client has stopped)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started: float | None = None

    def window_started(self) -> None:
        if self.started is None:
            with self._lock:
                if self.started is None:
                    self.started = time.process_time()

    def seconds(self) -> float:
        return 0.0 if self.started is None else time.process_time() - self.started


def run_process(plan: ProcessPlan, control: Control) -> dict[str, Any]:
    """The process's clients, each in its loop; a JSON-able dict: started,
    cpu_s, log_records, and per client what it measured ("clients")."""
    die_with_parent()
    if plan.kind == "greenlets":
        # Before ZEO, RelStorage and the drivers are imported: what they
        # bind at import (threading.Event, socket) must be gevent's.
        from gevent import monkey

        monkey.patch_all()
    from scenarios.load.history import FileHistory, NoHistory
    from scenarios.load.session import Session, open_database

    if plan.stderr_path is not None:
        fd = os.open(plan.stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(fd, 2)
        os.close(fd)
    counter = count_log_records()
    history: Any = FileHistory(plan.history_path) if plan.history_path else NoHistory()
    config = plan.plan.config
    db = open_database(
        config.target,
        pool_size=len(plan.clients),
        wait_timeout=plan.plan.wait_timeout_s,
        server_sync=config.server_sync,
    )
    sessions: list[Any] = []
    try:
        if plan.kind == "greenlets":
            from scenarios.clients.concurrency import storage_refusal

            refusal = storage_refusal(db.storage)
            if refusal is not None:
                raise RuntimeError(f"--concurrency greenlets: {refusal}")
        rngs = [random.Random(c.seed) for c in plan.clients]
        for client, rng in zip(plan.clients, rngs, strict=True):
            sessions.append(
                Session(db, config, history, rng, client=client.name, run=plan.plan.run)
            )
        start_at = control.wait_start()
        if not start_at:
            return {"started": False}
        cpu = ProcessCPU()
        results = _run(plan, control, sessions, rngs, start_at, cpu)
        return {
            "started": True,
            "cpu_s": cpu.seconds(),
            "log_records": counter.count,
            "clients": results,
        }
    finally:
        for session in sessions:
            try:
                session.close()
            except Exception:  # the server may be gone: nothing to abort
                pass
        try:
            db.close()
        except Exception:
            pass
        if isinstance(history, FileHistory):
            history.close()


class _Stop:
    """Set when the parent says stop, or when a client of this process
    failed (the process's other clients stop; other processes go on)."""

    def __init__(self, parent: Any) -> None:
        self.parent = parent
        self.local = threading.Event()

    def is_set(self) -> bool:
        return bool(self.local.is_set() or self.parent.is_set())


def _run(
    plan: ProcessPlan,
    control: Control,
    sessions: list[Any],
    rngs: list[random.Random],
    start_at: float,
    cpu: ProcessCPU,
) -> list[dict[str, Any]]:
    """Each session's loop, concurrently as the kind says; their results in
    the clients' order."""
    results: list[dict[str, Any]] = [{} for _ in sessions]
    stop = _Stop(control.stop)

    def one(i: int) -> None:
        results[i] = run_loop(plan.plan, stop, sessions[i], start_at, rngs[i], cpu)

    # A client that fails stops the process's other clients.
    concurrency.run_each(plan.kind, len(sessions), one, stop.local.set)
    return results
