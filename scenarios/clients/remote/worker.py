"""A worker host of a distributed scale run (`vfab-bench worker`): locust's
WorkerRunner, and for each point the client processes the master's PLAN
names, started as the local scale starts its own (scenarios.clients.processes,
scenarios.clients.process), so that a client measures the same on a worker
as on the master's machine.

The process is gevent's (locust patches it): every call that blocks in C
on a semaphore or a pipe of the client processes (waiting until they are
ready, their results, reaping them) runs in gevent's thread pool, so that
the heartbeats go on.  The client processes are started from the main
thread and die with this process (PR_SET_PDEATHSIG).

The clients' history files are read as they grow and sent with every stats
report (scenarios.clients.remote.wire), the session records carrying this host's
clock as measured against the master's; the rest goes with the result.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
from gevent.event import Event
from locust.env import Environment
from locust.runners import MASTER_HEARTBEAT_TIMEOUT

from scenarios.clients import concurrency
from scenarios.clients.cpu import host_busy_s
from scenarios.clients.process import ProcessPlan, run_process
from scenarios.clients.processes import ClientProcesses
from scenarios.clients.remote import trust, wire
from scenarios.clients.remote.worker_clock import UNKNOWN_CLOCK_S, WorkerClock
from scenarios.errors import ConfigError
from scenarios.interrupts import remove_tree
from scenarios.load.clock import Clock
from scenarios.results.formatter import plural

Say = Callable[[str], None]


class _Tail:
    """The complete lines a file has gained since the last read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0

    def read(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1  # a line being written waits for its end
        self.offset += end
        return data[:end].decode("utf-8", errors="replace").splitlines()


class _Point:
    """This host's part of one point: its client processes and files."""

    def __init__(self, point: int, plans: list[ProcessPlan], scratch: Path) -> None:
        self.point = point
        self.plans = plans
        self.scratch = scratch
        self.procs = ClientProcesses(run_process, [(p,) for p in plans])
        self.tails = [_Tail(p.history_path) for p in plans if p.history_path]
        self.stopped = Event()
        self.go: float | None = None
        self.end_at: float | None = None
        self.busy_from: float | None = None

    def close(self) -> None:
        self.procs.close(grace=0)
        remove_tree(self.scratch)


class Host:
    """This worker's side of the messages in scenarios.clients.remote.wire."""

    def __init__(self, runner: Any, master: tuple[str, int], say: Say) -> None:
        self.runner = runner
        self.master = master
        self.say = say
        self.clocks = WorkerClock(runner)
        self.clock = Clock(0.0, UNKNOWN_CLOCK_S)
        self.current: _Point | None = None
        self.points = 0
        #: why this worker ends before its master's run does (one line)
        self.failure: str | None = None
        runner.register_message(wire.PLAN, self.on_plan, concurrent=True)
        runner.register_message(wire.GO, self.on_go)
        runner.register_message(wire.KILL, self.on_kill)
        runner.register_message(wire.STOP, self.on_stop)
        runner.environment.events.report_to_master.add_listener(self.on_report)

    def hello(self) -> None:
        """Measure this host's clock against the master's and say who it is."""
        self.clock = self.clocks.measure()
        facts = wire.host_facts(*self.master)
        self.runner.send_message(wire.HELLO, facts | {"clock": self.clock.to_json()})

    # -- a point ----------------------------------------------------------

    def on_plan(self, environment: Any, msg: Any, **_kw: Any) -> None:
        """Start the point's client processes; READY once each has opened
        its database (or failed, or the bound passed).  A plan this worker
        cannot read ends it (self.failure): nothing is made before."""
        data = msg.data
        if self.current is not None:
            self.current.close()
        try:
            read = [ProcessPlan.from_json(p) for p in data["plans"]]
        except (KeyError, TypeError, ValueError, AttributeError, ConfigError) as e:
            self.fail(f"the master's plan for point {data['point']} is unreadable "
                      f"({type(e).__name__}: {str(e)[:80]}): is it this version's "
                      "vfab-bench?")  # fmt: skip
            return
        if any(p.kind not in concurrency.KINDS for p in read):
            self.fail(f"the master's plan for point {data['point']} names an "
                      "unknown concurrency kind")  # fmt: skip
            return
        scratch = Path(tempfile.mkdtemp(prefix="vfab-worker-"))
        record = bool(data["record"])
        plans = [
            dataclasses.replace(
                p,
                history_path=str(scratch / f"process-{j}.jsonl") if record else None,
                stderr_path=str(scratch / f"process-{j}.stderr"),
            )
            for j, p in enumerate(read)
        ]
        point = self.current = _Point(int(data["point"]), plans, scratch)
        clients = sum(len(p.clients) for p in plans)
        kind = plans[0].kind if plans else "processes"
        self.say(
            f"point {point.point}: {plural(clients, 'client')} in "
            f"{plural(len(plans), 'process', 'processes')}"
            + ("" if kind == "processes" else f" ({kind})")
        )
        point.procs.start()  # the main thread: PR_SET_PDEATHSIG's parent
        ready = _blocking(point.procs.wait_ready, float(data["ready_timeout_s"]))
        self.runner.send_message(
            wire.READY,
            {"point": point.point, "ready": ready, "processes": len(plans)},
        )

    def on_go(self, environment: Any, msg: Any, **_kw: Any) -> None:
        point = self._point(msg)
        if point is None or point.go is not None:
            return
        plan = point.plans[0].plan if point.plans else None
        point.go = point.procs.go(float(msg.data["delta"]))
        if plan is not None:
            point.end_at = point.go + plan.warmup_s + plan.duration_s
            gevent.spawn(self._measure, point, point.go + plan.warmup_s)
        gevent.spawn(self._finish, point, float(msg.data["results_timeout_s"]))

    def on_kill(self, environment: Any, msg: Any, **_kw: Any) -> None:
        point = self._point(msg)
        if point is not None:
            point.procs.kill(int(msg.data["process"]))

    def on_stop(self, environment: Any, msg: Any, **_kw: Any) -> None:
        point = self._point(msg)
        if point is not None:
            point.procs.stop.set()
            point.stopped.set()

    def fail(self, line: str) -> None:
        """End this worker: *line* is what main() says (exit 2)."""
        self.failure = self.failure or line
        gevent.spawn(self.runner.quit)

    def _point(self, msg: Any) -> _Point | None:
        point = self.current
        if point is None or point.point != int(msg.data["point"]):
            return None
        return point

    def _measure(self, point: _Point, at: float) -> None:
        gevent.sleep(max(0.0, at - time.monotonic()))
        point.busy_from = host_busy_s()

    def _finish(self, point: _Point, timeout: float) -> None:
        """At the window's end (or a STOP), each process's result, the rest
        of the history and the host's CPU, to the master."""
        if point.end_at is not None:
            point.stopped.wait(max(0.0, point.end_at - time.monotonic()))
        busy_to = host_busy_s()
        results = _blocking(point.procs.results, timeout)
        busy = (
            None
            if point.busy_from is None or busy_to is None
            else round(busy_to - point.busy_from, 3)
        )
        self.runner.send_message(
            wire.RESULT,
            {
                "point": point.point,
                "results": [_plain(r) for r in results],
                "history": self._history(point),
                "stderr": _stderr(point.plans),
                "cpu_busy_s": busy,
            },
        )
        if self.current is point:
            self.current = None
        point.close()
        self.points += 1

    # -- the history ------------------------------------------------------

    def on_report(self, client_id: str, data: dict[str, Any], **_kw: Any) -> None:
        """The history the clients wrote since the last report rides with
        locust's stats report (every 3 s)."""
        point = self.current
        if point is not None:
            data[wire.POINT_KEY] = point.point
            data[wire.HISTORY_KEY] = self._history(point)

    def _history(self, point: _Point) -> list[str]:
        """New history lines (JSON text), each session record on this
        host's clock."""
        out = []
        clock = self.clock.to_json()
        for tail in point.tails:
            for line in tail.read():
                if line.startswith('{"session"'):
                    record = json.loads(line)
                    record["clock"] = clock
                    line = json.dumps(record)
                out.append(line)
        return out


def _blocking(function: Callable[..., Any], *args: Any) -> Any:
    """*function* in gevent's thread pool: it blocks in C (a semaphore, a
    pipe), and this process's heartbeats must go on meanwhile."""
    return gevent.get_hub().threadpool.apply(function, args)


def _plain(result: Any) -> Any:
    """A process's result as msgpack carries it (tuples as lists)."""
    return None if result is None else list(result)


def _stderr(plans: list[ProcessPlan]) -> dict[str, Any]:
    """How many lines the processes wrote on stderr, and the last."""
    lines: list[str] = []
    for plan in plans:
        if plan.stderr_path is not None:
            try:
                text = Path(plan.stderr_path).read_text(errors="replace")
            except OSError:
                continue
            lines += [ln.strip() for ln in text.splitlines() if ln.strip()]
    return {"lines": len(lines), "last": lines[-1][:200] if lines else ""}


@dataclasses.dataclass(frozen=True)
class WorkerEnd:
    """How a worker's run ended: the points it served, and, when its master
    went silent mid-run (locust's heartbeat timeout), for how long."""

    points: int
    master_silent_s: float | None = None


def serve(
    host: str, port: int, token: str, connect_timeout_s: float, say: Say
) -> WorkerEnd:
    """Join the master at *host*:*port* (frames sealed with *token*) and run
    the clients of each point it places here until its run ends.
    ConfigError, one line: no master answered within *connect_timeout_s*,
    or it sent what cannot be run."""
    where = f"{host}:{port}"
    wire.quiet_interrupts()
    environment = Environment(user_classes=[wire.ScaleClient])
    junk = trust.Junk(say, "a master")
    say(f"connecting to the master at {where}, at most {connect_timeout_s:g} s")
    try:
        with gevent.Timeout(connect_timeout_s):
            runner = trust.worker_runner(
                environment, host, port, token, junk, wire.FROM_MASTER
            )
    except (gevent.Timeout, ConnectionError):
        if junk.broken is not None:
            raise ConfigError(junk.broken) from None
        raise ConfigError(
            f"no master answered at {where} within {connect_timeout_s:g} s"
            f"{junk.words()} (is `vfab-bench scale --workers N` running there, "
            "and its token the one given?)"
        ) from None
    worker = Host(runner, (host, port), say)
    junk.on_broken = worker.fail
    if junk.broken is not None:
        worker.fail(junk.broken)
    try:
        worker.hello()
        say("connected; waiting for the master's points")
        runner.greenlet.join()
    finally:
        if worker.current is not None:
            worker.current.close()
        # locust's quitting event: the worker tells its master it quits (a
        # worker stopped mid-point is then lost at once, not 3 s later).
        environment.events.quitting.fire(environment=environment)
        runner.quit()
    if worker.failure is not None:
        raise ConfigError(worker.failure)
    heard = runner.last_heartbeat_timestamp
    if heard is not None and heard < time.time() - MASTER_HEARTBEAT_TIMEOUT + 5:
        return WorkerEnd(worker.points, float(MASTER_HEARTBEAT_TIMEOUT))
    return WorkerEnd(worker.points)
