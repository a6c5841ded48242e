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

from scenarios.data import FAB_KEY
from scenarios.load.clock import Clock
from scenarios.load.history import Event, NoHistory, Recorder, accesses
from scenarios.load.history import Session as SessionRecord
from scenarios.load.mix import LoadConfig, Operation, Popularity
from scenarios.load.promises import promise_of, snapshot_of
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
    #: Attempts cut by a lost connection and tried again (Session's
    #: *reconnects*).
    reconnects: int = 0


def open_database(
    target: str | tuple[str, int],
    pool_size: int = 7,
    wait_timeout: float | None = None,
    server_sync: bool = False,
) -> Any:
    """One ZODB.DB on the target (a client spec, or a ZEO (host, port)): what
    each client process holds (ZEO.DB(addr, pool_size=...) would pass
    pool_size to ClientStorage); *server_sync*: see open_target."""
    if not isinstance(target, str):
        target = f"zeo://{target[0]}:{target[1]}"
    return open_target(
        target, pool_size=pool_size, wait_timeout=wait_timeout, server_sync=server_sync
    )


def fab_of(connection: Any, address: str = "the server") -> VirtualFab:
    """The data set's VirtualFab on *connection*, or StorageError."""
    try:
        return connection.root()[ROOT_KEY][FAB_KEY]  # type: ignore[no-any-return]
    except KeyError:
        raise StorageError(
            f"no vfab data set at {address}; "
            "start one with: vfab-bench serve --storage file --size small"
        ) from None


#: Errors that mean the connection to the server was lost.  They are
#: TransientErrors (ZEO's ClientDisconnected), but retried only as often as
#: a Session's *reconnects* says (none by default): each retry waits for
#: the server (the client's wait timeout), and the outage is what scale's
#: fault report measures.
_DISCONNECTED = {"ClientDisconnected", "DisconnectedError"}


def _disconnected(error: BaseException) -> bool:
    return bool({cls.__name__ for cls in type(error).__mro__} & _DISCONNECTED)


class _Voted:
    """A data manager that joins a commit and sorts after every other, so
    its tpc_vote runs once every other data manager has voted (a commit
    that fails before then was not made: failed; one that fails after may
    have been: unknown), and its tpc_finish once the connection's has set
    the serial of what it stored: the committed transaction's id, read
    from *witness* before anything else can change it."""

    def __init__(self, witness: Any = None) -> None:
        self.voted = False
        self.witness = witness
        self.tid: str | None = None

    def sortKey(self) -> str:
        return "\U0010ffff vfab: every other data manager voted"

    def tpc_vote(self, txn: Any) -> None:
        self.voted = True

    def tpc_finish(self, txn: Any) -> None:
        serial = getattr(self.witness, "_p_serial", None)
        if serial:
            self.tid = bytes(serial).hex()

    def abort(self, txn: Any) -> None:
        pass

    tpc_begin = commit = tpc_abort = abort


def note(run: str, client: str, n: int) -> str:
    """The note each attempt's transaction carries, so that the check
    finds a run's transactions in the storage's log (and another writer's
    by their lack of one)."""
    return f"vfab {run} {client}#{n}"


