"""One client process of a matrix group: zodbshootout's benchmarks, timed
as zodbshootout times them, for each of the process's clients at once (a
thread or greenlet each, or the process's only client: scale's kinds,
scenarios.clients.concurrency.run_each).

Each benchmark runs in rounds; a round starts when every client of the
group has reached it (a barrier across the group), and each client times
its own transactions in it.  What each benchmark times, per transaction
(the parent divides by the objects per transaction):

- add: begin, put *n* new objects into the client's mapping (replacing
  the last ones, as zodbshootout's keys 0..n-1 do), commit;
- update: begin, set an attribute on each of the client's *n* objects,
  commit;
- write-read (zodbshootout's "warm", the FAQ's "write then read"): open a
  connection, update the *n* objects, commit, read them back in the next
  transaction, commit; every cache emptied (untimed) before each;
- cold: every cache the process holds emptied (untimed: the object cache,
  the client's or storage's own cache), then open a connection and read
  the *n* objects;
- warm (zodbshootout's "hot"): the object cache emptied, the storage's
  cache kept, read the *n* objects;
- hot (zodbshootout's "steamin"): read the *n* objects already in the
  object cache;
- conflicts (zodbshootout's "conflicts"): update the objects of one mapping
  every client shares (those of the client's parity; all of them at one
  object), commit; conflicts resolve (PObject), a ConflictError is retried
  with the retry timed and counted.

Every read checks the values the client last wrote, after the clock stops
(the check is not the benchmark: timed, it cost as much as a hot read of
the object itself); what a client wrote
and was acknowledged goes back to the parent, which reads it all back
(scenarios.matrix.check).
"""

from __future__ import annotations

import dataclasses
import gc
import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds a barrier waits for the rest of the group before the group fails.
BARRIER_S = 300.0
#: Conflict retries of one transaction before the client gives up.
MAX_RETRIES = 50


@dataclasses.dataclass(frozen=True)
class GroupPlan:
    """What one client process of a group does (picklable)."""

    target: str
    kind: str
    #: The clients of this process (numbers within the group).
    clients: tuple[int, ...]
    concurrency: int
    objects: tuple[int, ...]
    benchmarks: tuple[str, ...]
    rounds: int
    transactions: int
    #: The root key the group's data hang under (the parent made them).
    key: str


def run_group(
    plan: GroupPlan, barrier: Any, done: Any, control: Any, here: Any = None
) -> dict[str, Any]:
    """The process's clients through every size and benchmark; what each
    measured and wrote.  *barrier*: the group's, across processes (None:
    this process holds the whole group); *done*: a shared count of
    (client, size, benchmark) finished, for the parent's progress;
    *here*: the group's database (scenarios.matrix.check.Database) when
    the clients run in the command's own process (a storage one process
    opens: its threads), whose logging is then left alone."""
    from scenarios.clients import concurrency
    from scenarios.clients.process import client_process

    pool = len(plan.clients) + 1
    with client_process(plan.kind, plan.target, pool, here=here) as opened:
        if barrier is None and len(plan.clients) > 1:
            barrier = threading.Barrier(len(plan.clients))
        if not control.wait_start():
            return {"started": False}
        sync = _Sync(barrier, control.stop)
        clients = [_Client(plan, opened.db, c, sync, done) for c in plan.clients]
        # A client that fails breaks the barrier for the others.
        concurrency.run_each(
            plan.kind, len(clients), lambda i: clients[i].run(), sync.abort
        )
        return {
            "started": True,
            "clients": [c.result() for c in clients],
            "cold": cold_caches(opened.db),
            "log_records": opened.counter.count,
        }


class _Sync:
    """The group's barrier, bounded, and broken for every client when one
    fails or the parent says stop."""

    def __init__(self, barrier: Any, stop: Any) -> None:
        self.barrier = barrier
        self.stop = stop

    def wait(self) -> None:
        if self.stop.is_set():
            raise RuntimeError("stopped")
        if self.barrier is not None:
            self.barrier.wait(BARRIER_S)

    def abort(self) -> None:
        if self.barrier is not None:
            self.barrier.abort()


def cold_caches(db: Any) -> dict[str, list[str]]:
    """What emptying db's caches (clear_caches) empties, and what it cannot."""
    storage = db.storage
    name = type(storage).__name__
    cleared = ["the object cache of every connection"]
    if getattr(storage, "_cache", None) is not None:
        cleared.append(
            "ZEO's client cache" if name == "ClientStorage" else f"{name}'s cache"
        )
    kept = ["the OS page cache"]
    adapter = type(getattr(storage, "_adapter", None)).__name__.lower()
    if "sqlite" in adapter:
        kept.append("SQLite's page cache in RelStorage's open connections")
    elif "postgresql" in adapter:
        kept.append("PostgreSQL's shared buffers")
    elif "mysql" in adapter:
        kept.append("the server's InnoDB buffer pool")
    elif name == "ClientStorage":
        kept.append("whatever the ZEO server's storage caches")
    return {"cleared": cleared, "kept": kept}


