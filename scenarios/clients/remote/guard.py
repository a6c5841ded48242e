"""The locustfile's distributed mode, guarded: `locust -f locustfile.py
--master` and `--worker` (and `--processes N`, which forks N workers beside
a master) build the runners of scenarios.clients.remote.trust instead of locust's,
so that the master's verdict hears only workers holding the run's token,
and every message either way is checked for its shape before use.  A plain
`locust -f locustfile.py` (one process, its LocalRunner) is left as it is.

install() replaces Environment.create_master_runner and
create_worker_runner when the locustfile is imported: locust imports it
before it makes its runner (locust.main), and a WorkerRunner sends its
first message from its constructor, before any event a plugin could hook.

The token is not a locust option: locust's master sends its parsed options
to every worker in each spawn message, so an option would be handed to
any peer that joins.  Nor is it ever logged: locust's web UI (no
authentication) serves the log at /logs.  A master started with --master
takes $VFAB_WORKER_TOKEN and without it refuses (one line, exit 2), as a
worker does; the workers `--processes` forks beside a master hold the
token their master's process made when it imported this module, before
forking, and nobody else needs it.
"""

from __future__ import annotations

import logging
import os
import signal

import gevent
from locust.argument_parser import parse_locustfile_option
from locust.env import Environment

from scenarios.clients.remote import trust, worker_clock
from scenarios.clients.remote.plugin import (
    FINAL,
    FLUSH,
    HISTORY_KEY,
    ProcessClient,
    end_forked_workers,
    node_of,
)
from scenarios.clients.remote.seal import TOKEN_ENV, new_token, token_from_env
from scenarios.clients.remote.shapes import (
    LOCUST_FROM_MASTER,
    LOCUST_FROM_WORKER,
    RECORDS,
    Shapes,
    none,
    stats,
)
from scenarios.errors import EXIT_BAD_INPUT, ConfigError
from storages.process import die_with_parent

log = logging.getLogger("vfab")

#: What the locustfile's workers send their master, and the master them.
FROM_WORKER: Shapes = {
    **LOCUST_FROM_WORKER,
    **worker_clock.FROM_WORKER,
    "stats": stats({HISTORY_KEY: RECORDS}),
    FINAL: RECORDS,
}
FROM_MASTER: Shapes = {**LOCUST_FROM_MASTER, **worker_clock.FROM_MASTER, FLUSH: none}

#: The token of a master that was given none, made when this process
#: imported the locustfile: the workers --processes forks share it.
_MADE = new_token()
_IMPORTER = os.getpid()


def _refuse(line: str) -> None:
    """Bad input before any work: one line, exit 2."""
    log.error("%s", line)
    end_forked_workers()
    raise SystemExit(EXIT_BAD_INPUT)


def _operators() -> str | None:
    try:
        return token_from_env()
    except ConfigError as e:
        _refuse(str(e))
    return None  # not reached


def master_token(environment: Environment, host: str, port: int) -> str:
    """$VFAB_WORKER_TOKEN; for the master `--processes` makes (no --master
    given), this process's own, which only its forked workers hold; else a
    refusal.  The token's value is never logged (the web UI serves the log)."""
    given = _operators()
    if given is None and not getattr(parse_locustfile_option(), "master", False):
        return _MADE  # --processes: only the workers forked here hold it
    if given is None:
        _refuse(
            f"a master needs a token its workers share: set {TOKEN_ENV} (16 or "
            "more characters, e.g. $(python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(16))')) here and on every worker "
            "(docs/locust.md)"
        )
    options = environment.parsed_options
    locustfile = getattr(options, "locustfile", None) or "locustfile.py"
    where = host if host not in ("", "*") else "THIS-HOST"
    log.info(
        "workers are heard when they hold this run's $%s: %s=<the same token> "
        "locust -f %s --worker --master-host %s --master-port %d",
        TOKEN_ENV, TOKEN_ENV, locustfile, where, port,
    )  # fmt: skip
    return str(given)


def forked_beside_master() -> bool:
    """Whether this process is one of the workers --processes forked beside
    its master: forked after the import by a command line that did not say
    --worker (locust's own first parse tells, which it annotates as a tuple
    but returns options)."""
    launched_as_worker = getattr(parse_locustfile_option(), "worker", False)
    return os.getpid() != _IMPORTER and not launched_as_worker


def worker_token() -> str:
    """$VFAB_WORKER_TOKEN; the token of the master that forked this process
    (--processes without --worker); else a refusal."""
    given = _operators()
    if given is not None:
        return given
    if forked_beside_master():
        return _MADE
    _refuse(
        f"a worker needs its master's token: set {TOKEN_ENV} to the master's "
        "(not a locust option: docs/locust.md)"
    )
    return ""  # not reached


def install(client: ProcessClient) -> None:
    """Make locust build the guarded runners (see the module docstring);
    *client*'s check counts a worker whose sealed message could not be read
    as lost (what it said did not all arrive)."""

    def create_master_runner(
        self: Environment, master_bind_host: str = "*", master_bind_port: int = 5557
    ) -> trust.Master:
        token = master_token(self, master_bind_host, master_bind_port)
        junk = trust.Junk(log.warning, "a worker")

        def garbled(worker: str) -> None:
            client.lost.setdefault(
                node_of(worker), f"worker {worker} (a message it sent was unreadable)"
            )

        junk.on_garbled = garbled
        return trust.master_runner(
            self, master_bind_host, master_bind_port, token, junk, FROM_WORKER
        )

    def create_worker_runner(
        self: Environment, master_host: str, master_port: int
    ) -> trust.Worker:
        token = worker_token()
        if forked_beside_master():
            # Ctrl-C reaches the whole process group: while users run, the
            # master stops the test, takes this worker's history and tells
            # it to quit (ProcessClient.interrupt_in_main).  A master that
            # exits without a quit ends the worker (SIGTERM, locust's stop).
            client.forked = True
            arm = die_with_parent(signal.SIGTERM)
            if arm is not None:
                arm()
            if os.getppid() != _IMPORTER:  # the master exited before that
                raise SystemExit(0)
        junk = trust.Junk(log.warning, "a master")

        def broken(line: str) -> None:
            # a sealed message of the master this worker cannot read: it
            # runs another version; carrying on would send a partial history
            log.error("%s", line)
            self.process_exit_code = EXIT_BAD_INPUT
            if self.runner is not None:
                gevent.spawn(self.runner.quit)

        junk.on_broken = broken
        return trust.worker_runner(
            self, master_host, master_port, token, junk, FROM_MASTER
        )

    Environment.create_master_runner = create_master_runner  # type: ignore[method-assign,assignment]
    Environment.create_worker_runner = create_worker_runner  # type: ignore[method-assign,assignment]
