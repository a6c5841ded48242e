"""zodbshootout's micro-benchmarks, on vfab objects in a populated database.

Each test opens the storage, writes the --size data set into it (untimed),
and times one operation per round on BATCH (250) objects or calls: the
process capabilities with ids 1..250 (the whole library of the small data
set, the first 250 of a larger one), so figures compare across sizes.  The
group is the benchmark's name; divide by 250 for one object or call.

Names as zodbshootout 0.8 has them, where ours differ: cold read = "cold",
warm read = "hot" (object cache empty, storage cache full), hot read =
"steamin" (every object already in the object cache), empty commit =
"ex_commit".  Not here: "im_commit" (the same with an implicit transaction
manager) and "read_after_write" (the query phases after their commit
phases are that).

The memory storage keeps the add, update and hot read benchmarks (the cost
of the Python work itself, the floor) and skips the others, which time a
database that it does not have.

Rounds share the test's database: add and store leave their objects behind
as unreachable records (as zodbshootout's do), which changes nothing a
later round times; every other round rewrites or rereads the same objects.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import transaction
from BTrees.IOBTree import IOBTree
from persistent.mapping import PersistentMapping
from ZODB.Connection import TransactionMetaData
from ZODB.interfaces import IMVCCStorage
from ZODB.POSException import ConflictError
from ZODB.utils import load_current, z64

from scenarios.data import FAB_KEY
from scenarios.data.dataset import populate
from storages import Store, ZODBStore
from tests.benchmarks.support import (
    calibrate_loops,
    measure,
    min_single_call,
    plan_rounds,
)
from vfab.generate import DEFAULT_SEED, DataSpec
from vfab.model import ProcessCapability, ProcessSequence, VirtualFab

#: Objects (or calls) per round.
BATCH = 250


@pytest.fixture
def fab_store(store: Store, spec: DataSpec) -> Store:
    """The test's store holding the --size data set, committed."""
    populate(store, spec, DEFAULT_SEED)
    return store


def fab(store: Store) -> VirtualFab:
    return store.root()[FAB_KEY]  # type: ignore[no-any-return]


def batch(store: Store) -> list[ProcessCapability]:
    """The capabilities 1..BATCH, in id order (ghosts until touched)."""
    return list(fab(store).library.capabilities.values(1, BATCH))


def read_batch(store: Store) -> int:
    """Walk from the root to capabilities 1..BATCH and read each one's price
    (loading whatever is not in the object cache); returns how many."""
    n = 0
    total = 0.0
    for capability in fab(store).library.capabilities.values(1, BATCH):
        total += capability.price
        n += 1
    return n


def no_connection() -> None:
    """Transfer counts for benchmarks that call the storage directly: the
    connection's counters would say 0, which is not what happened."""
    return None


def needs_database(store: Store, why: str) -> ZODBStore:
    """The store as a ZODBStore (db, connection, transaction_manager), or
    skip: the memory storage has no database."""
    if not isinstance(store, ZODBStore):
        pytest.skip(f"{store.name} has no database: {why}")
    return store


def run(
    group: str,
    benchmark: Any,
    request: pytest.FixtureRequest,
    store: Store,
    size: str,
    target: Any,
    setup: Any,
    **kw: Any,
) -> Any:
    """measure() with this module's conventions (group = the benchmark's
    name; extra_info gains storage, size and whatever *kw* holds besides
    measure's own keywords); returns the meter."""
    benchmark.group = group
    return measure(
        benchmark,
        request.config,
        store,
        target,
        setup,
        storage=store.name,
        size=size,
        **kw,
    )


def test_add(benchmark: Any, request: Any, fab_store: Store, size: str) -> None:
    """Times creating BATCH new process capabilities (attributes copied from
    existing ones, so they reference the same processes, labs and
    materials), inserting them into a new BTree and committing: object
    construction, BTree inserts, pickling, oid allocation and the storage's
    write.  zodbshootout: add."""
    store = fab_store
    templates = [
        (c.process, c.lab, c.material, c.price, c.lot_size, c.turnaround_days)
        for c in batch(store)
    ]
    ranges = [dict(c.ranges) for c in batch(store)]
    next_id = [100_000_000]

    def setup() -> Any:
        store.abort()
        tree = store.root()["added"] = IOBTree()
        store.commit()
        first = next_id[0]
        next_id[0] += BATCH
        return tree, first

    def add(arg: Any) -> int:
        tree, first = arg
        for i, (process, lab, material, price, lot, days) in enumerate(templates):
            cid = first + i
            tree[cid] = ProcessCapability(
                cid, process, lab, material, price, lot, days, dict(ranges[i])
            )
        store.commit()
        return len(tree)

    meter = run("add", benchmark, request, store, size, add, setup, batch=BATCH)
    store.abort()
    assert sorted(store.root()["added"]) == list(range(next_id[0] - BATCH, next_id[0]))
    if store.name == "memory":
        assert meter.stores == []  # no connection to count
    else:
        assert min(meter.stores) >= BATCH  # the capabilities, the tree, more


