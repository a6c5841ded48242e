"""One simulated user's Session: its own transaction manager and connection
on the process's one ZODB.DB, every operation one transaction, conflicts
retried a bounded number of times with backoff.

Nothing here imports locust or gevent: the same Session runs in a locust
greenlet and in a plain thread, so the two can be compared.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections.abc import Iterator
from typing import Any

from scenarios.bench.phases import FAB_KEY
from scenarios.load.history import Event, Recorder, accesses, outcome_of
from scenarios.load.mix import LoadConfig, Operation, Popularity
from scenarios.load.target import open_target
from storages import ROOT_KEY, StorageError
from vfab import operations
from vfab.model import VirtualFab


@dataclasses.dataclass
class Outcome:
    """One operation as its user saw it: time from start to final success or
    failure (retries and backoff included), the time each conflicting
    attempt took, and the error that ended it (None: it succeeded)."""

    operation: Operation
    elapsed_ms: float
    conflicts_ms: list[float]
    error: BaseException | None = None


def open_database(
    target: str | tuple[str, int], pool_size: int = 7, wait_timeout: float | None = None
) -> Any:
    """One ZODB.DB on the target (a client spec, or a ZEO (host, port)): what
    each client process holds (ZEO.DB(addr, pool_size=...) would pass
    pool_size to ClientStorage)."""
    if not isinstance(target, str):
        target = f"zeo://{target[0]}:{target[1]}"
    return open_target(target, pool_size=pool_size, wait_timeout=wait_timeout)


def fab_of(connection: Any, address: str = "the server") -> VirtualFab:
    """The data set's VirtualFab on *connection*, or StorageError."""
    try:
        return connection.root()[ROOT_KEY][FAB_KEY]  # type: ignore[no-any-return]
    except KeyError:
        raise StorageError(
            f"no vfab data set at {address}; "
            "start one with: vfab-bench serve --storage file --size small"
        ) from None


class Session:
    """One simulated user: its own transaction manager and connection on a
    shared DB, its own random stream, a login to order sequences as.

    run(op) performs one operation as one transaction: begin, do, commit
    (writes) or abort (reads).  A ConflictError aborts and retries after a
    backoff, up to config.retries times; then the Outcome carries the error.
    Any other exception aborts and propagates.  Every attempt is recorded
    in *history* as an Event (scenarios.load.history) named *client*#n,
    with its outcome, what it read and wrote, and the id of the
    transaction that committed it.  Not thread-safe: one thread or greenlet
    per session.
    """

    def __init__(
        self,
        db: Any,
        config: LoadConfig,
        history: Recorder,
        rng: random.Random | None = None,
        client: str = "c0",
    ) -> None:
        import transaction

        self.config = config
        self.history = history
        self.client = client
        self.attempts = 0
        self.rng = rng or random.Random()
        self.tm = transaction.TransactionManager()
        self.connection = db.open(self.tm)
        try:
            self.tm.begin()
            fab = self.fab
            self.login: str = self.rng.choice(list(fab.directory.users.keys()))
            self.group_names: list[str] = list(fab.directory.groups.keys())
            n = fab.library.capabilities.maxKey()
            self.tm.abort()
        except BaseException:
            self.close()
            raise
        self.popularity = Popularity(n, config.skew)
        self._pick = config.picker()

    @property
    def fab(self) -> VirtualFab:
        return fab_of(self.connection, self.config.address_text)

    def popular_capability(self) -> int:
        return self.popularity.sample(self.rng)

    def pick(self) -> Operation:
        """The next operation, drawn by the configured weights."""
        return self._pick(self.rng)

    def run(self, op: Operation) -> Outcome:
        from ZODB.POSException import ConflictError

        conflicts: list[float] = []
        start = time.perf_counter()
        for attempt in range(self.config.retries + 1):
            began = time.perf_counter()
            self.attempts += 1
            n = self.attempts
            self.tm.begin()
            receipt = None
            try:
                receipt = op.run(self)
                if op.writes:
                    # Written before the commit, so that a client killed
                    # inside it leaves its writes in the history (unknown).
                    self._record(op, receipt, None, n, pending=True)
                    self.tm.commit()
                else:
                    self.tm.abort()
            except ConflictError as e:
                try:
                    self.tm.abort()
                finally:
                    self._record(op, receipt, e, n)
                conflicts.append((time.perf_counter() - began) * 1000)
                if attempt == self.config.retries:
                    return Outcome(op, _ms_since(start), conflicts, e)
                time.sleep(self._backoff(attempt))
                continue
            except BaseException as e:
                try:
                    self.tm.abort()
                finally:
                    self._record(op, receipt, e, n)
                raise
            self._record(op, receipt, None, n)
            return Outcome(op, _ms_since(start), conflicts)
        raise AssertionError("unreachable")  # pragma: no cover

    def _record(
        self,
        op: Operation,
        receipt: Any,
        error: BaseException | None,
        n: int,
        pending: bool = False,
    ) -> None:
        """Record attempt *n*: about to commit (*pending*), or ended (after
        its commit or abort) with *error* or none."""
        if pending:
            outcome = "pending"
        elif error is None or isinstance(error, Exception):
            outcome = outcome_of(error)
        else:  # Ctrl-C or exit inside the attempt: where it landed is not known
            outcome = "unknown" if op.writes else "failed"
        tid = None
        if outcome == "ok" and op.writes:
            tid = self._committed_tid(receipt)
        reads, writes = accesses(receipt)
        self.history.record(
            Event(
                client=self.client,
                n=n,
                op=op.name,
                outcome=outcome,
                error=None if error is None else type(error).__name__,
                tid=tid,
                reads=reads,
                writes=writes,
            )
        )

    def _committed_tid(self, receipt: Any) -> str | None:
        """The id of the transaction that just committed *receipt*'s write,
        from the serial of an object it stored."""
        try:
            obj = operations.witness(self.fab, receipt)
            return None if obj is None else bytes(obj._p_serial).hex()
        except Exception:  # the server went away just after the commit
            return None

    def _backoff(self, attempt: int) -> float:
        """Seconds to wait after the attempt-th conflict: full jitter over an
        exponentially growing window, capped."""
        window = self.config.backoff_ms * 2 ** min(attempt, 6)
        return self.rng.uniform(0, window) / 1000

    def close(self) -> None:
        """Abort whatever is in progress and return the connection to the
        pool; safe to call twice."""
        connection, self.connection = self.connection, None
        if connection is not None:
            try:
                self.tm.abort()
            finally:
                connection.close()


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


@contextlib.contextmanager
def short_connection(target: str | tuple[str, int]) -> Iterator[Any]:
    """A connection through a client of its own, closed on leaving (for
    checks before and after a run, never beside a running process's DB)."""
    import transaction

    db = open_database(target, pool_size=1)
    try:
        tm = transaction.TransactionManager()
        connection = db.open(tm)
        try:
            yield connection
        finally:
            tm.abort()
            connection.close()
    finally:
        db.close()


def preflight(config: LoadConfig) -> None:
    """StorageError unless the target can be opened and holds a data set."""
    with short_connection(config.target) as connection:
        fab_of(connection, config.address_text)
