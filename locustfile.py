"""Concurrent ZEO clients doing virtual-fab work: `locust -f locustfile.py`.

Start a server first (`vfab-bench serve --storage file --size small`), then
run locust from this directory so that locust.conf applies (web UI and
master on 127.0.0.1, a stop timeout).  The target is locust's Host (the
web UI form's one field naming it; on the command line also --target or
--zeo-address).  Options beside locust's own, also in the form: --skew,
--retries, --backoff-ms and one --weight-<operation> per operation.
docs/locust.md has the details.

This file stays thin: the operations, the ZEO client per process and the
timing live in scenarios.load (mix, session, history, consistency, options) and
scenarios.clients.remote (plugin; guard: the distributed mode's token and seals).
"""

from __future__ import annotations

import random

from locust import User, constant, events, task
from locust.exception import StopUser

from scenarios.clients.remote import guard
from scenarios.clients.remote.plugin import (
    ProcessClient,
    TimedSession,
    add_locust_options,
    report_connect_failure,
)
from storages import StorageError

client = ProcessClient()
client.install()
# --master and --worker hear only this run's sealed peers (docs/locust.md)
guard.install(client)
events.init_command_line_parser.add_listener(add_locust_options)


class VfabUser(User):
    """A customer or lab of the exchange, working without pause (closed
    loop: the run measures capacity, not think time)."""

    wait_time = constant(0)

    def on_start(self) -> None:
        self.zodb: TimedSession | None = None
        try:
            self.zodb = TimedSession(self.environment, client.session(random.Random()))
        except StorageError as e:
            report_connect_failure(self.environment, e)

    @task
    def work(self) -> None:
        if self.zodb is None:
            raise StopUser()
        self.zodb.run_next()

    def on_stop(self) -> None:
        if self.zodb is not None:
            self.zodb.close()
            self.zodb = None
