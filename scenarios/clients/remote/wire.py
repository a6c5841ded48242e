"""What scale's master and its workers say to each other over locust.

locust carries everything: its master and workers (locust.runners), their
connection, heartbeats and missing-worker detection, and the user counts
its dispatcher spreads over the workers, point by point (the master's
runner.start(N) for each client count).  One locust user is one client of
the point (ScaleClient).  What scale measures beyond locust's statistics
travels in the messages below, registered with register_message:

    worker -> master  HELLO   {host, address, kernel, cores, memory_mb, pid,
                              clock}
    master -> worker  PLAN    {point, plans: [ProcessPlan JSON]}
    worker -> master  READY   {point, ready, processes}
    master -> worker  GO      {point, delta}: start in delta seconds on
                              your own clock
    master -> worker  KILL    {point, process}: SIGKILL one (a fault)
    master -> worker  STOP    {point}: every client finishes its operation
    worker -> master  RESULT  {point, results, history, stderr, cpu_busy_s}

and every stats report of a worker carries the history its clients wrote
since the last one (HISTORY_KEY, as the locustfile's workers send theirs),
so that what a worker's clients did before it was lost reaches the master.
The clocks are measured as the locustfile's are
(scenarios.clients.remote.worker_clock).  Every message is sealed and checked
against its shape (FROM_WORKER, FROM_MASTER) by scenarios.clients.remote.trust.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

import gevent
from locust import User, constant, task

from scenarios.clients.memory import mem_available_mb
from scenarios.clients.remote import worker_clock
from scenarios.clients.remote.plugin import HISTORY_KEY, node_of, quiet_interrupts
from scenarios.clients.remote.shapes import (
    CLOCK_SHAPE,
    LOCUST_FROM_MASTER,
    LOCUST_FROM_WORKER,
    Shapes,
    anything,
    count,
    fields,
    flag,
    list_of,
    number,
    optional,
    stats,
    text,
)
from scenarios.load.clock import boot_id

HELLO = "vfab_scale_hello"
PLAN = "vfab_scale_plan"
READY = "vfab_scale_ready"
GO = "vfab_scale_go"
KILL = "vfab_scale_kill"
STOP = "vfab_scale_stop"
RESULT = "vfab_scale_result"
#: The key of the point a stats report's history belongs to.
POINT_KEY = "vfab_scale_point"

#: The shapes of what a worker sends its master, and the master its workers
#: (scenarios.clients.remote.trust checks every message against them): locust's,
#: the clock's (scenarios.clients.remote.worker_clock) and the messages above.
FROM_WORKER: Shapes = {
    **LOCUST_FROM_WORKER,
    **worker_clock.FROM_WORKER,
    "stats": stats({POINT_KEY: count, HISTORY_KEY: list_of(text)}),
    HELLO: fields(
        {"host": text, "address": text, "kernel": text, "clock": CLOCK_SHAPE},
        {"cores": optional(count), "memory_mb": optional(number), "pid": count},
    ),
    READY: fields({"point": count, "ready": count, "processes": count}),
    RESULT: fields(
        {
            "point": count,
            "results": list_of(optional(list_of(anything))),
            "history": list_of(text),
            "stderr": fields({"lines": count, "last": text}),
            "cpu_busy_s": optional(number),
        }
    ),
}
FROM_MASTER: Shapes = {
    **LOCUST_FROM_MASTER,
    **worker_clock.FROM_MASTER,
    PLAN: fields(
        {
            "point": count,
            "plans": list_of(fields({})),
            "record": flag,
            "ready_timeout_s": number,
        }
    ),
    GO: fields({"point": count, "delta": number, "results_timeout_s": number}),
    KILL: fields({"point": count, "process": count}),
    STOP: fields({"point": count}),
}

__all__ = [
    "FROM_MASTER",
    "FROM_WORKER",
    "GO",
    "HELLO",
    "HISTORY_KEY",
    "KILL",
    "PLAN",
    "POINT_KEY",
    "READY",
    "RESULT",
    "STOP",
    "ScaleClient",
    "host_facts",
    "master_facts",
    "node_of",
    "quiet_interrupts",
]


class ScaleClient(User):
    """One client of a scale point, as locust's dispatcher counts and places
    it.  Its work runs in a client process of its worker's host (scenarios
    .clients.process, started when the master's PLAN comes), so that it runs
    as the local scale's clients do; the user holds its place in locust's
    user counts until locust stops it (at once: no stop timeout)."""

    wait_time = constant(0)

    @task
    def hold(self) -> None:
        gevent.sleep(3600)


class _Aside(logging.Filter):
    """locust's master's own lines below ERROR, kept off stderr while a
    cluster runs: the master says what happened to its workers itself, and
    locust's words for it repeat or contradict it (a worker that quits
    mid-point: "You can't start a distributed test before at least one
    worker processes has connected", locust's restart of the test without
    it).  They go to the vfab log at DEBUG level instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        logging.getLogger("vfab").debug("locust: %s", record.getMessage())
        return False


_ASIDE = _Aside()


def locust_aside(on: bool) -> None:
    """Put locust's master's lines aside (*on*), or back on stderr."""
    runners = logging.getLogger("locust.runners")
    (runners.addFilter if on else runners.removeFilter)(_ASIDE)


def host_facts(master_host: str, master_port: int) -> dict[str, Any]:
    """What a worker tells its master about its host: its name, the address
    it reaches the master from, its kernel (boot id: one clock per kernel),
    its cores, the memory available, and its process id (workers of one
    host told apart)."""
    address = ""
    try:
        family = socket.AF_INET6 if ":" in master_host else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((master_host, master_port))  # no packet: picks a route
            address = str(s.getsockname()[0])
    except OSError:
        pass
    return {
        "host": socket.gethostname(),
        "address": address,
        "kernel": boot_id(),
        "cores": os.cpu_count(),
        "memory_mb": mem_available_mb(),
        "pid": os.getpid(),
    }


def master_facts(
    merge_s: float | None, records: int, busy_s: float | None
) -> dict[str, Any]:
    """The coordinating host's entry among a point's hosts: its kernel and
    cores (its server's CPU is the point's server_cpu_s), and what merging
    the workers' histories and histograms cost it."""
    return {
        "role": "master",
        "host": socket.gethostname(),
        "kernel": boot_id(),
        "cores": os.cpu_count(),
        "merge_s": None if merge_s is None else round(merge_s, 3),
        "history_records": records,
        "cpu_busy_s": busy_s,
    }
