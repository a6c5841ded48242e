"""The locustfile's users as locust requests: each operation one request of
type "zodb", timed, sized by the bytes it loaded and stored (Transferred);
each conflict retried counted apart, in a "conflict" row outside locust's
total (retried)."""

from __future__ import annotations

import time
from typing import Any

from locust.env import Environment

from scenarios.clients.loop import attempt
from scenarios.load.session import Session


class Transferred:
    """The bytes of the records a connection loads from its storage (ZEO's
    client cache or the server: object-cache hits load nothing) and
    stores, counted at the connection's own storage instance (one per
    connection, ZODB.mvccadapter), so that a request's size is real."""

    def __init__(self, connection: Any) -> None:
        self.bytes = 0
        storage = connection._storage
        load, store = storage.load, storage.store

        def counted_load(oid: bytes, *args: Any) -> Any:
            found = load(oid, *args)
            self.bytes += len(found[0] or b"")
            return found

        def counted_store(oid: bytes, serial: bytes, data: bytes, *args: Any) -> Any:
            self.bytes += len(data or b"")
            return store(oid, serial, data, *args)

        storage.load, storage.store = counted_load, counted_store


class TimedSession:
    """A Session that reports each operation as locust requests.  Locust
    schedules its users (a task, then its wait time): one task is one
    operation of the shared loop (scenarios.clients.loop.attempt), timed by
    the Session, or, when it raised, from after the pick to its end; its
    size is the bytes of the records it loaded and stored (Transferred)."""

    def __init__(self, environment: Environment, session: Session) -> None:
        self.environment = environment
        self.session = session
        self.transferred = Transferred(session.connection)

    def run_next(self) -> None:
        op = self.session.pick()
        before = self.transferred.bytes
        done = attempt(self.session, time.monotonic(), op)
        size = self.transferred.bytes - before
        outcome = done.outcome
        if outcome is None:
            # Not a conflict (the server went away, a bug): a failed request
            # with its reason, as a protocol client reports a broken call.
            ms = (done.ended - done.intended) * 1000
            fire(self.environment, "zodb", op.name, ms, done.raised, size)
            return
        for ms in outcome.conflicts_ms:
            retried(self.environment, op.name, ms)
        fire(self.environment, "zodb", op.name, outcome.elapsed_ms, outcome.error, size)

    def close(self) -> None:
        self.session.close()


def report_connect_failure(environment: Environment, error: BaseException) -> None:
    """A user that cannot start shows as a failed request, so a run where
    users died is never summarized as healthy."""
    fire(environment, "zodb", "connect", 0, error)


def retried(environment: Environment, name: str, ms: float) -> None:
    """One attempt of operation *name* that conflicted and was retried: a
    row of type "conflict" beside the operation's, kept out of locust's
    total (its RPS and failures count operations, as verify does), and
    never a failure (the operation's own row says whether it failed)."""
    # float ms, as locust's own log_request passes them (typed int there)
    environment.stats.get(name, "conflict").log(ms, 0)  # type: ignore[arg-type]


def fire(
    environment: Environment,
    kind: str,
    name: str,
    ms: float,
    error: BaseException | None = None,
    size: int = 0,
) -> None:
    """One locust request: *kind* ("zodb"), *name* (the operation's), *ms*,
    the *error* that failed it, and its *size* in bytes (Transferred)."""
    environment.events.request.fire(
        request_type=kind,
        name=name,
        response_time=ms,
        response_length=size,
        exception=error,
        context={},
    )
