"""BDBStorage behaviour beyond ZODB's conformance mixins: snapshot reads
during a commit, BTrees conflicts, pack and its GC while commits go on,
logs and checkpoints, copying to and from FileStorage, and bad input."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("berkeleydb")

import transaction  # noqa: E402
import ZODB  # noqa: E402
from BTrees.Length import Length  # noqa: E402
from BTrees.OOBTree import OOBTree  # noqa: E402
from persistent.mapping import PersistentMapping  # noqa: E402
from ZODB.Connection import TransactionMetaData  # noqa: E402
from ZODB.FileStorage import FileStorage  # noqa: E402
from ZODB.POSException import ConflictError, POSKeyError  # noqa: E402
from ZODB.serialize import referencesf  # noqa: E402
from ZODB.tests.MinPO import MinPO  # noqa: E402
from ZODB.tests.StorageTestBase import zodb_pickle, zodb_unpickle  # noqa: E402
from ZODB.utils import load_current, p64, z64  # noqa: E402

from storages.bdb import BDBError  # noqa: E402
from storages.bdb import pack as bdbpack  # noqa: E402
from storages.bdb.storage import DATA_FILE, BDBStorage  # noqa: E402

SMALL = {"cache_size": 8 << 20}


@pytest.fixture
def env(tmp_path: Path) -> Path:
    return tmp_path / "env"


@pytest.fixture
def bdb(env: Path) -> Iterator[BDBStorage]:
    storage = BDBStorage(env, **SMALL)
    yield storage
    storage.close()


def store(storage: Any, oid: bytes | None, serial: bytes, data: bytes) -> bytes:
    """One transaction storing one record; its tid."""
    oid = storage.new_oid() if oid is None else oid
    t = TransactionMetaData()
    storage.tpc_begin(t)
    storage.store(oid, serial, data, "", t)
    storage.tpc_vote(t)
    return storage.tpc_finish(t)  # type: ignore[no-any-return]


# -- reads during a commit ------------------------------------------------


def test_readers_not_blocked_by_a_commit_in_progress(bdb: BDBStorage) -> None:
    oids = [bdb.new_oid() for _ in range(200)]
    t = TransactionMetaData()
    bdb.tpc_begin(t)
    for oid in oids:
        bdb.store(oid, z64, zodb_pickle(MinPO(1)), "", t)
    bdb.tpc_vote(t)
    first = bdb.tpc_finish(t)

    # A second commit rewrites every object and stops after tpc_vote: its
    # Berkeley DB transaction holds write locks on all those pages.
    t = TransactionMetaData()
    bdb.tpc_begin(t)
    for oid in oids:
        bdb.store(oid, first, zodb_pickle(MinPO(2)), "", t)
    bdb.tpc_vote(t)

    seen: list[Any] = []

    def read() -> None:
        seen.append([zodb_unpickle(load_current(bdb, oid)[0]).value for oid in oids])

    # Berkeley DB has no lock timeout here: a load that waited for the
    # commit's locks would wait until tpc_finish, which comes after this
    # bound, far longer than 200 loads take on any machine.
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(60)
    blocked = reader.is_alive()
    bdb.tpc_finish(t)
    reader.join()
    assert not blocked, "a load waited for the commit in progress"
    assert seen == [[1] * len(oids)]  # the last committed state
    assert {zodb_unpickle(load_current(bdb, o)[0]).value for o in oids} == {2}


# -- ZODB-level behaviour ---------------------------------------------------


class _GrowingCursor:
    """A cursor over sorted records to which a "commit in progress" appends
    *late* records just after set_range answers: the window in which a read
    uncommitted cursor's set_range and its prev() or last() see different
    tables."""

    def __init__(self, records: list[tuple[bytes, bytes]], late: list[Any]) -> None:
        self.records, self.late, self.i = records, late, -1

    def set_range(self, key: bytes, **partial: int) -> tuple[bytes, bytes] | None:
        found = [i for i, (k, _) in enumerate(self.records) if k >= key]
        self.i = found[0] if found else len(self.records)
        rec = self.records[self.i] if found else None
        self.records.extend(self.late)  # sorted after everything: appended
        self.records.sort()
        return rec

    def prev(self, **partial: int) -> tuple[bytes, bytes] | None:
        self.i -= 1
        return self.records[self.i] if self.i >= 0 else None

    def last(self, **partial: int) -> tuple[bytes, bytes] | None:
        self.i = len(self.records) - 1
        return self.records[self.i] if self.records else None

    def close(self) -> None:
        pass


def test_a_commit_appending_during_a_seek_is_not_seen(bdb: BDBStorage) -> None:
    # test7ZODBThreads' "POSKeyError 0x00": the root's only committed
    # revision is the last record; a reader's set_range(root + ltid + 1)
    # finds nothing; a commit then appends the root's next revision and a
    # new object; last() returned the new object: not the root, so
    # POSKeyError (or, had the root's revision been last, uncommitted data).
    first = store(bdb, z64, z64, zodb_pickle(MinPO(1)))
    committed = [(z64 + first, zodb_pickle(MinPO(1)))]
    pending = p64(int.from_bytes(first, "big") + 5)
    late = [(z64 + pending, b"uncommitted"), (p64(1) + pending, b"new object")]

    class Data:
        def cursor(self, **flags: int) -> _GrowingCursor:
            return _GrowingCursor(list(committed), late)

    real, bdb._data = bdb._data, Data()  # type: ignore[assignment]
    try:
        assert bdb.loadBefore(z64, pending)[:2] == (committed[0][1], first)
        assert bdb.history(z64)[0]["tid"] == first
        assert bdb.record_iternext()[:2] == (z64, first)
    finally:
        bdb._data = real


def test_btrees_and_length_conflicts_resolve(bdb: BDBStorage) -> None:
    db = ZODB.DB(bdb)
    try:
        tm1, tm2 = transaction.TransactionManager(), transaction.TransactionManager()
        c1, c2 = db.open(tm1), db.open(tm2)
        c1.root()["tree"] = OOBTree({"a": 1, "z": 26})
        c1.root()["count"] = Length(0)
        tm1.commit()
        tm2.begin()
        tree1, tree2 = c1.root()["tree"], c2.root()["tree"]
        tree1["b"] = 2
        c1.root()["count"].change(1)
        tree2["y"] = 25
        c2.root()["count"].change(1)
        tm1.commit()
        tm2.commit()  # the same bucket and Length: resolved, not a conflict
        tm1.begin()
        assert dict(c1.root()["tree"]) == {"a": 1, "b": 2, "y": 25, "z": 26}
        assert c1.root()["count"]() == 2
    finally:
        db.close()


def test_len_and_size_follow_the_data(env: Path) -> None:
    storage = BDBStorage(env, **SMALL)
    assert len(storage) == 0
    size0 = storage.getSize()
    for _ in range(20):
        store(storage, None, z64, zodb_pickle(MinPO("x" * 10_000)))
    assert len(storage) == 20
    assert storage.getSize() > size0 + 200_000
    storage.close()
    reopened = BDBStorage(env, **SMALL)
    try:
        assert len(reopened) == 20
        assert reopened.new_oid() > largest_oid(reopened)
    finally:
        reopened.close()


def largest_oid(storage: BDBStorage) -> bytes:
    """The largest oid with data in *storage*."""
    largest = z64
    for txn in storage.iterator():
        for record in txn:
            largest = max(largest, record.oid)
    return largest


def test_logs_are_removed_after_checkpoints(env: Path) -> None:
    storage = BDBStorage(
        env, durability="write-nosync", checkpoint_kbytes=1024, **SMALL
    )
    try:
        oid = storage.new_oid()
        serial = z64
        blob = zodb_pickle(MinPO(os.urandom(100_000)))
        for _ in range(300):  # ~30 MB of log, 7 log files' worth
            serial = store(storage, oid, serial, blob)
        logs = [n for n in os.listdir(env) if n.startswith("log.")]
        assert len(logs) <= 3, logs
    finally:
        storage.close()


def test_history_and_record_iteration(bdb: BDBStorage) -> None:
    oid = bdb.new_oid()
    tids = [store(bdb, oid, z64, zodb_pickle(MinPO(0)))]
    tids.append(store(bdb, oid, tids[-1], zodb_pickle(MinPO(1))))
    history = bdb.history(oid, size=5)
    assert [h["tid"] for h in history] == tids[::-1]
    with pytest.raises(POSKeyError):
        bdb.history(bdb.new_oid())
    other = bdb.new_oid()
    store(bdb, other, z64, zodb_pickle(MinPO(2)))
    first = bdb.record_iternext()
    assert first[:2] == (oid, tids[-1]) and first[3] == other
    second = bdb.record_iternext(first[3])
    assert second[0] == other and second[3] is None
    assert [oids for _, oids in bdb.lastInvalidations(2)] == [[oid], [other]]


def test_tids_must_increase(bdb: BDBStorage) -> None:
    from ZODB.POSException import StorageTransactionError

    tid = store(bdb, None, z64, zodb_pickle(MinPO(0)))
    with pytest.raises(StorageTransactionError):
        bdb.tpc_begin(TransactionMetaData(), tid)
    store(bdb, None, z64, zodb_pickle(MinPO(1)))  # the commit lock was released


# -- pack -------------------------------------------------------------------


def test_pack_removes_old_revisions_and_garbage(env: Path) -> None:
    storage = BDBStorage(env, **SMALL)
    db = ZODB.DB(storage)
    conn = db.open()
    root = conn.root()
    root["a"] = PersistentMapping({"b": PersistentMapping()})
    root["gone"] = PersistentMapping({"child": PersistentMapping()})
    transaction.commit()
    a_oid, b_oid = root["a"]._p_oid, root["a"]["b"]._p_oid
    gone = [root["gone"]._p_oid, root["gone"]["child"]._p_oid]
    first_tid = root["a"]._p_serial
    root["a"]["x"] = 1
    del root["gone"]
    transaction.commit()
    assert len(storage) == 5
    time.sleep(0.01)
    db.pack()
    assert len(storage) == 3
    for oid in gone:
        with pytest.raises(POSKeyError):
            load_current(storage, oid)
    with pytest.raises(POSKeyError):
        storage.loadSerial(a_oid, first_tid)  # an old revision
    load_current(storage, b_oid)  # reachable, kept
    assert all(oid not in gone for t in storage.iterator() for oid in oids_of(t))
    db.close()
    reopened = BDBStorage(env, **SMALL)
    try:
        assert len(reopened) == 3
    finally:
        reopened.close()


def oids_of(txn: Any) -> list[bytes]:
    return [record.oid for record in txn]


def test_current_tids_follow_commits_loads_and_gc(bdb: BDBStorage) -> None:
    # store()'s conflict check reads oid -> current tid from memory when it
    # can (BDBStorage._tids): the map must never hold a stale tid.
    a, b = bdb.new_oid(), bdb.new_oid()
    ta = store(bdb, a, z64, zodb_pickle(MinPO(1)))
    tb = store(bdb, b, z64, zodb_pickle(MinPO(2)))
    assert bdb._tids == {a: ta, b: tb}  # from the commits
    bdb._tids.clear()
    assert load_current(bdb, a)[1] == ta
    assert bdb._tids == {a: ta}  # from a load of the current revision
    ta2 = store(bdb, a, ta, zodb_pickle(MinPO(3)))
    bdb.loadBefore(a, ta2)  # an old revision: not remembered
    assert bdb._tids[a] == ta2
    t = TransactionMetaData()
    bdb.tpc_begin(t)
    with pytest.raises(ConflictError):
        bdb.store(a, ta, zodb_pickle(MinPO(4)), "", t)  # stale serial
    bdb.tpc_abort(t)
    # A pack's GC forgets what it removes (neither a nor b is reachable).
    time.sleep(0.01)
    bdb.pack(time.time(), referencesf)
    assert a not in bdb._tids and b not in bdb._tids
    with pytest.raises(POSKeyError):
        load_current(bdb, a)


def test_pack_without_gc_keeps_unreachable_objects(bdb: BDBStorage) -> None:
    db = ZODB.DB(bdb)
    conn = db.open()
    conn.root()["x"] = PersistentMapping()
    transaction.commit()
    oid = conn.root()["x"]._p_oid
    del conn.root()["x"]
    transaction.commit()
    time.sleep(0.01)
    bdb.pack(time.time(), referencesf, gc=False)
    data, _ = load_current(bdb, oid)  # raises POSKeyError if it was removed
    assert b"PersistentMapping" in data
    assert len(bdb) == 2  # the root and the unreachable mapping
    db.close()


def test_pack_keeps_what_a_concurrent_commit_references(
    bdb: BDBStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An object unreachable at the pack time, referenced again by a commit
    # made while the pack runs (between its walk and its deletions), stays.
    db = ZODB.DB(bdb)
    conn = db.open()
    conn.root()["x"] = PersistentMapping({"y": PersistentMapping()})
    transaction.commit()
    x = conn.root()["x"]
    del conn.root()["x"]
    transaction.commit()
    time.sleep(0.01)
    pack_time = time.time()

    delete = bdbpack.Packer._delete

    def commit_then_delete(self: Any, *args: Any) -> None:
        if "x" not in conn.root():
            conn.root()["x"] = x  # from the connection's cache
            transaction.commit()
        delete(self, *args)

    monkeypatch.setattr(bdbpack.Packer, "_delete", commit_then_delete)
    bdb.pack(pack_time, referencesf)
    conn.cacheMinimize()
    assert conn.root()["x"]["y"] == {}  # both loaded from the storage
    db.close()


def test_pack_with_gc_after_one_without(bdb: BDBStorage) -> None:
    db = ZODB.DB(bdb)
    conn = db.open()
    conn.root()["x"] = PersistentMapping()
    transaction.commit()
    oid = conn.root()["x"]._p_oid
    del conn.root()["x"]
    transaction.commit()
    time.sleep(0.01)
    pack_time = time.time()
    bdb.pack(pack_time, referencesf, gc=False)
    load_current(bdb, oid)
    bdb.pack(pack_time, referencesf, gc=True)  # same time, but now with GC
    with pytest.raises(POSKeyError):
        load_current(bdb, oid)
    db.close()


def test_pack_to_an_earlier_time_is_a_no_op(bdb: BDBStorage) -> None:
    oid = bdb.new_oid()
    tid = store(bdb, oid, z64, zodb_pickle(MinPO(0)))
    store(bdb, oid, tid, zodb_pickle(MinPO(1)))
    bdb.pack(time.time() + 100, referencesf, gc=False)
    bdb.pack(time.time(), referencesf, gc=False)
    assert len(bdb.history(oid, size=10)) == 1


# -- copying ----------------------------------------------------------------


def make_filestorage(path: Path) -> None:
    db = ZODB.DB(FileStorage(str(path)))
    conn = db.open()
    root = conn.root()
    for i in range(5):
        txn = transaction.get()
        txn.note(f"step {i}")
        txn.setUser(f"user{i}")
        txn.setExtendedInfo("step", i)
        root[f"m{i}"] = PersistentMapping({"i": i})
        root.setdefault("tree", OOBTree())[f"k{i}"] = i
        if i:
            root[f"m{i - 1}"]["next"] = root[f"m{i}"]
        transaction.commit()
    db.close()


def records(storage: Any) -> list[tuple[Any, ...]]:
    """Every transaction and record, as comparable tuples."""
    result: list[tuple[Any, ...]] = []
    it = storage.iterator()
    for txn in it:
        result.append((txn.tid, txn.status, txn.user, txn.description, txn.extension))
        result.extend((r.oid, r.tid, r.data) for r in txn)
    if hasattr(it, "close"):
        it.close()
    return result


def test_copy_filestorage_to_bdb_and_back(tmp_path: Path) -> None:
    make_filestorage(tmp_path / "a.fs")
    source = FileStorage(str(tmp_path / "a.fs"), read_only=True)
    bdb = BDBStorage(tmp_path / "env", **SMALL)
    back = FileStorage(str(tmp_path / "b.fs"))
    try:
        bdb.copyTransactionsFrom(source)
        back.copyTransactionsFrom(bdb)
        expected = records(source)
        assert len(expected) > 10
        assert records(bdb) == expected
        assert records(back) == expected
        assert len(bdb) == len(source) == len(back)
        db = ZODB.DB(bdb)
        assert db.open().root()["m0"]["next"]["next"]["i"] == 2
        db.close()
    finally:
        source.close()
        back.close()
        bdb.close()


# -- bad input ----------------------------------------------------------------


def test_a_file_is_not_an_environment(tmp_path: Path) -> None:
    path = tmp_path / "Data.fs"
    path.write_bytes(b"not a directory")
    with pytest.raises(BDBError, match="not a directory"):
        BDBStorage(path)
    assert path.read_bytes() == b"not a directory"


def test_a_directory_of_other_things_is_refused_untouched(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(BDBError, match="not a BDBStorage environment") as info:
        BDBStorage(tmp_path)
    assert "\n" not in str(info.value)
    assert sorted(os.listdir(tmp_path)) == before


def test_a_corrupt_database_file_is_refused_not_changed(env: Path) -> None:
    env.mkdir()
    garbage = os.urandom(64 * 1024)
    (env / DATA_FILE).write_bytes(garbage)
    with pytest.raises(BDBError, match="not a usable BDBStorage") as info:
        BDBStorage(env)
    assert "\n" not in str(info.value)
    assert (env / DATA_FILE).read_bytes() == garbage
    # The lock is released: a second try fails the same way, not "locked".
    with pytest.raises(BDBError, match="not a usable BDBStorage"):
        BDBStorage(env)


def test_another_layout_version_is_refused_by_name(env: Path) -> None:
    from berkeleydb import db

    from storages.bdb.format import FORMAT, FORMAT_PREFIX, LAYOUT_VERSION

    BDBStorage(env, **SMALL).close()
    e = db.DBEnv()
    e.open(
        str(env),
        db.DB_CREATE
        | db.DB_INIT_MPOOL
        | db.DB_INIT_TXN
        | db.DB_INIT_LOCK
        | db.DB_INIT_LOG,
    )
    meta = db.DB(e)
    meta.open(DATA_FILE, "meta", db.DB_BTREE, db.DB_AUTO_COMMIT)
    assert meta.get(b"format") == FORMAT
    meta.put(b"format", FORMAT_PREFIX + b"2")
    meta.close()
    e.close()
    with pytest.raises(
        BDBError,
        match=f"layout version 2; this BDBStorage reads layout version "
        f"{LAYOUT_VERSION}",
    ):
        BDBStorage(env, **SMALL)


def test_another_berkeley_db_file_is_refused(env: Path) -> None:
    from berkeleydb import db

    env.mkdir()
    other = db.DB()
    other.open(str(env / DATA_FILE), None, db.DB_BTREE, db.DB_CREATE)
    other.put(b"key", b"value")
    other.close()
    before = (env / DATA_FILE).read_bytes()
    with pytest.raises(BDBError, match="not a usable BDBStorage"):
        BDBStorage(env)
    assert (env / DATA_FILE).read_bytes() == before


def test_a_corrupt_log_is_reported(env: Path) -> None:
    storage = BDBStorage(env, **SMALL)
    store(storage, None, z64, zodb_pickle(MinPO(1)))
    storage.close()
    (log,) = sorted(env.glob("log.*"))
    log.write_bytes(os.urandom(log.stat().st_size))
    with pytest.raises(BDBError, match="cannot open the Berkeley DB environment"):
        BDBStorage(env)
    assert (env / DATA_FILE).exists() and log.exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"durability": "nosync"}, "bad durability 'nosync'; choose from sync"),
        ({"cache_size": 1000}, "bad cache_size 1000"),
        ({"cache_size": "64MB"}, "expected an integer"),
        ({"page_size": 4096}, "unknown BDBStorage option 'page_size'"),
    ],
)
def test_bad_options(env: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(BDBError, match=message):
        BDBStorage(env, **options)
    assert not env.exists()  # validated before anything is created


LOCK_HOLDER = """
import sys, time
from storages.bdb.storage import BDBStorage
storage = BDBStorage(sys.argv[1], cache_size=8 << 20)
print("open", flush=True)
sys.stdin.read()
storage.close()
"""


@pytest.mark.subprocess
def test_a_second_process_gets_a_clear_error(env: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(env)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        with pytest.raises(BDBError, match="is locked: another BDBStorage") as e:
            BDBStorage(env)
        assert "\n" not in str(e.value)
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0
    BDBStorage(env).close()  # free again once the holder closed it


UNWRITABLE = """
import os, sys
from storages.bdb import BDBError
from storages.bdb.storage import BDBStorage
if os.geteuid() == 0:
    # root writes anywhere: open as nobody (after the imports, which need
    # files only root may read here).
    os.setgid(65534)
    os.setuid(65534)