def test_store(benchmark: Any, request: Any, fab_store: Store, size: str) -> None:
    """Times storing BATCH ready-made records (the capabilities' pickles)
    under new oids in one two-phase commit through the storage API: the
    storage's write path alone, without pickling, oid allocation or the
    connection.  Leaves unreachable records behind.  zodbshootout: store."""
    store = needs_database(fab_store, "no storage API to call")
    capabilities = batch(store)
    read_batch(store)
    records = [load_current(store.db.storage, c._p_oid)[0] for c in capabilities]
    storage = store.connection._storage  # what Connection's two-phase commit uses

    stored: list[tuple[bytes, bytes]] = []

    def setup() -> list[tuple[bytes, bytes]]:
        return [(storage.new_oid(), data) for data in records]

    def store_records(pairs: list[tuple[bytes, bytes]]) -> int:
        stored[:] = pairs
        txn = TransactionMetaData()
        storage.tpc_begin(txn)
        try:
            for oid, data in pairs:
                storage.store(oid, z64, data, "", txn)
            storage.tpc_vote(txn)
            storage.tpc_finish(txn)
        except BaseException:
            storage.tpc_abort(txn)
            raise
        return len(pairs)

    run(
        "store",
        benchmark,
        request,
        store,
        size,
        store_records,
        setup,
        collect=False,
        counts=no_connection,
        batch=BATCH,
    )
    # The last round's records read back, from the storage the test opened
    # (reopened: an IMVCC storage such as RelStorage shows other instances'
    # commits only after a poll).
    assert len(stored) == BATCH
    store.reopen()
    for oid, data in stored[:: BATCH // 5]:
        assert load_current(store.db.storage, oid)[0] == data


def test_update(benchmark: Any, request: Any, fab_store: Store, size: str) -> None:
    """Times changing the price of BATCH capabilities already in the object
    cache and committing: change tracking, pickling and the storage's
    write.  zodbshootout: update."""
    store = fab_store
    prices = [c.price for c in batch(store)]
    updates = [0]

    def setup() -> list[ProcessCapability]:
        store.abort()
        capabilities = batch(store)
        read_batch(store)  # in the object cache, so no load is timed
        return capabilities

    def update(capabilities: list[ProcessCapability]) -> int:
        for c in capabilities:
            c.price += 1.0
        store.commit()
        updates[0] += 1
        return len(capabilities)

    meter = run("update", benchmark, request, store, size, update, setup, batch=BATCH)
    store.abort()
    assert [c.price for c in batch(store)] == [p + updates[0] for p in prices]
    if store.name == "memory":
        assert meter.stores == [] and meter.loads == []  # no connection
    else:
        assert min(meter.stores) == BATCH
        assert max(meter.loads) == 0


def test_cold_read(benchmark: Any, request: Any, fab_store: Store, size: str) -> None:
    """Times walking from the root to BATCH capabilities and reading each
    one's price right after the database was reopened: nothing in the
    object cache or in a ZEO client cache, every object loaded from the
    storage (FileStorage and the ZEO server's file are still in the
    operating system's page cache).  zodbshootout: cold."""
    store = needs_database(fab_store, "no cache to empty")

    def setup() -> Store:
        store.reopen()
        return store

    meter = run(
        "cold read", benchmark, request, store, size, read_batch, setup, batch=BATCH
    )
    assert min(meter.loads) >= BATCH


def test_cold_read_prefetch(
    benchmark: Any, request: Any, fab_store: Store, size: str
) -> None:
    """Like cold read, but the connection is first asked to prefetch the
    BATCH capabilities (Connection.prefetch; ZEO asks the server for all of
    them at once, other storages may ignore it).  zodbshootout:
    prefetch_cold."""
    store = needs_database(fab_store, "no cache to empty")

    def setup() -> ZODBStore:
        store.reopen()
        return store

    def prefetch_and_read(store: ZODBStore) -> int:
        capabilities = fab(store).library.capabilities
        store.connection.prefetch(capabilities.values(1, BATCH))
        return read_batch(store)

    meter = run(
        "cold read prefetch",
        benchmark,
        request,
        store,
        size,
        prefetch_and_read,
        setup,
        batch=BATCH,
    )
    assert min(meter.loads) >= BATCH


def test_warm_read(benchmark: Any, request: Any, fab_store: Store, size: str) -> None:
    """Times the same walk with the object cache emptied
    (Connection.cacheMinimize) but the storage's own cache full: each object
    is unpickled again, from the ZEO client cache on zeo, from the file
    (through the page cache) on file, from memory on mapping.
    zodbshootout: hot."""
    store = needs_database(fab_store, "no object cache to empty")

    def setup() -> Store:
        store.abort()
        read_batch(store)
        store.connection.cacheMinimize()
        return store

    meter = run(
        "warm read", benchmark, request, store, size, read_batch, setup, batch=BATCH
    )
    assert min(meter.loads) >= BATCH


#: Single passes timed by hand to check the hot read's looped figure: half
#: just before the timed rounds, half just after, so that a burst of load on
#: a shared machine during one of them does not decide the figure.
HAND_PASSES = 200

#: One value of the hot read: ten times pyperf's 1 ms floor, yet short
#: enough that among HOT_READ_MIN_ROUNDS of them some run without losing the
#: core to another job on a shared machine (a 0.1 s value rarely does).
HOT_READ_VALUE_S = 0.01
HOT_READ_MIN_ROUNDS = 20

#: How far the hot read's figure (the fastest round, per pass) may stray
#: from the fastest pass timed by hand: both are minima taken back to back in
#: one process, so they agree far closer than this (1.02-1.07x seen on two
#: cores at load average 4.5) unless the benchmark times something else, as
#: it did while a gc.collect() ran right before one timed pass (4-9x).
#: Values of 0.1 s strayed up to 3.1x there: every round lost the core.
HOT_READ_AGREEMENT = 1.5


def test_hot_read(benchmark: Any, request: Any, fab_store: Store, size: str) -> None:
    """Times the same walk with every object already in the object cache:
    iteration and attribute access through persistent, no load.
    zodbshootout: steamin.

    One pass takes tens of microseconds, too short to be one value (pyperf:
    under 1 ms is too short), and a gc.collect() just before it would
    dominate it (the collector's after-effects cost 4-9 times the pass).  So
    the objects are made hot once, without a collection, and each round
    times *loops* back-to-back passes (pedantic iterations: the figure is
    still per pass), loops calibrated so that a round takes at least
    HOT_READ_VALUE_S, at least HOT_READ_MIN_ROUNDS rounds.  extra_info:
    loops, cpu_s (mean CPU per pass) and the cross-check: hand_s, the
    fastest of HAND_PASSES single passes timed by hand around the rounds,
    bench_over_hand, the benchmark's min over it (within HOT_READ_AGREEMENT
    of 1), and cpu_over_hand, cpu_s over it."""
    store = fab_store
    benchmark.group = "hot read"
    store.abort()
    assert read_batch(store) == BATCH  # loads whatever the walk needs
    store.transfer_counts()  # from here on, nothing may load

    def one_pass() -> int:
        return read_batch(store)

    loops, rounds = 1, 1
    if benchmark.enabled:
        loops, per_pass = calibrate_loops(one_pass, HOT_READ_VALUE_S)
        rounds = max(
            HOT_READ_MIN_ROUNDS, plan_rounds(request.config, 0.0, loops * per_pass)
        )
    hand_before = min_single_call(one_pass, HAND_PASSES // 2)
    cpu0 = time.process_time()
    answer = benchmark.pedantic(one_pass, rounds=rounds, iterations=loops)
    cpu_s = (time.process_time() - cpu0) / (rounds * loops)
    hand_s = min(hand_before, min_single_call(one_pass, HAND_PASSES // 2))
    counts = store.transfer_counts()
    benchmark.extra_info.update(
        storage=store.name,
        size=size,
        batch=BATCH,
        loops=loops,
        cpu_s=cpu_s,
        loads=None if counts is None else counts[0],
        stores=None if counts is None else counts[1],
        hand_s=hand_s,
    )
    assert answer == BATCH
    assert counts is None if store.name == "memory" else counts == (0, 0)
    assert 0 < hand_s < 0.1  # 250 attribute reads: microseconds, not seconds
    if benchmark.enabled:
        ratio = benchmark.stats.stats.min / hand_s
        benchmark.extra_info.update(bench_over_hand=ratio, cpu_over_hand=cpu_s / hand_s)
        # A figure, not a timed assert: on a shared machine a burst of load
        # can land on either side, so a stray ratio is a warning in the
        # report (and bench_over_hand in the JSON), never a failed test.
        if not 1 / HOT_READ_AGREEMENT <= ratio <= HOT_READ_AGREEMENT:
            warnings.warn(
                f"hot read per {BATCH} objects: benchmark min "
                f"{benchmark.stats.stats.min * 1e6:.1f} us ({cpu_s * 1e6:.1f} us "
                f"CPU on average) is {ratio:.2f}x the hand-timed min "
                f"{hand_s * 1e6:.1f} us (expected within {HOT_READ_AGREEMENT}x)",
                stacklevel=1,
            )


def test_read_current(
    benchmark: Any, request: Any, fab_store: Store, size: str
) -> None:
    """Times a transaction that calls Connection.readCurrent on BATCH
    capabilities (already in the object cache) and changes one small
    object so that the connection joins the commit: the storage then checks
    at vote that none of the BATCH changed (checkCurrentSerialInTransaction).
    zodbshootout: readCurrent."""
    store = needs_database(fab_store, "no connection to call readCurrent on")
    root = store.root()
    root["touched"] = PersistentMapping(n=0)
    store.commit()

    def setup() -> tuple[list[ProcessCapability], PersistentMapping]:
        store.abort()
        capabilities = batch(store)
        read_batch(store)
        return capabilities, store.root()["touched"]

    commits = [0]

    def read_current(arg: tuple[list[ProcessCapability], PersistentMapping]) -> int:
        capabilities, touched = arg
        commits[0] += 1
        read_current = store.connection.readCurrent
        for c in capabilities:
            read_current(c)
        touched["n"] += 1
        store.commit()
        return len(capabilities)

    meter = run(
        "readCurrent", benchmark, request, store, size, read_current, setup, batch=BATCH
    )
    store.abort()
    assert store.root()["touched"]["n"] == commits[0]  # every commit went through
    assert max(meter.loads) == 0 and min(meter.stores) == 1  # only "touched"


def test_empty_commit(
    benchmark: Any, request: Any, fab_store: Store, size: str
) -> None:
    """Times BATCH empty transactions (begin, commit, nothing changed) on
    the store's transaction manager: the transaction machinery and the
    connection's synchronisation at each begin; no storage write.
    zodbshootout: ex_commit."""
    store = needs_database(fab_store, "no transaction to commit")
    manager = store.transaction_manager
    manager.commit()
    last = store.db.storage.lastTransaction()

    def empty_commits(_: Any) -> int:
        for _ in range(BATCH):
            manager.begin()
            manager.commit()
        return BATCH

    run(
        "empty commit",
        benchmark,
        request,
        store,
        size,
        empty_commits,
        lambda: None,
        collect=False,
        batch=BATCH,
    )
    # Nothing changed, so nothing reached the storage.
    assert store.db.storage.lastTransaction() == last


def test_tpc(benchmark: Any, request: Any, fab_store: Store, size: str) -> None:
    """Times BATCH empty two-phase commits straight on the storage
    (tpc_begin, tpc_vote, tpc_finish with no object): what one transaction
    costs the storage itself, a server round trip each on zeo.
    zodbshootout: tpc."""
    store = needs_database(fab_store, "no storage to commit to")
    if IMVCCStorage.providedBy(store.db.storage):
        pytest.skip(
            f"{store.name}: RelStorage's empty two-phase commits do not each "
            "get a new tid (tids repeat), so this is not the cost of one "
            "transaction"
        )
    storage = store.connection._storage
    tids: list[bytes] = []

    def tpcs(_: Any) -> int:
        for _ in range(BATCH):
            txn = TransactionMetaData()
            storage.tpc_begin(txn)
            storage.tpc_vote(txn)
            tids.append(storage.tpc_finish(txn))
        return BATCH

    run(
        "tpc",
        benchmark,
        request,
        store,
        size,
        tpcs,
        lambda: None,
        collect=False,
        counts=no_connection,
        batch=BATCH,
    )
    # Each finished transaction got a new, later tid; the last is the storage's.
    assert len(tids) % BATCH == 0 and len(set(tids)) == len(tids)
    assert tids == sorted(tids)
    assert store.db.storage.lastTransaction() == tids[-1]


def test_new_oid(benchmark: Any, request: Any, fab_store: Store, size: str) -> None:
    """Times BATCH calls of the storage's new_oid (ZEO's client fetches oids
    from the server 100 at a time).  zodbshootout: new_oid."""
    store = needs_database(fab_store, "no storage to allocate oids")
    new_oid = store.connection._storage.new_oid
    oids: list[bytes] = []

    def new_oids(_: Any) -> int:
        for _ in range(BATCH):
            oids.append(new_oid())
        return BATCH

    run(
        "new_oid",
        benchmark,
        request,
        store,
        size,
        new_oids,
        lambda: None,
        collect=False,
        counts=no_connection,
        batch=BATCH,
    )
    # Never the same oid twice (ZEO's client takes them from the server in
    # blocks of 100).
    assert oids and len(oids) % BATCH == 0 and len(set(oids)) == len(oids)


@pytest.fixture
def second_connection(fab_store: Store) -> Iterator[tuple[Any, Any]]:
    """Another connection to the test's database, with its own transaction
    manager: (connection, manager)."""
    store = needs_database(fab_store, "no connections, so no conflicts")
    manager = transaction.TransactionManager()
    connection = store.db.open(manager)
    try:
        yield connection, manager
    finally:
        manager.abort()
        connection.close()


def test_conflicts(
    benchmark: Any,
    request: Any,
    fab_store: Store,
    size: str,
    second_connection: tuple[Any, Any],
) -> None:
    """Two connections each add a process sequence to the same small BTree
    of sequences (one bucket) from the same starting state; the first
    commits (untimed), then the second's commit is timed: the storage finds
    the conflict and either resolves it (BTrees merge inserts of different
    keys; FileStorage and ZEO call that resolution) or raises ConflictError,
    which the second connection then aborts.  MappingStorage does no
    conflict resolution, so on mapping every round raises.  extra_info
    counts resolved and raised rounds; loads and stores are the second
    connection's.  zodbshootout: conflicts."""
    store = fab_store
    other, other_manager = second_connection
    outcomes: list[str] = []

    def owner_and_group(root: Any) -> tuple[Any, Any]:
        user = root[FAB_KEY].directory.users.minKey()
        owner = root[FAB_KEY].directory.users[user]
        return owner, owner.groups[0]

    def setup() -> Any:
        store.abort()
        root = store.root()
        tree = root["contended"] = IOBTree()
        for i in range(10):
            tree[i] = ProcessSequence(i, f"seed {i}", *owner_and_group(root))
        store.commit()
        # The second connection starts its transaction and reads the tree...
        other_manager.begin()
        theirs = other.root()["vfab-loadtest"]
        other_tree = theirs["contended"]
        assert len(other_tree) == 10
        # ...then the first adds sequence 100 and commits...
        tree[100] = ProcessSequence(100, "first", *owner_and_group(root))
        store.commit()
        # ...and the second adds sequence 101 to the tree it read.
        other_tree[101] = ProcessSequence(101, "second", *owner_and_group(theirs))
        return None

    def commit_second(_: Any) -> str:
        try:
            other_manager.commit()
        except ConflictError:
            other_manager.abort()
            outcomes.append("raised")
            return "raised"
        outcomes.append("resolved")
        return "resolved"

    def counts() -> tuple[int, int]:
        loads, stores = other.getTransferCounts(clear=True)
        return int(loads), int(stores)

    meter = run(
        "conflicts",
        benchmark,
        request,
        store,
        size,
        commit_second,
        setup,
        counts=counts,
    )
    timed = outcomes[-len(meter.cpu_s) :]  # the calibration round is not timed
    benchmark.extra_info["resolved"] = timed.count("resolved")
    benchmark.extra_info["raised"] = timed.count("raised")
    assert len(timed) == len(meter.cpu_s)
    # MappingStorage does no conflict resolution; the others resolve inserts
    # of different keys into one BTree bucket.
    expected = "raised" if store.name == "mapping" else "resolved"
    assert set(timed) == {expected}, timed
