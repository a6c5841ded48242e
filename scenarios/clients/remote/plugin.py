"""The locust side of the ZEO load: options, the per-process client, the
wrapper that times operations and fires locust requests, and the check.

The process model is the one that works under gevent (see the design
notes): each locust process that runs users holds one ZODB.DB over one ZEO
ClientStorage, opened when a test starts (never at import: --processes forks
after the locustfile is imported; never on a master, which runs no users)
and closed when it stops.  Each user gets its own transaction manager and
connection from that DB.  More ZEO client connections means more locust
processes.

Every operation is one request of type "zodb" named after the operation,
timed from start to final success or failure in ms (retries included); every
conflicting attempt is counted in a row of type "conflict" under the same
name, so the UI shows the conflict rate beside the operation, but kept out
of locust's total: its RPS and failures count operations.  Only an
operation whose retries ran out is a failure, as in verify.

The target is locust's own Host (--host, LOCUST_HOST, the web UI's Host
field: the form's only field naming it), which replaces --zeo-address,
else --target, else --zeo-address (default: the server `vfab-bench serve`
starts); --host and --target naming different ones are refused.  The
target in effect is shown as locust's Host, so the web UI shows it and no
"no host" banner.

When a test starts, the master (or the single local process) reads the
data set's baseline (scenarios.checker.consistency), and each worker learns
its clock's offset to the master's (scenarios.load.clock: none on the same
kernel).  Each worker sends the history of its users' attempts
(scenarios.load.history) with every stats report, so what a worker did
before it died reaches the master; when a test stops, each worker stops
its users and sends the rest.  When locust quits, the master (or the
single local process) checks the stored data against baseline and history,
logs "consistency: N violations" with the first few, writes the history to
--history FILE if given, and exits with EXIT_VIOLATIONS on any violation,
EXIT_INVARIANTS (scenarios.errors) when the data could not be fully
checked: a worker that was lost (its last attempts never reached the
master, and the findings they could explain are not counted) says "not
fully checked: worker X lost", never a violation for that.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import random
import secrets
import signal
from pathlib import Path
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import (
    STATE_MISSING,
    STATE_RUNNING,
    STATE_SPAWNING,
    MasterRunner,
    WorkerRunner,
)

from scenarios.checker import consistency, words
from scenarios.clients.remote.forked import (  # noqa: F401 - guard's
    end_forked_workers,
    wait_forked_workers,
)
from scenarios.clients.remote.requests import (  # noqa: F401 - the locustfile's
    TimedSession,
    report_connect_failure,
)
from scenarios.clients.remote.senders import Senders, node_of
from scenarios.clients.remote.stats import (
    keep_stats_through_json,
    print_summary,
    stop_csv_writer,
)
from scenarios.clients.remote.worker_clock import (
    UNKNOWN_CLOCK_S,
    WorkerClock,
    answer_clocks,
)
from scenarios.errors import (
    EXIT_BAD_INPUT,
    EXIT_INVARIANTS,
    EXIT_VIOLATIONS,
    ConfigError,
)
from scenarios.load.clock import Clock
from scenarios.load.history import History, Part, write_history
from scenarios.load.mix import LoadConfig
from scenarios.load.options import (
    add_options,
    config_from,
    target_of,
)
from scenarios.load.session import Session, open_database, preflight
from scenarios.outputs import check_output
from storages import StorageError

log = logging.getLogger("vfab")

#: Messages between master and workers: "stop your users and send your
#: history", and the answer carrying it (the clock's: worker_clock).
FLUSH = "vfab_flush"
FINAL = "vfab_final"
#: The key of a worker's history in its stats reports.
HISTORY_KEY = "vfab_history"
#: Seconds a master waits for the answers beyond the users' stop timeout.
FLUSH_GRACE_S = 10.0


#: Options that name the target beside locust's Host: the command line's
#: only; the web UI form names it in one field, locust's Host.
NOT_IN_FORM = ("target", "zeo_address")


def add_locust_options(parser: Any) -> None:
    """The suite's options on locust's parser (scenarios.load.options), those
    naming the target left out of the web UI form (NOT_IN_FORM)."""
    add_options(parser)
    for action in parser._actions:
        if action.dest in NOT_IN_FORM:
            action.include_in_web_ui = False


def quiet_interrupts() -> None:
    """A stop signal (KeyboardInterrupt, scenarios.interrupts.Terminated)
    raised in whichever greenlet runs when it comes still reaches the main
    greenlet, and the command says it in one line; gevent's hub would print
    it first ("KeyboardInterrupt", traceback and all) as an error of that
    greenlet."""
    hub = gevent.get_hub()
    if not issubclass(KeyboardInterrupt, hub.NOT_ERROR):
        hub.NOT_ERROR = (*hub.NOT_ERROR, KeyboardInterrupt)


class ProcessClient:
    """This locust process's one ZODB.DB over one ZEO client, its users'
    history, and (on the node that checks) the baseline and whether a test
    ran.

    When a test stops, the master asks every worker to stop its users and
    send its history (FLUSH), and waits for the answers (FINAL) before
    locust goes on stopping: locust's own last stats report from a worker
    can arrive after the master stopped listening.
    """

    def __init__(self) -> None:
        self.db: Any = None
        self.config: LoadConfig | None = None
        self.error: str | None = None
        self.history = History()
        self.baseline: consistency.Baseline | None = None
        #: how the history names this process's users (a worker's id)
        self.node = "l"
        self.sessions = 0
        self.tested = False
        #: workers asked for their history, and those that sent it
        self.flushing: set[str] = set()
        self.flushed: set[str] = set()
        #: workers whose history did not all arrive: node prefix -> name
        self.lost: dict[str, str] = {}
        #: what each worker's records may be of
        self.senders = Senders(log.warning)
        #: this process's token in its transactions' notes
        self.run_token = secrets.token_hex(4)
        #: this process's clock against the master's (a worker measures it)
        self.clock = Clock()
        self._clocks: WorkerClock | None = None
        #: this process's locust environment (on the node that checks)
        self.environment: Environment | None = None
        #: a worker --processes forked beside its master (guard sets it)
        self.forked = False
        #: the Host this process showed (the target in effect), to tell it
        #: from one the user typed into the web UI's Host field
        self.host_shown: str | None = None

    def load_config(self, environment: Environment) -> LoadConfig:
        """The options' LoadConfig, with locust's Host as the target when
        the user gave --host, typed a new one into the web UI's Host field
        (its only field naming the target), or, on a worker, always (its
        Host is the master's target in effect); the target in effect then
        becomes locust's Host and the options' --target, which workers
        receive with each test."""
        options = environment.parsed_options
        host = str(environment.host or getattr(options, "host", "") or "").strip()
        given = str(getattr(options, "target", "") or "").strip()
        if isinstance(environment.runner, WorkerRunner):
            chosen = bool(host)
        elif self.host_shown is None:  # the command line's
            if host and given and host != given:
                raise ConfigError("give --host or --target, not both")
            chosen = bool(host)
        else:
            chosen = bool(host) and host != self.host_shown
        if chosen:
            options = argparse.Namespace(
                **{**vars(options), "target": host, "zeo_address": ""}
            )
        config = config_from(options)
        shown = target_of(options)
        environment.host = shown
        if environment.parsed_options is not None:
            vars(environment.parsed_options).update(
                host=shown, target=shown, zeo_address=""
            )
        self.host_shown = shown
        return config

    def interrupt_in_main(self, environment: Environment) -> None:
        """Ctrl-C raises KeyboardInterrupt in the main greenlet only (locust's
        main waits there and shuts down cleanly): Python's own handler
        raises it in whichever greenlet runs, often a user's inside ZODB or
        ZEO code, which logs it with tracebacks and breaks the process's
        ZEO client.  A worker --processes forked beside its master (the
        same process group) leaves it to the master while its users run:
        the master stops them, takes its history and tells it to quit."""
        hub = gevent.get_hub()
        main = hub.parent

        def interrupt() -> None:
            runner = environment.runner
            worker = isinstance(runner, WorkerRunner)
            if isinstance(runner, WorkerRunner) and self.forked and runner.user_count:
                return
            if not worker:
                log.info("Ctrl-C: stopping; the data is checked once the users stop")
            hub.loop.run_callback(main.throw, KeyboardInterrupt)

        gevent.signal_handler(signal.SIGINT, interrupt)

    # -- events ---------------------------------------------------------------

    def on_init(self, environment: Environment, **_kw: Any) -> None:
        """Check the options before any user starts (not on workers, whose
        options come from the master with each test)."""
        # ZEO logs every connect and cache file at INFO: noise among locust's.
        logging.getLogger("ZEO").setLevel(logging.WARNING)
        quiet_interrupts()
        self.interrupt_in_main(environment)
        runner = environment.runner
        if isinstance(runner, WorkerRunner):
            runner.register_message(FLUSH, self.on_flush)
            self._clocks = WorkerClock(runner)
            environment.events.report_to_master.add_listener(self.on_report)
            return
        if isinstance(runner, MasterRunner):
            runner.register_message(FINAL, self.on_final)
            answer_clocks(runner)
            environment.events.worker_report.add_listener(self.on_worker_report)
        keep_stats_through_json(environment)
        self.environment = environment
        options = environment.parsed_options
        try:
            config = self.load_config(environment)
        except (ConfigError, StorageError) as e:
            log.error("%s", e)
            end_forked_workers()
            raise SystemExit(EXIT_BAD_INPUT) from None
        history = getattr(options, "history", "")
        try:
            if history:
                # locust has no --force: an old history file is replaced.
                check_output(Path(history), True, flag="--history")
            preflight(config)
        except (ConfigError, StorageError) as e:
            if isinstance(e, ConfigError) or (options is not None and options.headless):
                log.error("%s", e)
                end_forked_workers()
                raise SystemExit(EXIT_BAD_INPUT) from None
            # The web UI can name another server before starting.
            log.warning("%s", e)

    def on_test_start(self, environment: Environment, **_kw: Any) -> None:
        self.tested = True
        self.error = None
        try:
            self.config = self.load_config(environment)
        except (ConfigError, StorageError) as e:
            self.error = str(e)
            log.error("%s", e)
            return
        runner = environment.runner
        if isinstance(runner, WorkerRunner):
            self.node = node_of(runner.client_id)
            # Unordered in real time until the master's clock answers (not
            # waited for here: this event runs in the worker's message loop).
            self.clock = Clock(0.0, UNKNOWN_CLOCK_S)
            gevent.spawn(self.measure_clock, runner)
        elif self.baseline is None:
            # The state the history starts from, before any user runs (read
            # and closed before this process opens its own client: one ZEO
            # client at a time under gevent).
            try:
                self.baseline = consistency.read_baseline(self.config.target)
            except StorageError as e:
                self.error = str(e)
                log.error("%s", e)
                return
        if isinstance(runner, MasterRunner):
            return  # the master runs no users: no ZEO client here
        users = getattr(environment.parsed_options, "num_users", None) or 0
        try:
            self.db = open_database(self.config.target, pool_size=max(7, users))
        except StorageError as e:
            self.error = str(e)
            log.error("%s", e)

    def on_test_stopping(self, environment: Environment, **_kw: Any) -> None:
        """On the master: collect every worker's history before stopping;
        a worker that is missing or does not answer is lost."""
        runner = environment.runner
        if not isinstance(runner, MasterRunner):
            return
        workers = list(runner.clients.all)
        missing = {c.id for c in workers if c.state == STATE_MISSING}
        self.flushing = {c.id for c in workers} - missing
        self.flushed = set()
        runner.send_message(FLUSH)
        wait = (environment.stop_timeout or 0) + FLUSH_GRACE_S
        with gevent.Timeout(wait, False):
            while not self.flushing <= self.flushed:
                gevent.sleep(0.05)
        silent = self.flushing - self.flushed
        for worker in sorted(missing | silent):
            self.lost[node_of(worker)] = f"worker {worker}"
        if missing or silent:
            log.warning(
                "%d of %d workers were lost (missing, or silent for %.0f s); "
                "what they did before their last report is checked, the rest "
                "is not",
                len(missing | silent),
                len(workers),
                wait,
            )

    def on_flush(self, environment: Environment, msg: Any, **_kw: Any) -> None:
        """On a worker: stop the users (each finishes its operation; the
        test_stop event then closes the DB) and send the rest of the
        history."""
        assert environment.runner is not None
        environment.runner.stop()
        environment.runner.send_message(FINAL, self.history.drain())

    def on_final(self, environment: Environment, msg: Any, **_kw: Any) -> None:
        if self.joined(msg.node_id):
            self.history.absorb(self.senders.own(msg.node_id, msg.data or []))
            self.flushed.add(msg.node_id)

    def on_report(self, client_id: str, data: dict[str, Any], **_kw: Any) -> None:
        """On a worker: the history since the last report rides along with
        locust's stats report (every 3 s)."""
        data[HISTORY_KEY] = self.history.drain()

    def on_worker_report(
        self, client_id: str, data: dict[str, Any], **_kw: Any
    ) -> None:
        if self.joined(client_id):
            records = data.get(HISTORY_KEY) or []
            self.history.absorb(self.senders.own(client_id, records))

    def joined(self, worker: str) -> bool:
        """Whether *worker* joined the master's run (as locust counts its
        reports): every message is sealed with the run's token and of its
        shape (scenarios.clients.remote.guard), and the history is taken only from
        a worker that joined."""
        runner = self.environment.runner if self.environment else None
        return not isinstance(runner, MasterRunner) or worker in runner.clients

    # -- the clock --------------------------------------------------------

    def measure_clock(self, runner: WorkerRunner) -> None:
        """This worker's clock against the master's (scenarios.clients.remote
        .worker_clock); then the sessions' records say so (times are
        recorded raw: the checker applies the offset)."""
        if self._clocks is None:
            self._clocks = WorkerClock(runner)
        self.clock = self._clocks.measure()
        for record in list(self.history.sessions.values()):
            if record.client.startswith(self.node):
                self.history.session(dataclasses.replace(record, clock=self.clock))

    def on_test_stop(self, environment: Environment, **_kw: Any) -> None:
        db, self.db = self.db, None
        if db is not None:
            db.close()
        self.sessions = 0

    def on_quitting(self, environment: Environment, **_kw: Any) -> None:
        runner = environment.runner
        if isinstance(runner, WorkerRunner) or not self.tested or self.config is None:
            return
        if runner is not None and runner.state in (STATE_SPAWNING, STATE_RUNNING):
            # Ctrl-C or SIGTERM while users run: stop them before checking, so
            # no write is in flight and every history is in.
            runner.stop()
        if self.baseline is None:
            log.error("consistency not checked: no baseline was read")
            environment.process_exit_code = EXIT_INVARIANTS
            return
        try:
            report = consistency.verify(
                self.config.target, self.baseline, self.history, lost=self.lost
            )
        except StorageError as e:
            log.error("consistency not checked: %s", e)
            environment.process_exit_code = EXIT_INVARIANTS
            return
        path = getattr(environment.parsed_options, "history", "")
        if path:
            context = {"target": self.config.address_text, "check": report.to_json()}
            parts = [Part(context, list(self.history), dict(self.history.sessions))]
            try:
                write_history(Path(path), parts)
            except OSError as e:
                log.error("cannot write %s: %s", path, e.strerror)
        refused = self.senders.words()
        if refused:
            log.warning("%s", refused)
        say = log.info if report.ok else log.error
        for line in check_lines(report):
            say("%s", line)
        if report.ok:
            return
        environment.process_exit_code = (
            EXIT_VIOLATIONS if report.ok is False else EXIT_INVARIANTS
        )

    # -- users ----------------------------------------------------------------

    def session(self, rng: random.Random | None = None) -> Session:
        """A new user's session (its own transaction manager and connection),
        or StorageError when this process has no database."""
        if self.db is None or self.config is None:
            raise StorageError(self.error or "no ZEO client in this process")
        self.sessions += 1
        if self.sessions > self.db.getPoolSize():
            self.db.setPoolSize(self.sessions)  # ZODB only warns past it
        name = f"{self.node}u{self.sessions}"
        return Session(
            self.db,
            self.config,
            self.history,
            rng,
            client=name,
            run=self.run_token,
            clock=self.clock,
        )

    def install(self) -> None:
        """Wire the listeners into locust's events."""
        events.init.add_listener(self.on_init)
        events.test_start.add_listener(self.on_test_start)
        events.test_stopping.add_listener(self.on_test_stopping)
        events.test_stop.add_listener(self.on_test_stop)
        events.quitting.add_listener(self.on_quitting)
        events.quit.add_listener(self.print_summary)
        events.quit.add_listener(stop_csv_writer)
        events.quit.add_listener(wait_forked_workers)

    def print_summary(self, **_kw: Any) -> None:
        """locust's final summary, which it leaves out when it saves
        --json-file (stats.print_summary)."""
        if self.environment is not None:
            print_summary(self.environment)


def check_lines(report: Any) -> list[str]:
    """The check as lines a person reads: the verdict first, then what was
    checked, a line each, then the first violations.  The verdict says
    first, in plain words, whether the data stayed right (checker.words)."""
    verdict = words.said(report.result())
    what = [f"  {part}" for part in report.what().split("; ")]
    return [verdict, *what, *(f"  {line}" for line in report.lines())]
