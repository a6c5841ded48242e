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
conflicting attempt is one request of type "conflict" under the same name,
so the UI shows the conflict rate beside the operation.  Only an operation
whose retries ran out is a failure.

Workers send what their users committed (the Journal) to the master with
their regular stats reports; when locust quits, the master (or the single
local process) checks the stored data against it, logs the result and
exits with EXIT_INVARIANTS if it does not hold.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import STATE_INIT, STATE_STOPPED, MasterRunner, WorkerRunner

from scenarios import load
from scenarios.config import ConfigError
from storages import StorageError

log = logging.getLogger("vfab")

#: Exit status when the data's invariants do not hold (or cannot be checked).
#: locust itself uses 1 for failures and errors, 2 for crashed greenlets.
EXIT_INVARIANTS = 3

#: Key of our entries in the data workers report to the master.
REPORT_KEY = "vfab"


def add_options(parser: Any) -> None:
    """Our options, on locust's command line, locust.conf and the web UI
    form (web UI values replace the command line's for the next test)."""
    parser.add_argument(
        "--zeo-address",
        default=load.DEFAULT_ADDRESS,
        metavar="HOST:PORT",
        help="ZEO server holding a vfab data set (vfab-bench serve)",
    )
    parser.add_argument(
        "--skew",
        type=float,
        default=1.0,
        metavar="S",
        help="Zipf exponent for picking capabilities (0: uniform; higher: "
        "more users on the same few, more conflicts on change_price)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=10,
        metavar="N",
        help="retries of an operation after a conflict before it fails",
    )
    parser.add_argument(
        "--backoff-ms",
        type=float,
        default=5.0,
        metavar="MS",
        help="first retry backoff window in ms (doubles per retry, jittered)",
    )
    for op in load.OPERATIONS:
        parser.add_argument(
            f"--weight-{op.name.replace('_', '-')}",
            type=int,
            default=op.weight,
            metavar="W",
            help=f"weight of {op.name}: {op.description}",
        )


def config_from(options: Any) -> load.LoadConfig:
    """The LoadConfig the parsed options (or web UI form) ask for; ConfigError
    or StorageError naming what is wrong."""
    try:
        weights = {
            op.name: int(getattr(options, f"weight_{op.name}"))
            for op in load.OPERATIONS
        }
        return load.LoadConfig.from_values(
            address=str(options.zeo_address),
            weights=weights,
            skew=float(options.skew),
            retries=int(options.retries),
            backoff_ms=float(options.backoff_ms),
        )
    except (TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"bad option value: {e}") from None


