"""Concurrent ZEO clients doing virtual-fab work, whatever drives them.

The pieces locustfile.py and `vfab-bench zeoloop` share: the table of
operations with their default weights, a validated LoadConfig, one user's
Session (its own transaction manager and connection on the process's one
ZODB.DB, every operation one transaction, conflicts retried a bounded
number of times with backoff), the Journal of what users committed, and
verify(), which checks the stored data against that journal.

Nothing here imports locust or gevent: the same Session runs in a locust
greenlet and in a plain thread, so the two can be compared.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import itertools
import math
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from scenarios.bench.phases import FAB_KEY
from scenarios.errors import ConfigError
from storages import ROOT_KEY, StorageError, StorageOptions
from storages.zeo import check_reachable, open_client, parse_address
from vfab import operations
from vfab.model import VirtualFab

#: Where `vfab-bench serve` listens and the clients look by default (ZEO's
#: customary port).
DEFAULT_ADDRESS = "127.0.0.1:8100"


# -- the operations ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Operation:
    """One kind of request: its name (the locust request name and the key of
    its weight option), its default weight, whether it writes, and what it
    does inside the session's transaction (returning a receipt for writes)."""

    name: str
    weight: int
    writes: bool
    run: Callable[[Session], Any]
    description: str


def _browse(s: Session) -> Any:
    return operations.browse(s.fab, s.rng)


def _lookup(s: Session) -> Any:
    return operations.lookup_capability(s.fab, s.popular_capability())


def _create(s: Session) -> Any:
    owner = s.fab.directory.users[s.login]
    return operations.create_sequence(s.fab, owner, s.rng)


def _reprice(s: Session) -> Any:
    return operations.change_price(s.fab, s.popular_capability(), s.rng)


def _list(s: Session) -> Any:
    return operations.list_group_sequences(s.fab, s.rng.choice(s.group_names))


def _read(s: Session) -> Any:
    return operations.read_sequence(s.fab, operations.some_sequence_id(s.fab, s.rng))


#: Every operation, in the order of option lists and reports.
OPERATIONS: tuple[Operation, ...] = (
    Operation("browse", 3, False, _browse, "one question of the library (a walk)"),
    Operation("lookup", 10, False, _lookup, "one capability by id (skewed)"),
    Operation("create_sequence", 2, True, _create, "order a new sequence of steps"),
    Operation("change_price", 2, True, _reprice, "reprice a capability (skewed)"),
    Operation("list_sequences", 2, False, _list, "the sequences of one group (a walk)"),
    Operation("read_sequence", 5, False, _read, "one whole sequence with its steps"),
)
BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}