try:
    BDBStorage(sys.argv[1])
except BDBError as e:
    print(e)
"""


@pytest.mark.subprocess
def test_an_unwritable_directory_is_reported(tmp_path: Path) -> None:
    # Outside pytest's tmp_path, whose parents only root may enter.
    base = Path(tempfile.mkdtemp(prefix="bdb-ro-"))
    env = base / "ro"
    try:
        base.chmod(0o755)
        env.mkdir()
        env.chmod(0o555)
        out = subprocess.run(
            [sys.executable, "-c", UNWRITABLE, str(env)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out == f"cannot write in {env}: Permission denied\n"
        assert os.listdir(env) == []
    finally:
        env.chmod(0o755)
        shutil.rmtree(base)


# -- transactions larger than the cache, resource failures ---------------------


def _fill(storage: BDBStorage, oids: list[bytes], serial: bytes, data: bytes) -> Any:
    t = TransactionMetaData()
    storage.tpc_begin(t)
    for oid in oids:
        storage.store(oid, serial, data, "", t)
    return t


def test_a_transaction_changing_more_pages_than_the_cache_holds(env: Path) -> None:
    """Every record of 20,000 gets a new revision next to its first one: the
    transaction changes every data page (~6 MB) through a 1 MiB cache.  With
    DB_MULTIVERSION each changed page stayed in the cache until the commit,
    and this failed ("unable to allocate space from the buffer cache", then
    a panic); now changed pages are written out as the cache needs room."""
    storage = BDBStorage(env, cache_size=1 << 20)
    try:
        oids = [storage.new_oid() for _ in range(20_000)]
        t = _fill(storage, oids, z64, b"x" * 300)
        storage.tpc_vote(t)
        first = storage.tpc_finish(t)
        for n in range(2):
            t = _fill(storage, oids, first, b"%d" % n * 300)
            storage.tpc_vote(t)
            first = storage.tpc_finish(t)
        assert load_current(storage, oids[-1]) == (b"1" * 300, first)
    finally:
        storage.close()


def test_resource_failure_is_a_one_line_error_and_recovers(env: Path) -> None:
    """A transaction changing more pages than the lock table holds fails as
    a BDBError with advice, is rolled back, and the storage (reopened
    or not) still has the earlier commits."""
    storage = BDBStorage(env, cache_size=1 << 20, max_locks=1000)
    try:
        first = store(storage, None, z64, b"first")
        t = _fill(storage, [storage.new_oid() for _ in range(20_000)], z64, b"x" * 500)
        with pytest.raises(BDBError, match="larger max_locks") as info:
            storage.tpc_vote(t)
        storage.tpc_abort(t)
        assert "\n" not in str(info.value)
        assert storage.lastTransaction() == first and len(storage) == 1
    finally:
        storage.close()
    storage = BDBStorage(env, **SMALL)
    try:
        assert storage.lastTransaction() == first and len(storage) == 1
        assert load_current(storage, p64(1)) == (b"first", first)
    finally:
        storage.close()


class _FullCache:
    """A data table whose writes fail as Berkeley DB's do when no page of
    the cache can be freed."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def put(self, *args: Any, **kwargs: Any) -> None:
        raise MemoryError(
            12,
            "Cannot allocate memory -- BDB3017 unable to allocate space from "
            "the buffer cache",
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def test_cache_exhaustion_says_raise_the_cache_size(bdb: BDBStorage) -> None:
    first = store(bdb, None, z64, b"first")
    real = bdb._data
    bdb._data = _FullCache(real)
    try:
        t = _fill(bdb, [bdb.new_oid()], z64, b"x")
        with pytest.raises(BDBError) as info:
            bdb.tpc_vote(t)
        bdb.tpc_abort(t)
    finally:
        bdb._data = real
    message = str(info.value)
    assert "Berkeley DB cache (8 MiB) too small for this transaction" in message
    assert "raise --bdb-cache-size" in message and "\n" not in message
    assert not isinstance(info.value, MemoryError)
    assert bdb.lastTransaction() == first
    second = store(bdb, None, z64, b"second")  # the storage goes on
    assert second > first
