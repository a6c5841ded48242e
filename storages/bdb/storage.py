"""BDBStorage: a ZODB storage in a transactional Berkeley DB environment.

On disk: see storages.bdb.format (shared with pack.py) and docs/bdb.md.

BDBStorage needs ZODB and berkeleydb only, not the rest of this suite: it
is a plain ZODB storage, and its errors are ZODB's POSException.StorageError
(BDBError).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import zc.lockfile
import zope.interface
from berkeleydb import db
from persistent.TimeStamp import TimeStamp
from ZODB import POSException
from ZODB.BaseStorage import DataRecord, TransactionRecord
from ZODB.BaseStorage import checkCurrentSerialInTransaction as _check_current
from ZODB.BaseStorage import copy as _copy_transactions
from ZODB.ConflictResolution import ConflictResolvingStorage
from ZODB.Connection import TransactionMetaData
from ZODB.interfaces import (
    IStorage,
    IStorageCurrentRecordIteration,
    IStorageIteration,
    IStorageRestoreable,
)
from ZODB.utils import load_current, newTid, p64, tid_repr, u64, z64

from storages.bdb.format import (
    DATA_FILE,
    DIRTY,
    FORMAT,
    FORMAT_PREFIX,
    LAYOUT_VERSION,
    LOCK_FILE,
    LOG_FILE_SIZE,
    MAXKEY,
    TABLES,
    Tables,
    decode_txn,
    encode_txn,
    last_key,
    seek_before,
    split_oids,
)
from storages.bdb.options import BDBError, BDBOptions, check_path, out_of_memory

log = logging.getLogger(__name__)

#: Entries of the in-memory map oid -> current tid (BDBStorage._tids) before
#: it is emptied and starts again: ~100 bytes each.
TIDS_MAX = 200_000


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def _reason(e: BaseException) -> str:
    # DBError args are (errno, "message -- detail"); so are those of the
    # MemoryError berkeleydb raises for ENOMEM ("unable to allocate space
    # from the buffer cache").
    if len(e.args) > 1 and isinstance(e.args[1], str):
        return e.args[1]
    return str(e)


def _is_environment_debris(name: str) -> bool:
    """Files Berkeley DB or we create before zodb.db exists (an environment
    whose creation was interrupted): safe to open over."""
    return name == LOCK_FILE or name.startswith(("__db.", "log."))


def _as_bytes(text: str | bytes) -> bytes:
    # TransactionMetaData holds bytes, but its attributes can be set to str.
    return text.encode("utf-8") if isinstance(text, str) else text


@zope.interface.implementer(
    IStorage,
    IStorageIteration,
    IStorageRestoreable,
    IStorageCurrentRecordIteration,
)
class BDBStorage(ConflictResolvingStorage):
    """A ZODB storage keeping every object revision in Berkeley DB B-trees.

    ``BDBStorage(path, **options)``: *path* is the environment directory,
    created if absent; options are those of BDBOptions (cache_size,
    durability, checkpoint_kbytes, max_locks, pack_gc).

    Commits are Berkeley DB transactions, durable as ``durability`` says
    (options.DURABILITY); a crash is recovered on the next open.  Loads read
    without locks (DB_READ_UNCOMMITTED) and ignore records above
    lastTransaction(), so a commit in progress never blocks them nor shows
    through.  Conflicts are resolved as on FileStorage.  pack() removes old
    revisions and, with pack_gc, unreachable objects, in small batches
    while commits go on.

    Limits:

    - One process owns an environment (a lock file says so); others go
      through ZEO.  No read-only mode, no blobs, no undo, no
      deleteObject (IExternalGC).
    - A transaction's records are kept in memory until tpc_vote, then
      written in one Berkeley DB transaction: the largest transaction is
      bounded by memory and by max_locks (one lock per changed page).
    - tpc_vote writes but does not prepare (no XA): if the process dies
      between vote and finish, the transaction is rolled back, as
      FileStorage does.
    - pack keeps the set of reachable oids in memory (an fsIndex, ~16
      bytes per object) and frees pages for reuse inside zodb.db; the file
      does not shrink.  An object made unreachable before the pack time
      and referenced again by a commit that started from an older
      snapshot can be lost, as with FileStorage.
    - Log files are removed once a checkpoint no longer needs them
      (DB_LOG_AUTO_REMOVE): Berkeley DB's catastrophic recovery from an
      archive of logs is not available; back up with copyTransactionsFrom
      or db_hotbackup.
    """

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        self._options = BDBOptions.from_kwargs(options)
        self._path = os.path.abspath(os.fspath(path))
        self.__name__ = self._path
        self._lock = threading.RLock()  # Python-side state below
        self._commit_lock = threading.Lock()  # tpc_begin .. tpc_finish/abort
        self._closed = True
        self._lockfile: zc.lockfile.LockFile | None = None
        self._env: Any = None
        self._tables: dict[str, Any] = {}
        self._clear_transaction()
        self._packing = False
        self._panicked = False  # DB_RUNRECOVERY seen: reopen to recover
        # oid -> tid of its current committed revision (one with data), for
        # the objects committed or loaded lately: store()'s conflict check
        # then needs no B-tree seek.  Exact when present: tpc_finish sets
        # it, pack's GC removes from it, a load adds to it only if no
        # commit or pack finished meanwhile (self._epoch unchanged).
        self._tids: dict[bytes, bytes] = {}
        self._epoch = 0  # bumped under self._lock by every commit and pack write

        self._check_directory()
        self._lockfile = self._acquire_lock()
        try:
            self._open_environment()
        except BaseException:
            self._close_handles()
            self._lockfile.close()
            self._lockfile = None
            raise
        self._closed = False

    # -- opening ---------------------------------------------------------

    def _check_directory(self) -> None:
        """Create the directory if absent.  Refuses (BDBError) a path too
        long for Berkeley DB, a file, or a directory holding other things
        than an environment."""
        path = self._path
        check_path(path)  # before anything is created there
        if os.path.exists(path) and not os.path.isdir(path):
            raise BDBError(f"{path} is not a directory (a BDBStorage is a directory)")
        try:
            os.makedirs(path, exist_ok=True)
            entries = os.listdir(path)
        except OSError as e:
            raise BDBError(f"cannot create or list {path}: {e.strerror}") from None
        if DATA_FILE in entries:
            return
        foreign = sorted(n for n in entries if not _is_environment_debris(n))
        if foreign:
            raise BDBError(
                f"{path} is not a BDBStorage environment (no {DATA_FILE}, and it "
                f"holds other files such as {foreign[0]!r}); refusing to create "
                "one there"
            )

    def _acquire_lock(self) -> zc.lockfile.LockFile:
        lock_path = os.path.join(self._path, LOCK_FILE)
        try:
            return zc.lockfile.LockFile(lock_path)
        except zc.lockfile.LockError:
            raise BDBError(
                f"{self._path} is locked: another BDBStorage has it open, in "
                "another process or this one (share it through ZEO)"
            ) from None
        except OSError as e:
            raise BDBError(f"cannot write in {self._path}: {e.strerror}") from None

    def _open_environment(self) -> None:
        opts = self._options
        env = self._env = db.DBEnv()
        try:
            env.set_cachesize(opts.cache_size >> 30, opts.cache_size & ((1 << 30) - 1))
            env.set_lk_max_locks(opts.max_locks)
            env.set_lk_max_objects(opts.max_locks)
            # Only one writer runs at a time (the commit lock), but a
            # detector costs nothing and turns any wait-for cycle into an
            # error instead of a hang.
            env.set_lk_detect(db.DB_LOCK_DEFAULT)
            # A large in-memory log buffer: a big commit is written to the
            # log in few large writes rather than many 32 KiB ones.
            env.set_lg_bsize(1 << 20)
            # Log files are preallocated: 4 MiB rather than Berkeley DB's
            # 10 MiB keeps a small database small on disk.
            env.set_lg_max(LOG_FILE_SIZE)
            if opts.durability == "write-nosync":
                env.set_flags(db.DB_TXN_WRITE_NOSYNC, 1)
            # DB_RECOVER is safe because the lock file guarantees no other
            # process is in this environment; it replays the log after a
            # crash and rebuilds the __db.* regions.
            env.open(
                self._path,
                db.DB_CREATE
                | db.DB_INIT_MPOOL
                | db.DB_INIT_TXN
                | db.DB_INIT_LOCK
                | db.DB_INIT_LOG
                | db.DB_RECOVER
                | db.DB_THREAD,
            )
            env.log_set_config(db.DB_LOG_AUTO_REMOVE, 1)
        except (db.DBError, MemoryError) as e:
            fatal = isinstance(e, db.DBRunRecoveryError)
            short = out_of_memory(e, self._path, opts.cache_size, fatal)
            if short is not None:
                raise short from None
            raise BDBError(
                f"cannot open the Berkeley DB environment in {self._path}: {_reason(e)}"
            ) from None
        # Only now: recovery removes a zodb.db whose creation never committed
        # (a crash during the first open), and then it is created afresh.
        self._open_tables(fresh=not os.path.exists(os.path.join(self._path, DATA_FILE)))

    def _open_tables(self, fresh: bool) -> None:
        env = self._env
        # Never DB_CREATE inside an existing zodb.db: a file that lacks our
        # tables is someone else's, and is reported, not changed.
        # DB_READ_UNCOMMITTED, not DB_MULTIVERSION: readers do not wait for
        # a commit in progress (they skip its records by tid, see DIRTY),
        # and a commit's changed pages can be written out before it
        # commits.  With DB_MULTIVERSION each of them stayed in the cache,
        # with a copy of its committed version, until the commit: a
        # transaction updating more pages than the cache holds failed.
        flags = db.DB_THREAD | DIRTY | (db.DB_CREATE if fresh else 0)
        txn = env.txn_begin()
        try:
            for name in TABLES:
                table = db.DB(env)
                self._tables[name] = table
                table.open(DATA_FILE, name, db.DB_BTREE, flags, txn=txn)
            meta = self._tables["meta"]
            if fresh:
                meta.put(b"format", FORMAT, txn=txn)
                meta.put(b"len", p64(0), txn=txn)
            else:
                self._check_format(meta.get(b"format", txn=txn))
        except db.DBError as e:
            txn.abort()
            raise BDBError(
                f"{os.path.join(self._path, DATA_FILE)} is not a usable BDBStorage "
                f"database: {_reason(e)}"
            ) from None
        except BaseException:
            txn.abort()
            raise
        txn.commit()
        self._data = self._tables["data"]
        self._txns = self._tables["txns"]
        self._txn_oids = self._tables["txn_oids"]
        self._meta = self._tables["meta"]
        self._public_tables = Tables(self._data, self._txns, self._txn_oids, self._meta)

        last = last_key(self._txns)
        self._ltid = last if last is not None else z64
        last = last_key(self._data)
        # The largest oid with data: any oid above it is new, and store()
        # skips looking it up (new_oid's oids always are).
        self._max_stored = last[:8] if last is not None else z64
        self._oid = u64(self._max_stored)  # new_oid's high-water mark
        self._len = u64(self._meta.get(b"len"))

    def _check_format(self, marker: bytes | None) -> None:
        """Refuse a database of another layout version, or not ours."""
        if marker == FORMAT:
            return
        where = os.path.join(self._path, DATA_FILE)
        if marker is not None and marker.startswith(FORMAT_PREFIX):
            version = marker[len(FORMAT_PREFIX) :].decode("ascii", "replace")
            raise BDBError(
                f"{where} is in BDBStorage layout version {version}; this "
                f"BDBStorage reads layout version {LAYOUT_VERSION} only (open it "
                "with the version that wrote it and copy it with "
                "copyTransactionsFrom)"
            )
        raise BDBError(
            f"{where} is not a BDBStorage database (format marker missing or different)"
        )

    def _close_handles(self) -> None:
        for table in self._tables.values():
            try:
                table.close()
            except db.DBError:
                pass
        self._tables = {}
        if self._env is not None:
            try:
                self._env.close()
            except db.DBError:
                pass
            self._env = None

    # -- IStorage: bookkeeping ---------------------------------------------

    def getName(self) -> str:  # IStorage
        return self.__name__

    def sortKey(self) -> str:  # IStorage
        return self.__name__

    def isReadOnly(self) -> bool:  # IStorage
        return False

    def supportsUndo(self) -> bool:  # ZEO asks
        return False

    def lastTransaction(self) -> bytes:  # IStorage
        with self._lock:
            return self._ltid

    def __len__(self) -> int:  # IStorage: objects whose current revision exists
        return self._len

    def getSize(self) -> int:  # IStorage
        """Bytes on disk: zodb.db plus the log written so far.  Log files
        are preallocated, so the current one counts up to its end of log,
        not its file size; pages not yet checkpointed into zodb.db are in
        the log, so the sum grows with every commit."""
        try:
            stat = self._env.log_stat()
        except db.DBError:
            stat = {"cur_file": 0, "cur_offset": 0}
        total = 0
        with os.scandir(self._path) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith("log.") and name[4:].isdigit():
                    if int(name[4:]) == stat["cur_file"]:
                        total += stat["cur_offset"]
                        continue
                elif name != DATA_FILE:
                    continue
                try:
                    total += entry.stat().st_size
                except FileNotFoundError:  # a log removed meanwhile
                    pass
        return total

    def new_oid(self) -> bytes:  # IStorage
        with self._lock:
            self._oid += 1
            return p64(self._oid)

    def _note_oid(self, oid: bytes) -> None:
        # oids that arrive from elsewhere (restore, copying) must never be
        # handed out again.
        value = u64(oid)
        if value > self._oid:
            with self._lock:
                self._oid = max(self._oid, value)

    def close(self) -> None:  # IStorage
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._btxn is not None:
                self._abort_quietly(self._btxn)
                self._btxn = None
            if self._panicked:
                # Nothing can be written; the next open's DB_RECOVER
                # replays the log.
                self._close_handles()
                if self._lockfile is not None:
                    self._lockfile.close()
                    self._lockfile = None
                return
            try:
                # A checkpoint now makes the next open's recovery instant
                # and lets Berkeley DB remove the logs it no longer needs.
                self._env.txn_checkpoint(0, 0, db.DB_FORCE)
                self._env.log_archive(db.DB_ARCH_REMOVE)
            except db.DBError as e:
                log.warning(
                    "BDBStorage %s: checkpoint on close failed: %s",
                    self._path,
                    _reason(e),
                )
            self._close_handles()
            if self._lockfile is not None:
                self._lockfile.close()
                self._lockfile = None

    def cleanup(self) -> None:  # ZODB's test framework
        pass

    # -- IStorage: reads ---------------------------------------------------

    def loadBefore(
        self, oid: bytes, tid: bytes
    ) -> tuple[bytes, bytes, bytes | None] | None:  # IStorage
        # Records above lastTransaction() are a commit in progress: not
        # seen, neither as the revision nor as its end_tid.
        try:
            epoch = self._epoch
            ltid = self.lastTransaction()
            limit = p64(u64(ltid) + 1)
            if tid > limit:
                tid = limit
            cursor = self._data.cursor(flags=DIRTY)
            try:
                after, rec = seek_before(cursor, oid + tid)
                end = (
                    after[0][8:]
                    if after is not None
                    and after[0][:8] == oid
                    and after[0][8:] <= ltid
                    else None
                )
            finally:
                cursor.close()
        except (db.DBError, MemoryError) as e:
            raise self._runtime_error("loading an object", e) from None
        if rec is None or rec[0][:8] != oid:
            if end is None:
                raise POSException.POSKeyError(oid)
            return None  # created at or after tid
        if not rec[1]:
            raise POSException.POSKeyError(oid)  # creation undone
        serial = rec[0][8:]
        if end is None:
            # The current revision: remember it for store(), unless a commit
            # or a pack finished since ltid was read (it may have changed).
            tids = self._tids
            tids[oid] = serial
            if self._epoch != epoch:
                tids.pop(oid, None)
        return rec[1], serial, end

    def load(self, oid: bytes, version: str = "") -> tuple[bytes, bytes]:
        return load_current(self, oid)  # type: ignore[no-any-return]

    def loadSerial(self, oid: bytes, serial: bytes) -> bytes:  # IStorage
        if serial > self.lastTransaction():  # not committed (yet)
            raise POSException.POSKeyError(oid, serial)
        data = self._data.get(oid + serial, flags=DIRTY)
        if not data:
            raise POSException.POSKeyError(oid, serial)
        return data  # type: ignore[no-any-return]

    def _current(self, oid: bytes) -> tuple[bytes | None, bool]:
        """(tid of the current revision or None, whether it has data)."""
        try:
            limit = self._limit()
            cursor = self._data.cursor(flags=DIRTY)
            try:
                # One byte tells a revision from an undone creation.
                rec = seek_before(cursor, oid + limit, dlen=1)[1]
            finally:
                cursor.close()
        except (db.DBError, MemoryError) as e:
            raise self._runtime_error("loading an object", e) from None
        if rec is None or rec[0][:8] != oid:
            return None, False
        return rec[0][8:], bool(rec[1])

    def _limit(self) -> bytes:
        """Keys below oid + this are committed revisions of oid: the records
        of a commit in progress (read uncommitted) have a larger tid."""
        return p64(u64(self.lastTransaction()) + 1)

    def getTid(self, oid: bytes) -> bytes:  # ZEO's IServeable
        tid, live = self._current(oid)
        if tid is None or not live:
            raise POSException.POSKeyError(oid)
        return tid

    def history(
        self, oid: bytes, size: int = 1, filter: Callable[[dict], bool] | None = None
    ) -> list[dict[str, Any]]:  # IStorage
        result: list[dict[str, Any]] = []
        cursor = self._data.cursor(flags=DIRTY)
        try:
            rec = seek_before(cursor, oid + self._limit())[1]
            while rec is not None and rec[0][:8] == oid and len(result) < size:
                tid = rec[0][8:]
                meta = self._txns.get(tid, flags=DIRTY)
                _, user, desc, ext = decode_txn(meta) if meta else (" ", b"", b"", b"")
                d = dict(TransactionMetaData(user, desc, ext).extension)
                d.update(
                    time=TimeStamp(tid).timeTime(),
                    user_name=user,
                    description=desc,
                    tid=tid,
                    serial=tid,
                    size=len(rec[1]),
                )
                if filter is None or filter(d):
                    result.append(d)
                rec = cursor.prev()
        finally:
            cursor.close()
        if not result and self._current(oid)[0] is None:
            raise POSException.POSKeyError(oid)
        return result

    def record_iternext(
        self, next: bytes | None = None
    ) -> tuple[bytes, bytes, bytes, bytes | None]:  # IStorageCurrentRecordIteration
        oid = z64 if next is None else next
        limit = self._limit()
        while True:
            cursor = self._data.cursor(flags=DIRTY)
            try:
                rec = seek_before(cursor, oid + limit)[1]
                # The next oid with revisions (committed or not: one with
                # none committed is skipped by the next round).
                nxt = cursor.set_range(oid + MAXKEY, dlen=0, doff=0)
            finally:
                cursor.close()
            if rec is None or rec[0][:8] < oid:
                # oid has no committed revisions: go on with the next oid.
                if nxt is None:
                    raise ValueError("no more records")
                oid = nxt[0][:8]
                continue
            following = nxt[0][:8] if nxt is not None else None
            if rec[1]:
                return rec[0][:8], rec[0][8:], rec[1], following
            if following is None:
                raise ValueError("no more records")
            oid = following  # skip an undone creation

    # -- IStorage: two-phase commit -----------------------------------------

    # The transaction being committed; set by tpc_begin, cleared by
    # tpc_finish/tpc_abort, owned meanwhile by the thread holding the
    # commit lock.
    _transaction: Any
    _tid: bytes
    _tstatus: str
    _ude: tuple[bytes, bytes, bytes]  # user, description, extension
    _tdata: dict[bytes, bytes | None]  # oid -> pickle, in store order
    _tlive: dict[bytes, bool]  # oid -> had data before this transaction
    _resolved: list[bytes]  # oids whose conflicts store() resolved
    _btxn: Any  # the Berkeley DB transaction, from tpc_vote on
    _tlen: int  # len(self) once committed

    def _clear_transaction(self) -> None:
        self._transaction = None
        self._tid = z64
        self._tstatus = " "
        self._ude = (b"", b"", b"")
        self._tdata = {}
        self._tlive = {}
        self._resolved = []
        self._btxn = None
        self._tlen = 0

    def tpc_begin(
        self, transaction: Any, tid: bytes | None = None, status: str = " "
    ) -> None:
        with self._lock:
            if self._transaction is transaction:
                raise POSException.StorageTransactionError(
                    "Duplicate tpc_begin calls for same transaction"
                )
        self._commit_lock.acquire()
        try:
            with self._lock:
                if self._closed:
                    raise BDBError(f"{self._path} is closed")
                if tid is None:
                    tid = newTid(self._ltid)
                elif tid <= self._ltid:
                    # Keys sort by tid and lastTransaction() must never go
                    # back: a copy must arrive in order.
                    raise POSException.StorageTransactionError(
                        f"tid {tid_repr(tid)} is not after the last "
                        f"transaction {tid_repr(self._ltid)}"
                    )
                self._clear_transaction()
                self._transaction = transaction
                self._tid = tid
                self._tstatus = status
                self._ude = (
                    _as_bytes(transaction.user),
                    _as_bytes(transaction.description),
                    _as_bytes(transaction.extension_bytes),
                )
        except BaseException:
            self._commit_lock.release()
            raise

    def tpc_transaction(self) -> Any:  # ZEO's IServeable
        return self._transaction

    def store(
        self,
        oid: bytes,
        serial: bytes | None,
        data: bytes,
        version: str,
        transaction: Any,
    ) -> None:  # IStorage
        if transaction is not self._transaction:
            raise POSException.StorageTransactionError(self, transaction)
        if version:
            raise POSException.Unsupported("versions are not supported")
        if oid > self._max_stored:
            committed, live = None, False
        else:
            # Under the commit lock the map cannot change but by additions
            # of current revisions.
            committed = self._tids.get(oid)
            live = committed is not None
            if not live:
                committed, live = self._current(oid)
        if committed is not None and committed != serial:
            data = self.tryToResolveConflict(oid, committed, serial, data)
            self._resolved.append(oid)
        self._stage(oid, data, live)

    def restore(
        self,
        oid: bytes,
        serial: bytes,
        data: bytes | None,
        version: str,
        prev_txn: bytes | None,
        transaction: Any,
    ) -> None:  # IStorageRestoreable
        # Like store without the conflict check.  The record is kept under
        # the transaction's tid (tpc_begin's), which copy() makes equal to
        # serial unless it had to reorder time stamps.
        if transaction is not self._transaction:
            raise POSException.StorageTransactionError(self, transaction)
        if version:
            raise TypeError("versions are not supported")
        if data is None and prev_txn is not None:
            # A back pointer the source did not resolve: copy its data.
            data = self._data.get(oid + prev_txn, flags=DIRTY) or None
        live = False if oid > self._max_stored else self._current(oid)[1]
        self._stage(oid, data, live)

    def _stage(self, oid: bytes, data: bytes | None, live: bool) -> None:
        self._note_oid(oid)
        self._tlive.setdefault(oid, live)
        self._tdata[oid] = data

    checkCurrentSerialInTransaction = _check_current  # IStorage

    def tpc_vote(self, transaction: Any) -> list[bytes]:  # IStorage
        # From tpc_begin to tpc_finish/abort the committing thread owns the
        # transaction state (it holds the commit lock); self._lock is not
        # held while writing, so new_oid in other threads does not wait.
        if transaction is not self._transaction:
            raise POSException.StorageTransactionError(
                "tpc_vote called with wrong transaction"
            )
        if self._btxn is None:
            self._write_transaction()
        return self._resolved

    def _write_transaction(self) -> None:
        """Write the staged records in a Berkeley DB transaction left open
        for tpc_finish to commit (or tpc_abort to roll back)."""
        tid, tdata, tlive = self._tid, self._tdata, self._tlive
        txn = self._env.txn_begin()
        try:
            put = self._data.put
            # In key order: neighbouring puts hit the same B-tree pages.
            for oid in sorted(tdata):
                put(oid + tid, tdata[oid] or b"", txn=txn)
            self._txns.put(tid, encode_txn(self._tstatus, *self._ude), txn=txn)
            self._txn_oids.put(tid, b"".join(tdata), txn=txn)
            delta = sum(bool(tdata[oid]) - tlive[oid] for oid in tdata)
            self._meta.put(b"len", p64(self._len + delta), txn=txn)
        except (db.DBError, MemoryError) as e:
            self._abort_quietly(txn)
            raise self._runtime_error("writing a transaction", e) from None
        except BaseException:
            self._abort_quietly(txn)
            raise
        self._btxn = txn
        self._tlen = self._len + delta

    def _abort_quietly(self, txn: Any) -> None:
        """Roll back *txn*; a failure there (the environment panicked) is
        remembered, not raised: the error that caused it is the news."""
        try:
            txn.abort()
        except (db.DBError, MemoryError) as e:
            self._note_panic(e)

    def _note_panic(self, e: BaseException) -> None:
        if isinstance(e, db.DBRunRecoveryError) or "PANIC" in _reason(e):
            self._panicked = True

    def _runtime_error(self, doing: str, e: BaseException) -> BDBError:
        """One line for the user, with advice, for a Berkeley DB failure."""
        self._note_panic(e)
        reason = _reason(e)
        recover = (
            "; the environment panicked: close the storage, reopening it runs recovery"
            if self._panicked
            else ""
        )
        if (
            "buffer cache" in reason
            or (isinstance(e, MemoryError) and "lock" not in reason.lower())
            or (self._panicked and "allocate memory" in reason)
        ):
            return BDBError(
                f"{self._path}: {doing} failed: Berkeley DB cache "
                f"({_mib(self._options.cache_size)}) too small for this "
                f"transaction: raise --bdb-cache-size (the cache_size option) "
                f"({reason}){recover}"
            )
        if isinstance(e, db.DBRunRecoveryError):
            return BDBError(
                f"{self._path}: Berkeley DB needs recovery ({reason}); "
                "close and reopen the storage"
            )
        if isinstance(e, MemoryError) or "lock" in reason.lower():
            return BDBError(
                f"{self._path}: {doing} failed: {_reason(e)} (a transaction "
                f"changing more than max_locks={self._options.max_locks} pages "
                "needs a larger max_locks)"
            )
        return BDBError(f"{self._path}: {doing} failed: {_reason(e)}")

    def tpc_finish(
        self, transaction: Any, f: Callable[[bytes], None] | None = None
    ) -> bytes:  # IStorage
        if transaction is not self._transaction:
            raise POSException.StorageTransactionError(
                "tpc_finish called with wrong transaction"
            )
        try:
            if self._btxn is None:
                self._write_transaction()
            tid = self._tid
            btxn, self._btxn = self._btxn, None
            try:
                # Durable (as `durability` says) when this returns.
                btxn.commit()
            except (db.DBError, MemoryError) as e:
                raise self._runtime_error("committing", e) from None
            # Invalidations go out before lastTransaction() moves, and under
            # the lock lastTransaction() takes (as ZODB's BaseStorage does): a
            # connection that sees the new tid has already been sent the
            # invalidations, so it never keeps a stale object beside a new
            # one (ZODB's test_race_loadopen_vs_local_invalidate).
            with self._lock:
                if f is not None:
                    f(tid)
                self._epoch += 1
                self._ltid = tid
                self._len = self._tlen
                self._remember(tid)
            if self._tdata:
                self._max_stored = max(self._max_stored, max(self._tdata))
        finally:
            self._clear_transaction()
            self._commit_lock.release()
        self._maybe_checkpoint()
        return tid

    def _remember(self, tid: bytes) -> None:
        """Under self._lock, after commit: the objects written are current
        at *tid* (or, an undone creation copied, have no data)."""
        tids = self._tids
        if len(tids) + len(self._tdata) > TIDS_MAX:
            tids.clear()
        for oid, data in self._tdata.items():
            if data:
                tids[oid] = tid
            else:
                tids.pop(oid, None)

    def tpc_abort(self, transaction: Any) -> None:  # IStorage
        if transaction is not self._transaction:
            return
        try:
            if self._btxn is not None:
                btxn, self._btxn = self._btxn, None
                self._abort_quietly(btxn)
        finally:
            self._clear_transaction()
            self._commit_lock.release()

    def _maybe_checkpoint(self) -> None:
        # Berkeley DB decides: it checkpoints only once checkpoint_kbytes
        # of log were written since the last one, so this is cheap.  Log
        # files older than the checkpoint are then removed automatically.
        try:
            self._env.txn_checkpoint(self._options.checkpoint_kbytes, 0)
        except db.DBError as e:
            log.warning("BDBStorage %s: checkpoint failed: %s", self._path, _reason(e))

    # -- IStorageIteration and friends ----------------------------------------

    def iterator(
        self, start: bytes | None = None, stop: bytes | None = None
    ) -> TransactionIterator:
        return TransactionIterator(self, start, stop)

    def lastInvalidations(self, count: int) -> list[tuple[bytes, list[bytes]]]:
        """The last *count* transactions as (tid, oids), oldest first: ZEO
        uses them to let reconnecting clients keep their caches."""
        result: list[tuple[bytes, list[bytes]]] = []
        ltid = self.lastTransaction()
        cursor = self._txn_oids.cursor(flags=DIRTY)
        try:
            rec = cursor.last()
            while rec is not None and len(result) < count:
                if rec[0] <= ltid:  # committed
                    result.append((rec[0], split_oids(rec[1])))
                rec = cursor.prev()
        finally:
            cursor.close()
        result.reverse()
        return result

    def copyTransactionsFrom(self, other: Any, verbose: bool = False) -> None:
        """Copy every transaction of *other* (any IStorageIteration) here."""
        _copy_transactions(other, self, verbose)

    # -- pack ---------------------------------------------------------------
    # What Packer uses (storages.bdb.pack.PackTarget): the tables, the commit
    # lock, write() and checkpoint(); nothing else of this class.

    @property
    def tables(self) -> Tables:
        """The open table handles (layout: storages.bdb.format)."""
        return self._public_tables

    @property
    def commit_lock(self) -> threading.Lock:
        """Held from tpc_begin to tpc_finish or tpc_abort: a writer holding
        it changes nothing a commit is changing."""
        return self._commit_lock

    def write(
        self,
        doing: str,
        change: Callable[[Any], None],
        removed: int = 0,
        gone: Iterable[bytes] = (),
    ) -> None:
        """Run change(txn) in one Berkeley DB transaction and commit it;
        *removed* live objects are taken off len() in the same transaction,
        and the oids in *gone* (objects change() deleted) are forgotten.
        Call with commit_lock held.  A Berkeley DB failure is a BDBError
        saying what was being done."""
        txn = self._env.txn_begin()
        try:
            change(txn)
            if removed:
                self._meta.put(b"len", p64(self._len - removed), txn=txn)
        except db.DBError as e:
            txn.abort()
            raise self._runtime_error(doing, e) from None
        except BaseException:
            txn.abort()
            raise
        txn.commit()
        with self._lock:
            self._len -= removed
            self._epoch += 1
            for oid in gone:
                self._tids.pop(oid, None)

    def checkpoint(self) -> None:
        """Checkpoint if enough log was written since the last one."""
        self._maybe_checkpoint()

    def pack(
        self, t: float, referencesf: Callable[..., Any], gc: bool | None = None
    ) -> None:
        """Remove revisions older than time *t* that a later revision before
        *t* replaced; with gc (default: the pack_gc option) also objects
        unreachable from the root at *t*.  Commits continue meanwhile."""
        from storages.bdb.pack import Packer

        stop = TimeStamp(*time.gmtime(t)[:5] + (t % 60,)).raw()
        with self._lock:
            if self._closed:
                raise BDBError(f"{self._path} is closed")
            if self._packing:
                raise BDBError(f"{self._path} is already being packed")
            self._packing = True
        try:
            Packer(
                self, stop, referencesf, self._options.pack_gc if gc is None else gc
            ).pack()
        finally:
            with self._lock:
                self._packing = False

    def __repr__(self) -> str:
        return f"<BDBStorage {self._path}>"


class BDBTransaction(TransactionRecord):
    """One transaction as the iterator gives it; its records are read when
    iterated (each time anew)."""

    def __init__(
        self, storage: BDBStorage, tid: bytes, meta: bytes, oids: bytes
    ) -> None:
        status, user, desc, ext = decode_txn(meta)
        super().__init__(tid, status, user, desc, ext)
        self._storage = storage
        self._oids = oids

    def __iter__(self) -> Iterator[DataRecord]:
        get = self._storage._data.get
        tid = self.tid
        for oid in split_oids(self._oids):
            data = get(oid + tid, flags=DIRTY)
            if data is None:
                continue  # removed by a pack since
            yield DataRecord(oid, tid, data or None, None)


class TransactionIterator:
    """Transactions from start to stop (both included, both optional) as of
    the moment the iterator was made: later commits are not seen.

    No cursor stays open between steps (an open snapshot would pin old page
    versions in the cache), so iterating slowly costs nothing.
    """

    def __init__(
        self, storage: BDBStorage, start: bytes | None, stop: bytes | None
    ) -> None:
        self._storage = storage
        self._next = z64 if start is None else start
        last = storage.lastTransaction()
        self._stop = last if stop is None or stop > last else stop
        self._done = False

    def __iter__(self) -> TransactionIterator:
        return self

    def __next__(self) -> BDBTransaction:
        if self._done or self._next > self._stop:
            self._done = True
            raise StopIteration
        storage = self._storage
        cursor = storage._txns.cursor(flags=DIRTY)
        try:
            rec = cursor.set_range(self._next)
        finally:
            cursor.close()
        if rec is None or rec[0] > self._stop:
            self._done = True
            raise StopIteration
        tid, meta = rec
        self._next = p64(u64(tid) + 1)
        oids = storage._txn_oids.get(tid, flags=DIRTY) or b""
        return BDBTransaction(storage, tid, meta, oids)

    next = __next__

    def close(self) -> None:
        self._done = True