# -- configuration ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LoadConfig:
    """What every simulated user of one run does, validated.

    address: the ZEO server.  weights: operation name -> relative weight
    (0 switches it off).  skew: Zipf exponent for picking capabilities by
    popularity (0: uniform; 1: the top one of 250 gets about 16% of picks).
    retries: attempts after a conflict before the operation fails.
    backoff_ms: first retry waits up to this long (full jitter), doubling
    each attempt up to 64 times it.
    """

    address: tuple[str, int] = parse_address(DEFAULT_ADDRESS)
    weights: tuple[tuple[str, int], ...] = tuple(
        (op.name, op.weight) for op in OPERATIONS
    )
    skew: float = 1.0
    retries: int = 10
    backoff_ms: float = 5.0

    def __post_init__(self) -> None:
        names = [name for name, _ in self.weights]
        for name in names:
            if name not in BY_NAME:
                raise ConfigError(
                    f"unknown operation {name!r}; choose from {', '.join(BY_NAME)}"
                )
        for name, weight in self.weights:
            if weight < 0:
                raise ConfigError(f"weight of {name} must be 0 or more, not {weight}")
        if not any(weight for _, weight in self.weights):
            raise ConfigError("every operation has weight 0: nothing to do")
        if not self.skew >= 0:
            raise ConfigError(f"skew must be 0 or more, not {self.skew}")
        if self.retries < 0:
            raise ConfigError(f"retries must be 0 or more, not {self.retries}")
        if not self.backoff_ms >= 0:
            raise ConfigError(f"backoff must be 0 ms or more, not {self.backoff_ms}")

    @classmethod
    def from_values(
        cls,
        address: str | tuple[str, int],
        weights: Mapping[str, int] | None = None,
        skew: float = 1.0,
        retries: int = 10,
        backoff_ms: float = 5.0,
    ) -> LoadConfig:
        """Build from loosely typed values (command line, web UI form);
        ConfigError or StorageError for anything wrong, naming it."""
        if isinstance(address, str):
            address = parse_address(address.strip())
        merged = {op.name: op.weight for op in OPERATIONS}
        merged.update(weights or {})
        return cls(
            address=address,
            weights=tuple(merged.items()),
            skew=float(skew),
            retries=int(retries),
            backoff_ms=float(backoff_ms),
        )

    @property
    def address_text(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def picker(self) -> Callable[[random.Random], Operation]:
        """A function drawing the next operation by weight."""
        ops = [BY_NAME[name] for name, weight in self.weights if weight]
        cum = list(itertools.accumulate(weight for _, weight in self.weights if weight))

        def pick(rng: random.Random) -> Operation:
            return ops[bisect.bisect_right(cum, rng.random() * cum[-1])]

        return pick


class Popularity:
    """Ids 1..n drawn with Zipf weights 1/k**skew (skew 0: uniform), so that
    capability 1 is the most wanted and concurrent writers meet there."""

    def __init__(self, n: int, skew: float) -> None:
        self.n = n
        self.skew = skew
        self._cum = (
            list(itertools.accumulate(1.0 / k**skew for k in range(1, n + 1)))
            if skew
            else []
        )

    def sample(self, rng: random.Random) -> int:
        if not self._cum:
            return rng.randint(1, self.n)
        i = bisect.bisect_right(self._cum, rng.random() * self._cum[-1])
        return min(i, self.n - 1) + 1

    def share_of_top(self) -> float:
        """The probability of drawing id 1."""
        return 1.0 / self.n if not self._cum else 1.0 / self._cum[-1]


# -- the journal of committed writes ----------------------------------------


class Journal:
    """What the users of this process (or, on a locust master, of all
    workers) reported committing.  Thread-safe; drain() and absorb() move
    entries between processes as plain lists."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.created: list[operations.Created] = []
        self.repriced: list[operations.Repriced] = []
        self._unsent = 0, 0

    def record(self, receipt: Any) -> None:
        with self._lock:
            if isinstance(receipt, operations.Created):
                self.created.append(receipt)
            elif isinstance(receipt, operations.Repriced):
                self.repriced.append(receipt)

    def drain(self) -> dict[str, list[list[Any]]]:
        """Entries recorded since the last drain, as JSON-able lists."""
        with self._lock:
            c0, r0 = self._unsent
            out = {
                "created": [dataclasses.astuple(e) for e in self.created[c0:]],
                "repriced": [dataclasses.astuple(e) for e in self.repriced[r0:]],
            }
            self._unsent = len(self.created), len(self.repriced)
        return {k: [list(v) for v in vs] for k, vs in out.items()}

    def absorb(self, data: Mapping[str, Any]) -> None:
        """Add entries another process drained."""
        with self._lock:
            self.created += [operations.Created(*e) for e in data.get("created", ())]
            self.repriced += [operations.Repriced(*e) for e in data.get("repriced", ())]

    def __len__(self) -> int:
        return len(self.created) + len(self.repriced)


# -- one user ---------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """One operation as its user saw it: time from start to final success or
    failure (retries and backoff included), the time each conflicting
    attempt took, and the error that ended it (None: it succeeded)."""

    operation: Operation
    elapsed_ms: float
    conflicts_ms: list[float]
    error: BaseException | None = None


def open_database(address: tuple[str, int], pool_size: int = 7) -> Any:
    """One ZODB.DB over one ZEO ClientStorage: what each client process holds
    (ZEO.DB(addr, pool_size=...) would pass pool_size to ClientStorage)."""
    import ZODB

    storage = open_client(address, StorageOptions())
    try:
        return ZODB.DB(storage, pool_size=pool_size)
    except BaseException:
        storage.close()
        raise


def fab_of(connection: Any, address: str = "the server") -> VirtualFab:
    """The data set's VirtualFab on *connection*, or StorageError."""
    try:
        return connection.root()[ROOT_KEY][FAB_KEY]  # type: ignore[no-any-return]
    except KeyError:
        raise StorageError(
            f"no vfab data set on the ZEO server at {address}; "
            "start one with: vfab-bench serve --storage file --size small"
        ) from None


class Session:
    """One simulated user: its own transaction manager and connection on a
    shared DB, its own random stream, a login to order sequences as.

    run(op) performs one operation as one transaction: begin, do, commit
    (writes) or abort (reads).  A ConflictError aborts and retries after a
    backoff, up to config.retries times; then the Outcome carries the error.
    Any other exception aborts and propagates.  Not thread-safe: one thread
    or greenlet per session.
    """

    def __init__(
        self,
        db: Any,
        config: LoadConfig,
        journal: Journal,
        rng: random.Random | None = None,
    ) -> None:
        import transaction

        self.config = config
        self.journal = journal
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
            self.tm.begin()
            try:
                receipt = op.run(self)
                if op.writes:
                    self.tm.commit()
                else:
                    self.tm.abort()
            except ConflictError as e:
                self.tm.abort()
                conflicts.append((time.perf_counter() - began) * 1000)
                if attempt == self.config.retries:
                    return Outcome(op, _ms_since(start), conflicts, e)
                time.sleep(self._backoff(attempt))
                continue
            except BaseException:
                self.tm.abort()
                raise
            if op.writes:
                self.journal.record(receipt)
            return Outcome(op, _ms_since(start), conflicts)
        raise AssertionError("unreachable")  # pragma: no cover

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
def short_connection(address: tuple[str, int]) -> Iterator[Any]:
    """A connection through a client of its own, closed on leaving (for
    checks before and after a run, never beside a running process's DB)."""
    import transaction

    db = open_database(address, pool_size=1)
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
    """StorageError unless the server is reachable and holds a data set."""
    check_reachable(config.address)
    with short_connection(config.address) as connection:
        fab_of(connection, config.address_text)


# -- after the run ----------------------------------------------------------


def verify(address: tuple[str, int], journal: Journal) -> operations.CheckReport:
    """Check the stored data against the journal through a fresh client."""
    with short_connection(address) as connection:
        fab = fab_of(connection, f"{address[0]}:{address[1]}")
        _prefetch(connection, fab, journal)
        return operations.check(fab, journal.created, journal.repriced)


def _prefetch(connection: Any, fab: VirtualFab, journal: Journal) -> None:
    """Ask the server for what the check will read, all at once: the cold
    client would otherwise wait one round trip per object (about 1 ms each
    here, and a long run creates thousands of sequences of 10-20 steps)."""
    capabilities = list(fab.library.capabilities.values())
    connection.prefetch(capabilities)
    sequences = [fab.sequences.get(c.sequence_id) for c in journal.created]
    sequences = [s for s in sequences if s is not None]
    connection.prefetch(sequences)
    connection.prefetch([step for s in sequences for step in s.steps])


def server_status(address: tuple[str, int]) -> dict[str, Any]:
    """The ZEO server's counters (connections, commits, conflicts, ...), as
    seen by a short-lived client of its own: 'connections' counts that
    client too, 'clients' does not."""
    storage = open_client(address, StorageOptions())
    try:
        status = dict(storage.server_status())
    finally:
        storage.close()
    status["clients"] = int(status.get("connections", 1)) - 1
    return status


def iter_percentiles(
    values: list[float], points: tuple[float, ...] = (50, 95, 99)
) -> Iterator[float]:
    """Nearest-rank percentiles of *values* (sorted here), as locust reports
    them; nan for no values."""
    ordered = sorted(values)
    for p in points:
        if not ordered:
            yield float("nan")
            continue
        rank = max(1, math.ceil(len(ordered) * p / 100))
        yield ordered[rank - 1]