class Session:
    """One simulated user: its own transaction manager and connection on a
    shared DB, its own random stream, a login to order sequences as.

    run(op) performs one operation as one transaction: begin, do, commit
    (writes) or abort (reads).  A TransientError (a conflict, a failed
    readCurrent check) aborts and retries after a backoff, up to
    config.retries times; then the Outcome carries the error.  A lost
    connection aborts and is tried again up to *reconnects* times (the
    next attempt waits for the client to connect again, at most its wait
    timeout: a server restarted on its address), then propagates, as any
    other exception does.  Every attempt
    is recorded in *history* as an Event (scenarios.load.history) named
    *client*#n, with its outcome, its start and end (this process's
    time.monotonic(); the session's record gives *clock*, the offset to
    the coordinator's clock, which the checker applies), the snapshot it
    read at, what it read and wrote, and the id of the transaction that
    committed it; each committing transaction carries note(*run*, client,
    n).  Not thread-safe: one thread or greenlet per session.
    """

    def __init__(
        self,
        db: Any,
        config: LoadConfig,
        history: Recorder,
        rng: random.Random | None = None,
        client: str = "c0",
        run: str = "",
        clock: Clock | None = None,
        reconnects: int = 0,
    ) -> None:
        import transaction

        self.config = config
        self.reconnects = reconnects
        self.history = history
        self.recording = not isinstance(history, NoHistory)
        self.client = client
        self.run_token = run
        self.clock = clock or Clock()
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
        promise = promise_of(db)
        history.session(
            SessionRecord(
                client, self.clock, promise.storage, promise.realtime, promise.why, run
            )
        )

    @property
    def fab(self) -> VirtualFab:
        return fab_of(self.connection, self.config.address_text)

    def popular_capability(self) -> int:
        return self.popularity.sample(self.rng)

    def popular_pair(self) -> tuple[int, int]:
        """Two different capabilities, each drawn by popularity, so that
        two users often draw the same two in either order."""
        first = self.popular_capability()
        for _ in range(100):
            second = self.popular_capability()
            if second != first:
                return first, second
        return first, 1 + first % self.popularity.n

    def pick(self) -> Operation:
        """The next operation, drawn by the configured weights."""
        return self._pick(self.rng)

    def run(self, op: Operation) -> Outcome:
        from transaction.interfaces import TransientError

        conflicts: list[float] = []
        start = time.perf_counter()
        attempt = reconnects = 0
        while True:
            began = time.perf_counter()
            self.attempts += 1
            n = self.attempts
            at = time.monotonic()
            txn = self.tm.begin()
            snapshot = snapshot_of(self.connection)
            receipt = None
            voted = _Voted()
            try:
                receipt = op.run(self)
                if op.writes:
                    if self.recording:
                        txn.note(note(self.run_token, self.client, n))
                        voted.witness = operations.witness(self.fab, receipt)
                    # Written before the commit, so that a client killed
                    # inside it leaves its writes in the history (unknown).
                    self._record(op, receipt, n, at, snapshot, "pending")
                    txn.join(voted)
                    self.tm.commit()
                else:
                    self.tm.abort()
            except TransientError as e:
                try:
                    self.tm.abort()
                finally:
                    self._ended(op, receipt, e, n, at, snapshot, voted)
                if _disconnected(e):
                    if reconnects == self.reconnects:
                        raise
                    reconnects += 1
                    continue
                conflicts.append((time.perf_counter() - began) * 1000)
                if attempt == self.config.retries:
                    return Outcome(op, _ms_since(start), conflicts, e, reconnects)
                time.sleep(self._backoff(attempt))
                attempt += 1
                continue
            except BaseException as e:
                try:
                    self.tm.abort()
                finally:
                    self._ended(op, receipt, e, n, at, snapshot, voted)
                raise
            self._ended(op, receipt, None, n, at, snapshot, voted)
            return Outcome(op, _ms_since(start), conflicts, reconnects=reconnects)

    def _ended(
        self,
        op: Operation,
        receipt: Any,
        error: BaseException | None,
        n: int,
        at: float,
        snapshot: str | None,
        voted: _Voted,
    ) -> None:
        """Record attempt *n*, ended with *error* or none: a commit that
        failed after every data manager voted may have been made."""
        if error is None:
            outcome = "ok"
        else:
            outcome = "unknown" if op.writes and voted.voted else "failed"
        end = time.monotonic()
        tid = voted.tid if outcome == "ok" and op.writes else None
        self._record(op, receipt, n, at, snapshot, outcome, error, end, tid)

    def _record(
        self,
        op: Operation,
        receipt: Any,
        n: int,
        at: float,
        snapshot: str | None,
        outcome: str,
        error: BaseException | None = None,
        end: float | None = None,
        tid: str | None = None,
    ) -> None:
        if not self.recording:
            return
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
                start=at,
                end=end,
                snapshot=snapshot,
            )
        )

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
def short_connection(
    target: str | tuple[str, int], wait_timeout: float | None = None
) -> Iterator[Any]:
    """A connection through a client of its own, closed on leaving (for
    checks before and after a run, never beside a running process's DB);
    *wait_timeout*: a ZEO client's wait for its server (see open_target)."""
    import transaction

    db = open_database(target, pool_size=1, wait_timeout=wait_timeout)
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
