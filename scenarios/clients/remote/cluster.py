"""The master of a distributed scale run (`vfab-bench scale --workers N`):
locust's MasterRunner, and for each point a ClusterFleet placing the
point's clients on the workers (`vfab-bench worker`, scenarios.clients.remote.worker).

For a point of N clients the master asks locust's runner for N users
(runner.start: its dispatcher spreads them over the workers, as it spreads
a locustfile's users), and once every worker reports its share, sends each
worker the processes of its clients (PLAN), waits until each has opened
its database (READY), and tells every worker to start in Δ seconds on its
own clock (GO).  The history each worker's clients write arrives with its
stats reports; the rest, with each process's histograms and counts, with
its RESULT.  A worker that locust marks missing (its heartbeats stopped),
or that quits, before its RESULT makes the point incomplete: WorkerLost,
the other workers stopped, their history checked, the lost worker's
clients named in the check ("not fully checked: worker X lost"), and no
figure of the point reported.

Every wait has a bound: the workers' connection (--connect-timeout), the
users' spawn, READY (as the local clients' start), RESULT (the window's
end plus the clients' --wait-timeout).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
from locust.env import Environment
from locust.runners import STATE_MISSING

from scenarios.clients import concurrency
from scenarios.clients.cpu import host_busy_s
from scenarios.clients.fleet import (
    FleetConfig,
    WorkerLost,
    client_names,
    process_plans,
    stderr_note,
)
from scenarios.clients.loop import ClientPlan
from scenarios.clients.memory import check_memory
from scenarios.clients.process import ProcessPlan
from scenarios.clients.remote import seal, senders, trust, wire
from scenarios.clients.remote.worker_clock import answer_clocks
from scenarios.errors import ConfigError
from scenarios.load.history import History
from scenarios.results.formatter import plural

Say = Callable[[str], None]

#: Seconds between "go" and the clients' start: every worker hears it and
#: counts Δ on its own clock (a network's one-way delay shifts its start).
GO_DELAY_S = 0.5
#: Seconds locust's workers get to report the users they spawned.
SPAWN_TIMEOUT_S = 30.0
#: Seconds a message takes at worst, beyond the bounds the workers keep.
NETWORK_S = 5.0
#: The name locust's dispatcher counts our users by.
USER = wire.ScaleClient.__name__


class Cluster:
    """locust's master and its workers, for a whole run; each point's
    ClusterFleet (fleet()).  A context manager: entering waits for the
    workers (ConfigError, one line, when too few connect), leaving sends
    them locust's quit."""

    go_delay_s = GO_DELAY_S

    def __init__(
        self,
        bind_host: str,
        port: int,
        workers: int,
        connect_timeout_s: float,
        say: Say,
        token: str,
        shown: Say | None = None,
    ) -> None:
        self.bind_host = bind_host
        self.port = port
        self.workers = workers
        self.connect_timeout_s = connect_timeout_s
        self.say = say
        #: the run's token (scenarios.clients.remote.trust); *shown* says it even under
        #: -q, None when the operator gave it ($VFAB_WORKER_TOKEN: not shown)
        self.token = token
        self.shown = shown
        self.junk = trust.Junk(say, "a worker")
        self.senders = senders.Senders(say)  # a worker's records: its clients'
        self.facts: dict[str, dict[str, Any]] = {}
        self.current: ClusterFleet | None = None
        self.points = 0
        self.runner: Any = None

    # -- the connection ---------------------------------------------------

    def __enter__(self) -> Cluster:
        wire.quiet_interrupts()
        wire.locust_aside(True)
        environment = Environment(user_classes=[wire.ScaleClient])
        where, shapes = (self.bind_host, self.port), wire.FROM_WORKER
        self.runner = trust.master_runner(
            environment, *where, self.token, self.junk, shapes
        )
        answer_clocks(self.runner)
        self.runner.register_message(wire.HELLO, self._on_hello)
        self.runner.register_message(wire.READY, self._on_ready)
        self.runner.register_message(wire.RESULT, self._on_result)
        environment.events.worker_report.add_listener(self._on_report)
        try:
            self._wait_for_workers()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        runner, self.runner = self.runner, None
        if runner is not None:
            runner.quit()  # stops the users, tells every worker to quit
        wire.locust_aside(False)

    def _wait_for_workers(self) -> None:
        where = f"{self.bind_host}:{self.port}"
        token = f"--token {self.token}" if self.shown else f"${seal.TOKEN_ENV}"
        (self.shown or self.say)(
            f"waiting for {plural(self.workers, 'worker')} at {where} "
            f"(vfab-bench worker --master-host {self.bind_host} "
            f"--master-port {self.port} {token}), at most "
            f"{self.connect_timeout_s:g} s"
        )
        deadline = time.monotonic() + self.connect_timeout_s
        while len(self._live()) < self.workers:
            if time.monotonic() > deadline:
                raise ConfigError(
                    f"{len(self._live())} of {plural(self.workers, 'worker')} "
                    f"connected to {where} within {self.connect_timeout_s:g} s"
                    + self.junk.words()
                )
            gevent.sleep(0.1)
        for worker in self._live():
            facts = self.facts[worker]
            self.say(
                f"{self.name(worker)}: {facts.get('cores')} cores, clock "
                + _clock_words(facts.get("clock") or {})
            )

    def _live(self) -> list[str]:
        """Workers connected, said hello, and not missing, in locust's order."""
        runner = self.runner
        ids = [
            c.id
            for c in runner.clients.all
            if c.state != STATE_MISSING and c.id in self.facts
        ]
        return sorted(ids, key=runner.get_worker_index)

    def name(self, worker: str) -> str:
        """'worker HOST (ADDRESS)', with its process id when another worker
        has the same host and address (several on one machine)."""
        facts = self.facts.get(worker, {})
        where = (facts.get("host"), facts.get("address"))
        same = [
            f for f in self.facts.values() if (f.get("host"), f.get("address")) == where
        ]
        parts = [str(facts["address"])] if facts.get("address") else []
        if len(same) > 1 and facts.get("pid"):
            parts.append(f"pid {facts['pid']}")
        shown = f" ({', '.join(parts)})" if parts else ""
        return f"worker {facts.get('host', worker)}{shown}"

    def check_memory(self, clients: int, per_process: int) -> None:
        """ConfigError when a worker's share of *clients* would not fit in
        the memory it said it had."""
        share = -(-clients // max(1, len(self._live())))
        for worker in self._live():
            facts = self.facts[worker]
            memory = facts.get("memory_mb")
            if isinstance(memory, (int, float)):
                check_memory(share, memory, per_process, f" on {facts['host']}")

    # -- messages ---------------------------------------------------------

    # Every message here is sealed by a worker of this run and of its
    # type's shape (wire.FROM_WORKER, scenarios.clients.remote.trust); what it says
    # of a point is taken only from a worker that point placed clients on.

    def _on_hello(self, environment: Any, msg: Any, **_kw: Any) -> None:
        self.facts[msg.node_id] = dict(msg.data)

    def _on_ready(self, environment: Any, msg: Any, **_kw: Any) -> None:
        fleet = self._fleet_of(msg.node_id, msg.data["point"])
        if fleet is not None:
            fleet.ready[msg.node_id] = int(msg.data["ready"])

    def _on_result(self, environment: Any, msg: Any, **_kw: Any) -> None:
        fleet = self._fleet_of(msg.node_id, msg.data["point"])
        if fleet is None or msg.node_id in fleet.reports:
            return
        if len(msg.data["results"]) != fleet.processes_of(msg.node_id):
            self.junk("a result for another number of processes", msg.node_id)
            return
        fleet.absorb(msg.data["history"], msg.node_id)
        fleet.reports[msg.node_id] = msg.data

    def _on_report(self, client_id: str, data: dict[str, Any], **_kw: Any) -> None:
        fleet = self._fleet_of(client_id, data.get(wire.POINT_KEY))
        if fleet is not None and client_id not in fleet.reports:
            fleet.absorb(data.get(wire.HISTORY_KEY) or [], client_id)

    def _fleet_of(self, worker: str, point: Any) -> ClusterFleet | None:
        """The point in progress, when *point* is it and *worker* has a
        share of it."""
        fleet = self.current
        if fleet is None or fleet.point != point or worker not in fleet.shares:
            return None
        return fleet

    # -- points -----------------------------------------------------------

    def fleet(
        self, config: FleetConfig, plan: ClientPlan, clients: int, scratch: Path
    ) -> ClusterFleet:
        self.points += 1
        self.current = ClusterFleet(self, self.points, config, plan, clients, scratch)
        return self.current

    def end(self) -> None:
        """The run is over: locust's users stopped on every worker."""
        if self.runner is not None:
            self.runner.stop()


class ClusterFleet:
    """One point's clients on the workers (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        point: int,
        config: FleetConfig,
        plan: ClientPlan,
        clients: int,
        scratch: Path,
    ) -> None:
        self.cluster = cluster
        self.point = point
        self.config = config
        self.plan = plan
        self.clients = clients
        self.scratch = scratch
        self.plans: list[ProcessPlan] = []
        #: global process index -> (worker, its own index)
        self.owner: list[tuple[str, int]] = []
        self.shares: dict[str, int] = {}
        self.ready: dict[str, int] = {}
        self.reports: dict[str, dict[str, Any]] = {}
        self.gone: dict[str, str] = {}
        self._history = History()
        #: seconds this process spent taking the workers' history in
        self.absorb_s = 0.0
        self.records = 0
        #: this host's busy CPU seconds at the window's start and end
        self.busy: list[float | None] = [None, None]

    @property
    def runner(self) -> Any:
        return self.cluster.runner

    def _name(self, worker: str) -> str:
        return self.cluster.name(worker)

    # -- the steps of a point ---------------------------------------------

    def start(self) -> None:
        live = self.cluster._live()
        if len(live) < self.cluster.workers:
            raise WorkerLost(
                f"{len(live)} of {plural(self.cluster.workers, 'worker')} left"
            )
        self.runner.start(self.clients, spawn_rate=self.clients)
        deadline = time.monotonic() + SPAWN_TIMEOUT_S
        while True:
            self.poll_all(live)
            counts = {
                c.id: int(c.user_classes_count.get(USER, 0))
                for c in self.runner.clients.all
                if c.state != STATE_MISSING
            }
            # A worker that joined since has users too once it said hello.
            placed = [w for w, n in counts.items() if n]
            if sum(counts.values()) == self.clients and all(
                w in self.cluster.facts for w in placed
            ):
                live = sorted(placed, key=self.runner.get_worker_index)
                break
            if time.monotonic() > deadline:
                raise WorkerLost(
                    f"the workers reported {sum(counts.values())} of "
                    f"{self.clients} users within {SPAWN_TIMEOUT_S:g} s"
                )
            gevent.sleep(0.05)
        per = concurrency.per_process(
            self.config.concurrency, self.config.clients_per_process, self.clients
        )
        first = 0
        for worker in live:
            n = counts.get(worker, 0)
            if not n:
                continue
            self.shares[worker] = n
            names = client_names(
                self.config.seed, range(first, first + n), wire.node_of(worker)
            )
            first += n
            plans = process_plans(
                self.plan, names, self.config.concurrency, per, self.scratch,
                self.config.check,
            )  # fmt: skip
            self.owner += [(worker, j) for j in range(len(plans))]
            self.plans += plans
            self.runner.send_message(
                wire.PLAN,
                {
                    "point": self.point,
                    "plans": [p.to_json() for p in plans],
                    "record": self.config.check,
                    "ready_timeout_s": 30 + 3 * n,
                },
                client_id=worker,
            )

    def processes_of(self, worker: str) -> int:
        return sum(1 for w, _ in self.owner if w == worker)

    def wait_ready(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout + NETWORK_S
        while set(self.ready) < set(self.shares) and time.monotonic() < deadline:
            self.poll()
            gevent.sleep(0.05)
        return sum(self.ready.values())

    def go(self, delay: float) -> float:
        at = time.monotonic() + delay
        for worker in self.shares:
            self.runner.send_message(
                wire.GO,
                {
                    "point": self.point,
                    "delta": delay,
                    "results_timeout_s": self.config.wait_timeout_s + 15,
                },
                client_id=worker,
            )
        gevent.spawn(self._measure, at + self.plan.warmup_s)
        return at

    def _measure(self, at: float) -> None:
        gevent.sleep(max(0.0, at - time.monotonic()))
        self.busy[0] = host_busy_s()

    def poll(self) -> None:
        self.poll_all(list(self.shares))

    def poll_all(self, workers: list[str]) -> None:
        """WorkerLost for the first of *workers* locust lost (missing: its
        heartbeats stopped; or gone: it quit) before its RESULT came."""
        clients = self.runner.clients
        for worker in workers:
            if worker in self.reports or worker in self.gone:
                continue
            node = clients.get(worker)
            if node is None or node.state == STATE_MISSING:
                how = "it quit" if node is None else "its heartbeats stopped"
                self.gone[worker] = how
                raise WorkerLost(f"{self._name(worker)} was lost ({how})")

    def kill(self, process: int) -> None:
        worker, j = self.owner[process]
        self.runner.send_message(
            wire.KILL, {"point": self.point, "process": j}, client_id=worker
        )

    def stop(self) -> None:
        for worker in self.shares:
            if worker not in self.gone and worker not in self.reports:
                self.runner.send_message(
                    wire.STOP, {"point": self.point}, client_id=worker
                )

    def results_in(self) -> bool:
        return all(w in self.reports or w in self.gone for w in self.shares)

    def results(self, timeout: float) -> list[Any]:
        self.busy[1] = host_busy_s()
        deadline = time.monotonic() + timeout + NETWORK_S
        while not self.results_in() and time.monotonic() < deadline:
            try:
                self.poll()
            except WorkerLost:
                continue  # said in lost(); the others' results still count
            gevent.sleep(0.05)
        for worker in self.shares:
            if worker not in self.reports and worker not in self.gone:
                self.gone[worker] = "no result in time"
        out: list[Any] = []
        for worker, j in self.owner:
            got = self.reports.get(worker)
            value = None if got is None else got["results"][j]
            out.append(None if value is None else tuple(value))
        return out

    def close(self, grace: float = 5.0) -> None:
        if not self.results_in():
            self.stop()
        if self.cluster.current is self:
            self.cluster.current = None

    # -- what the point says ----------------------------------------------

    def absorb(self, lines: list[str], worker: str) -> None:
        started, name = time.perf_counter(), self._name(worker)
        own = self.cluster.senders.own(worker, [json.loads(x) for x in lines], name)
        self._history.absorb(own)
        self.records += len(lines)
        self.absorb_s += time.perf_counter() - started

    def history(self) -> History:
        return self._history

    def notes(self) -> list[str]:
        out = []
        for worker in self.shares:
            got = self.reports.get(worker)
            if got is None:
                how = self.gone.get(worker, "no result in time")
                out.append(
                    f"{self._name(worker)} was lost ({how}): the results of its "
                    f"{plural(self.shares[worker], 'client')} never came"
                )
                continue
            stderr = got.get("stderr") or {}
            if stderr.get("lines"):
                out += stderr_note(
                    [""] * (int(stderr["lines"]) - 1) + [str(stderr["last"])],
                    self._name(worker).removeprefix("worker "),
                )
        return out

    def lost(self) -> dict[str, str]:
        return {
            wire.node_of(w): self._name(w) for w in self.shares if w not in self.reports
        }

    def hosts(self, merge_s: float | None = None) -> tuple[dict[str, Any], ...]:
        out = []
        for worker, n in self.shares.items():
            facts = self.cluster.facts.get(worker, {})
            got = self.reports.get(worker) or {}
            oks = [
                r[1] for r in got.get("results") or [] if r and r[0] == "ok" and r[1]
            ]
            out.append(
                {
                    "host": facts.get("host"),
                    "address": facts.get("address"),
                    "worker": worker,
                    "kernel": facts.get("kernel"),
                    "pid": facts.get("pid"),
                    "cores": facts.get("cores"),
                    "clock": facts.get("clock"),
                    "clients": n,
                    "processes": self.processes_of(worker),
                    "client_cpu_s": round(sum(r.get("cpu_s", 0.0) for r in oks), 3)
                    if got
                    else None,
                    "cpu_busy_s": got.get("cpu_busy_s"),
                }
            )
        first, last = self.busy
        busy = None if first is None or last is None else round(last - first, 3)
        out.append(wire.master_facts(merge_s, self.records, busy))
        return tuple(out)


def _clock_words(clock: dict[str, Any]) -> str:
    uncertainty = float(clock.get("uncertainty_s", 1e9))
    if uncertainty == 0:
        return "this machine's (same kernel)"
    if uncertainty >= 1e8:
        return "not measured (its attempts are not ordered in real time)"
    return (
        f"offset {float(clock.get('offset_s', 0)) * 1000:+.3f} ms "
        f"± {uncertainty * 1000:.3f} ms"
    )
