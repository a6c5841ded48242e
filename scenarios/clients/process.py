"""One client process: what every one does around its clients' work
(client_process(): scale's, zeoloop's, a matrix group's), and a scale
point's (run_process): one ZODB.DB on the target and one or more users on
it, inline, as threads or as gevent greenlets (the point's concurrency
kind), in a closed loop or an open one (latency from each arrival: no
coordinated omission). Every attempt goes to a history file at once, so what
a client was told survives its death (docs/internals.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

from scenarios.clients import concurrency
from scenarios.clients.loop import ClientPlan, run_loop
from scenarios.clients.processes import (
    Control,
    LogCounter,
    count_log_records,
    die_with_parent,
)
from scenarios.load.mix import LoadConfig


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


class Opened:
    """A client process's database, its clients' history and sessions, and
    the log records counted, as client_process() opened them."""

    def __init__(self, db: Any, history: Any, counter: LogCounter) -> None:
        self.db = db
        self.history = history
        self.counter = counter
        self.sessions: list[Any] = []

    def session(self, config: LoadConfig, rng: Any, **kw: Any) -> Any:
        """One client's Session on the database (closed with it)."""
        from scenarios.load.session import Session

        session = Session(self.db, config, self.history, rng, **kw)
        self.sessions.append(session)
        return session


@contextlib.contextmanager
def client_process(
    kind: str,
    target: str,
    pool: int,
    *,
    history_path: str | None = None,
    stderr_path: str | None = None,
    wait_timeout_s: float | None = None,
    server_sync: bool = False,
    here: Any = None,
) -> Iterator[Opened]:
    """What every client process does around its clients' work (scale's,
    zeoloop's, a matrix group's): it dies with its parent; greenlets patch
    it before ZODB, ZEO, RelStorage and the drivers are imported (what they
    bind at import must be gevent's); its stderr goes to *stderr_path*;
    ZODB's and ZEO's log records are counted, not printed; one ZODB.DB on
    *target* with *pool* connections (*here*: the command's own database,
    when the clients run in its process, whose logging is then left
    alone), refused for greenlets when its storage cannot take them; the
    history to *history_path* as it is made (None: not kept).  Sessions,
    database and history are closed at the end, the server perhaps gone."""
    if here is None:
        die_with_parent()
    if kind == "greenlets":
        from gevent import monkey

        monkey.patch_all()
    from scenarios.load.history import FileHistory, NoHistory
    from scenarios.load.session import open_database

    if stderr_path is not None:
        fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(fd, 2)
        os.close(fd)
    counter = LogCounter() if here is not None else count_log_records()
    if here is not None:
        db = here.open(pool)
    else:
        db = open_database(
            target, pool_size=pool, wait_timeout=wait_timeout_s, server_sync=server_sync
        )
    opened = Opened(db, NoHistory(), counter)
    try:
        if history_path:
            opened.history = FileHistory(history_path)
        if kind == "greenlets":
            refusal = concurrency.storage_refusal(db.storage)
            if refusal is not None:
                raise RuntimeError(f"greenlets: {refusal}")
        yield opened
    finally:
        for closing in [*opened.sessions, db]:
            try:
                closing.close()
            except Exception:  # the server may be gone: nothing to abort
                pass
        if isinstance(opened.history, FileHistory):
            opened.history.close()


def run_process(plan: ProcessPlan, control: Control) -> dict[str, Any]:
    """The process's clients, each in its loop; a JSON-able dict: started,
    cpu_s, log_records, and per client what it measured ("clients")."""
    config = plan.plan.config
    with client_process(
        plan.kind,
        config.target,
        len(plan.clients),
        history_path=plan.history_path,
        stderr_path=plan.stderr_path,
        wait_timeout_s=plan.plan.wait_timeout_s,
        server_sync=config.server_sync,
    ) as opened:
        rngs = [random.Random(c.seed) for c in plan.clients]
        sessions = [
            opened.session(config, rng, client=client.name, run=plan.plan.run)
            for client, rng in zip(plan.clients, rngs, strict=True)
        ]
        start_at = control.wait_start()
        if not start_at:
            return {"started": False}
        cpu = ProcessCPU()
        results = _run(plan, control, sessions, rngs, start_at, cpu)
        return {
            "started": True,
            "cpu_s": cpu.seconds(),
            "log_records": opened.counter.count,
            "clients": results,
        }


class Stop:
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
    stop = Stop(control.stop)

    def one(i: int) -> None:
        results[i] = run_loop(plan.plan, stop, sessions[i], start_at, rngs[i], cpu)

    # A client that fails stops the process's other clients.
    concurrency.run_each(plan.kind, len(sessions), one, stop.local.set)
    return results