class ProcessClient:
    """This locust process's one ZODB.DB over one ZEO client, its users'
    journal, and (on the node that checks) whether a test ran."""

    def __init__(self) -> None:
        self.db: Any = None
        self.config: load.LoadConfig | None = None
        self.error: str | None = None
        self.journal = load.Journal()
        self.sessions = 0
        self.tested = False
        #: set when this process's users stopped: its next report is its last
        self.users_stopped = False
        #: worker id -> whether its last report was sent after its users stopped
        self.final_reports: dict[str, bool] = {}

    # -- events ---------------------------------------------------------------

    def on_init(self, environment: Environment, **_kw: Any) -> None:
        """Check the options before any user starts (not on workers, whose
        options come from the master with each test)."""
        # ZEO logs every connect and cache file at INFO: noise among locust's.
        logging.getLogger("ZEO").setLevel(logging.WARNING)
        runner = environment.runner
        if isinstance(runner, WorkerRunner):
            return
        options = environment.parsed_options
        try:
            config = config_from(options)
            if options is not None and options.headless:
                load.preflight(config)
        except (ConfigError, StorageError) as e:
            log.error("%s", e)
            environment.process_exit_code = 2
            raise SystemExit(2) from None

    def on_test_start(self, environment: Environment, **_kw: Any) -> None:
        self.tested = True
        self.users_stopped = False
        self.final_reports.clear()
        self.error = None
        try:
            self.config = config_from(environment.parsed_options)
        except (ConfigError, StorageError) as e:
            self.error = str(e)
            log.error("%s", e)
            return
        if isinstance(environment.runner, MasterRunner):
            return  # the master runs no users: no ZEO client here
        users = getattr(environment.parsed_options, "num_users", None) or 0
        try:
            self.db = load.open_database(self.config.address, pool_size=max(7, users))
        except StorageError as e:
            self.error = str(e)
            log.error("%s", e)

    def on_test_stop(self, environment: Environment, **_kw: Any) -> None:
        db, self.db = self.db, None
        if db is not None:
            db.close()
        self.sessions = 0
        self.users_stopped = True

    def on_report_to_master(self, data: dict[str, Any], **_kw: Any) -> None:
        entries = self.journal.drain()
        entries["final"] = self.users_stopped  # type: ignore[assignment]
        data[REPORT_KEY] = entries

    def on_worker_report(
        self, client_id: str, data: dict[str, Any], **_kw: Any
    ) -> None:
        entries = data.get(REPORT_KEY)
        if entries:
            self.journal.absorb(entries)
            self.final_reports[client_id] = bool(entries.get("final"))

    def on_quitting(self, environment: Environment, **_kw: Any) -> None:
        runner = environment.runner
        if isinstance(runner, WorkerRunner) or not self.tested or self.config is None:
            return
        if runner is not None and runner.state not in (STATE_INIT, STATE_STOPPED):
            # Ctrl-C or SIGTERM while users run: stop them before checking,
            # so no write is in flight and this process's ZEO client is closed.
            runner.stop()
            if isinstance(runner, MasterRunner):
                self._await_final_reports()
        if isinstance(runner, MasterRunner) and self.final_reports:
            late = [w for w, final in self.final_reports.items() if not final]
            if late:
                log.warning(
                    "%d of %d workers sent no report after their users stopped; "
                    "their last writes were not checked",
                    len(late),
                    len(self.final_reports),
                )
        try:
            report = load.verify(self.config.address, self.journal)
        except StorageError as e:
            log.error("invariants not checked: %s", e)
            environment.process_exit_code = EXIT_INVARIANTS
            return
        if report.ok:
            log.info("%s", report.summary())
        else:
            log.error("%s", report.summary())
            for line in report.problems:
                log.error("  %s", line)
            environment.process_exit_code = EXIT_INVARIANTS

    def _await_final_reports(self, timeout: float = 5.0) -> None:
        """Give workers' next stats reports (every 3 s) time to arrive."""
        deadline = gevent.get_hub().loop.now() + timeout
        while gevent.get_hub().loop.now() < deadline:
            if self.final_reports and all(self.final_reports.values()):
                return
            gevent.sleep(0.2)

    # -- users ----------------------------------------------------------------

    def session(self, rng: random.Random | None = None) -> load.Session:
        """A new user's session (its own transaction manager and connection),
        or StorageError when this process has no database."""
        if self.db is None or self.config is None:
            raise StorageError(self.error or "no ZEO client in this process")
        self.sessions += 1
        if self.sessions > self.db.getPoolSize():
            self.db.setPoolSize(self.sessions)  # ZODB only warns past it
        return load.Session(self.db, self.config, self.journal, rng)

    def install(self) -> None:
        """Wire the listeners into locust's events."""
        events.init.add_listener(self.on_init)
        events.test_start.add_listener(self.on_test_start)
        events.test_stop.add_listener(self.on_test_stop)
        events.report_to_master.add_listener(self.on_report_to_master)
        events.worker_report.add_listener(self.on_worker_report)
        events.quitting.add_listener(self.on_quitting)


class TimedSession:
    """A load.Session that reports each operation as locust requests."""

    def __init__(self, environment: Environment, session: load.Session) -> None:
        self.environment = environment
        self.session = session

    def run_next(self) -> None:
        op = self.session.pick()
        outcome = self.session.run(op)
        fire = self.environment.events.request.fire
        for ms in outcome.conflicts_ms:
            fire(
                request_type="conflict",
                name=op.name,
                response_time=ms,
                response_length=0,
                exception=None,
                context={},
            )
        fire(
            request_type="zodb",
            name=op.name,
            response_time=outcome.elapsed_ms,
            response_length=0,
            exception=outcome.error,
            context={},
        )

    def close(self) -> None:
        self.session.close()


def report_connect_failure(environment: Environment, error: BaseException) -> None:
    """A user that cannot start shows as a failed request, so a run where
    users died is never summarized as healthy."""
    environment.events.request.fire(
        request_type="zodb",
        name="connect",
        response_time=0,
        response_length=0,
        exception=error,
        context={},
    )