def clear_caches(db: Any) -> None:
    """Empty every cache of *db* this process can (no connection of the
    pool in use): each connection's object cache, the storage's own
    (ZEO's client cache, RelStorage's), then collect the garbage made.

    The garbage is young: a young collection (generations 0 and 1) takes
    it.  A full one walks the whole heap just before the clock starts and
    leaves the CPU's caches cold for the timed read, a cost of the
    collection, not of the read: a cold read of 10 objects on FileStorage
    took 1.3-1.45x as long after it, and the same as zodbshootout's
    without it (tools/cold_read_gc.py, docs/matrix.md)."""
    for conn in list(db.pool.all):
        conn.cacheMinimize()
    cache = getattr(db.storage, "_cache", None)
    if cache is not None:
        try:
            cache.clear(load_persistent=False)  # RelStorage
        except TypeError:
            cache.clear()  # ZEO's ClientCache
    gc.collect(1)


class _Client:
    """One client: its benchmarks in order, its timings, what it wrote."""

    def __init__(
        self, plan: GroupPlan, db: Any, number: int, sync: _Sync, done: Any
    ) -> None:
        import transaction

        self.plan = plan
        self.db = db
        self.number = number
        self.sync = sync
        self.done = done
        self.tm = transaction.TransactionManager(explicit=True)
        #: benchmark -> objects -> seconds per round
        self.times: dict[str, dict[int, list[float]]] = {}
        self.conflicts: dict[int, int] = {}
        #: objects -> the stamp its own objects last got, acknowledged
        self.own: dict[int, int] = {}
        #: objects -> every stamp it committed to the shared mapping
        self.shared: dict[int, list[int]] = {}
        self.problems: list[str] = []
        self._stamp = 0
        #: The clients of this process share one DB: one of them empties it.
        self.clears = number == plan.clients[0]

    def stamp(self) -> int:
        """A value no other client writes: what an object got, and from whom."""
        self._stamp += 1
        return self.number * 1_000_000 + self._stamp

    def result(self) -> dict[str, Any]:
        return {
            "client": self.number,
            "times": self.times,
            "conflicts": self.conflicts,
            "own": self.own,
            "shared": self.shared,
            "problems": self.problems[:20],
        }

    def run(self) -> None:
        benches: dict[str, Callable[[int], float]] = {
            "add": self.add,
            "update": self.update,
            "write-read": self.write_read,
            "cold": self.cold,
            "warm": self.warm,
            "hot": self.hot,
            "conflicts": self.conflicts_round,
        }
        for n in self.plan.objects:
            self.own[n] = 0  # the parent's setup
            self.shared[n] = []
            self.conflicts[n] = 0
            for name in self.plan.benchmarks:
                rounds = []
                for _ in range(self.plan.rounds):
                    self.sync.wait()
                    rounds.append(benches[name](n))
                self.times.setdefault(name, {})[n] = rounds
                with self.done.get_lock():
                    self.done.value += 1

    # -- helpers ---------------------------------------------------------------

    def _mine(self, conn: Any, n: int) -> Any:
        return conn.root()[self.plan.key][n][self.number]

    @staticmethod
    def _read(m: Any) -> list[Any]:
        """Read every object of *m* (the timed part): the values it holds."""
        return [obj.attr for obj in m.values()]

    def _check(self, values: list[Any], n: int, what: str) -> None:
        """That the *values* read are *n*, each the client's last stamp (after
        the clock stops: the check is not the benchmark)."""
        want = self.own[n]
        wrong = sum(value != want for value in values)
        if len(values) != n or wrong:
            self.problems.append(
                f"{what}, {n} objects: read {len(values)} objects, {wrong} not "
                "holding the client's last acknowledged write"
            )

    def _commit(self, stamp: int, n: int) -> None:
        self.tm.commit()
        self.own[n] = stamp

    # -- the benchmarks (each returns the round's timed seconds) ---------------

    def add(self, n: int) -> float:
        from scenarios.matrix.objects import PObject, payload

        conn = self.db.open(self.tm)
        try:
            total = 0.0
            for _ in range(self.plan.transactions):
                stamp = self.stamp()
                # Built before the clock starts, as zodbshootout's data are.
                new = {k: PObject(payload(self.number, k), stamp) for k in range(n)}
                t0 = time.perf_counter()
                self.tm.begin()
                self._mine(conn, n).update(new)
                self._commit(stamp, n)
                total += time.perf_counter() - t0
            return total
        finally:
            conn.close()

    def update(self, n: int) -> float:
        conn = self.db.open(self.tm)
        try:
            total = 0.0
            for _ in range(self.plan.transactions):
                stamp = self.stamp()
                t0 = time.perf_counter()
                self.tm.begin()
                for obj in self._mine(conn, n).values():
                    obj.attr = stamp
                self._commit(stamp, n)
                total += time.perf_counter() - t0
            return total
        finally:
            conn.close()

    def _emptied(self) -> None:
        """Every cache emptied, with no connection of the process open: the
        process's clients wait for each other on both sides of it."""
        self.sync.wait()
        if self.clears:
            clear_caches(self.db)
        self.sync.wait()

    def write_read(self, n: int) -> float:
        total = 0.0
        for _ in range(self.plan.transactions):
            self._emptied()
            stamp = self.stamp()
            t0 = time.perf_counter()
            conn = self.db.open(self.tm)
            self.tm.begin()
            m = self._mine(conn, n)
            for obj in m.values():
                obj.attr = stamp
            self._commit(stamp, n)
            self.tm.begin()
            values = self._read(m)
            self.tm.commit()
            total += time.perf_counter() - t0
            self._check(values, n, "write-read")
            conn.close()
        return total

    def cold(self, n: int) -> float:
        total = 0.0
        for _ in range(self.plan.transactions):
            self._emptied()
            t0 = time.perf_counter()
            conn = self.db.open(self.tm)
            self.tm.begin()
            m = self._mine(conn, n)
            values = self._read(m)
            total += time.perf_counter() - t0
            self._check(values, n, "cold")
            loads, _ = conn.getTransferCounts(True)
            if loads < n:
                self.problems.append(
                    f"cold, {n} objects: {loads} loaded from the storage, not {n}: "
                    "a cache was not emptied"
                )
            self.tm.abort()
            conn.close()
        return total

    def warm(self, n: int) -> float:
        conn = self.db.open(self.tm)
        try:
            self.tm.begin()
            m = self._mine(conn, n)
            self._check(self._read(m), n, "warm")  # primes the storage's cache
            total = 0.0
            for _ in range(self.plan.transactions):
                conn.cacheMinimize()
                conn.getTransferCounts(True)
                t0 = time.perf_counter()
                values = self._read(m)
                total += time.perf_counter() - t0
                self._check(values, n, "warm")
                loads, _ = conn.getTransferCounts(True)
                if loads < n:
                    self.problems.append(
                        f"warm, {n} objects: {loads} loaded, not {n}: the object "
                        "cache was not emptied"
                    )
            self.tm.abort()
            return total
        finally:
            conn.close()

    def hot(self, n: int) -> float:
        conn = self.db.open(self.tm)
        try:
            self.tm.begin()
            m = self._mine(conn, n)
            self._check(self._read(m), n, "hot")  # every object in the cache
            conn.getTransferCounts(True)
            reads = []
            t0 = time.perf_counter()
            for _ in range(self.plan.transactions):
                reads.append(self._read(m))
            total = time.perf_counter() - t0
            for values in reads:
                self._check(values, n, "hot")
            loads, _ = conn.getTransferCounts(True)
            if loads:
                self.problems.append(
                    f"hot, {n} objects: {loads} loaded from the storage, not 0"
                )
            self.tm.abort()
            return total
        finally:
            conn.close()

    def conflicts_round(self, n: int) -> float:
        from transaction.interfaces import TransientError

        parity = self.number % 2
        conn = self.db.open(self.tm)
        try:
            total = 0.0
            for _ in range(self.plan.transactions):
                stamp = self.stamp()
                t0 = time.perf_counter()
                for attempt in range(MAX_RETRIES + 1):
                    try:
                        self.tm.begin()
                        shared = conn.root()[self.plan.key][n]["conflicts"]
                        for k, obj in shared.items():
                            if n == 1 or k % 2 == parity:
                                obj.attr = stamp
                        self.tm.commit()
                        break
                    except TransientError:
                        self.tm.abort()
                        self.conflicts[n] += 1
                        if attempt == MAX_RETRIES:
                            raise
                self.shared[n].append(stamp)
                total += time.perf_counter() - t0
            return total
        finally:
            conn.close()
