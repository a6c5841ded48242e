"""Storages that break one promise each, for the consistency check's tests:
ZConfig section types runzeo serves after "%import tests.support.badstores"
(tests/checker/test_storages.py), as a broken storage would be served.

    %import tests.support.badstores
    <zeo> address 127.0.0.1:PORT </zeo>
    <stalefilestorage 1>
      path /tmp/x/Data.fs
    </stalefilestorage>

Each is a FileStorage (or, for the volatile one, a DemoStorage over one)
that misbehaves on the records of the class it names (ProcessCapability by
default): the data set is written before through a plain FileStorage.
Test code only, never installed.

- stalefilestorage: for *seconds* after a commit, a load of an object it
  changed returns the revision before, as if current (a stale read);
- forgetfulfilestorage: leaves the objects it names out of the
  invalidations the ZEO server sends (a dropped invalidation);
- rangefilestorage: stores every third ProcessStep with 1 wafer instead of
  the number written (a field changed, still in range);
- holefilestorage: never writes every fifth new ProcessStep, though the
  sequence refers to it (a record never written);
- volatilefilestorage: keeps every commit in memory over a read-only
  FileStorage and exits the server *die-after* commits after it opened
  (commits acknowledged, then lost with the server);
- abortcommitsfilestorage: an abort commits what was stored before the
  failure (an abort that commits);
- lwwfilestorage: stores over whatever revision is current (last writer
  wins, no first-committer-wins);
- noreadcurrentfilestorage: does not check readCurrent's reads.
"""

from __future__ import annotations

import io
import os
import pickle
import threading
import time
from typing import Any

from ZODB.config import BaseConfig
from ZODB.DemoStorage import DemoStorage
from ZODB.FileStorage import FileStorage
from ZODB.POSException import POSKeyError
from ZODB.utils import get_pickle_metadata


def _class_of(data: bytes) -> str:
    return str(get_pickle_metadata(data)[1])


class StaleFileStorage(FileStorage):
    """For *seconds* after a commit, loads of the *classes* objects it
    changed return the revision before it, claiming it is current."""

    def __init__(
        self, path: str, seconds: float = 1.0, classes: str = "ProcessCapability"
    ) -> None:
        super().__init__(path)
        self._seconds = seconds
        self._classes = set(classes.split())
        self._pending: list[bytes] = []
        self._stale: dict[bytes, float] = {}

    def store(
        self, oid: bytes, serial: bytes, data: bytes, version: str, txn: Any
    ) -> Any:
        if _class_of(data) in self._classes:
            self._pending.append(oid)
        return super().store(oid, serial, data, version, txn)

    def tpc_finish(self, txn: Any, f: Any = None) -> Any:
        tid = super().tpc_finish(txn, f)
        now = time.monotonic()
        for oid in self._pending:
            self._stale[oid] = now
        self._pending = []
        return tid

    def tpc_abort(self, txn: Any) -> None:
        self._pending = []
        super().tpc_abort(txn)

    def _is_stale(self, oid: bytes) -> bool:
        at = self._stale.get(oid)
        return at is not None and time.monotonic() - at < self._seconds

    def loadBefore(self, oid: bytes, tid: bytes) -> Any:
        found = super().loadBefore(oid, tid)
        if found is not None and found[2] is None and self._is_stale(oid):
            older = super().loadBefore(oid, found[1])
            if older is not None:
                return older[0], older[1], None
        return found

    def load(self, oid: bytes, version: str = "") -> Any:
        data, serial = super().load(oid, version)
        if self._is_stale(oid):
            older = super().loadBefore(oid, serial)
            if older is not None:
                return older[0], older[1]
        return data, serial


class ForgetfulFileStorage(FileStorage):
    """Leaves the *classes* objects a commit stored out of the
    invalidations the ZEO server sends other clients: the server's
    finish callback is its ZEOStorage's _invalidate, whose list it sends."""

    def __init__(self, path: str, classes: str = "ProcessCapability") -> None:
        super().__init__(path)
        self._classes = set(classes.split())
        self._drop: set[bytes] = set()

    def store(
        self, oid: bytes, serial: bytes, data: bytes, version: str, txn: Any
    ) -> Any:
        if _class_of(data) in self._classes:
            self._drop.add(oid)
        return super().store(oid, serial, data, version, txn)

    def tpc_finish(self, txn: Any, f: Any = None) -> Any:
        sent = getattr(getattr(f, "__self__", None), "invalidated", None)
        if isinstance(sent, list):
            sent[:] = [oid for oid in sent if oid not in self._drop]
        self._drop = set()
        return super().tpc_finish(txn, f)

    def tpc_abort(self, txn: Any) -> None:
        self._drop = set()
        super().tpc_abort(txn)


class _Ref:
    def __init__(self, ref: Any) -> None:
        self.ref = ref


class _Reader(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        return _Ref(pid)


class _Writer(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        return obj.ref if isinstance(obj, _Ref) else None


def _with_wafers(data: bytes, wafers: int) -> bytes:
    """A ProcessStep record with another wafer count, every other field as
    it was (the class pickle kept byte for byte)."""
    f = io.BytesIO(data)
    reader = _Reader(f)
    reader.load()  # the class
    head = f.tell()
    state = reader.load()
    state["wafers"] = wafers
    out = io.BytesIO()
    out.write(data[:head])
    _Writer(out, 3).dump(state)
    return out.getvalue()


class RangeFileStorage(FileStorage):
    """Stores every *every*-th ProcessStep with more than one wafer with
    1 wafer: still inside its range (1 to the lot size), not what was
    written."""

    def __init__(self, path: str, every: int = 3) -> None:
        super().__init__(path)
        self._every = every
        self._seen = 0

    def store(
        self, oid: bytes, serial: bytes, data: bytes, version: str, txn: Any
    ) -> Any:
        if _class_of(data) == "ProcessStep":
            self._seen += 1
            if self._seen % self._every == 0:
                changed = _with_wafers(data, 1)
                if changed != data:
                    data = changed
        return super().store(oid, serial, data, version, txn)


class HoleFileStorage(FileStorage):
    """Acknowledges every commit but never writes every *every*-th new
    ProcessStep, which its sequence refers to."""

    def __init__(self, path: str, every: int = 5) -> None:
        super().__init__(path)
        self._every = every
        self._seen = 0

    def store(
        self, oid: bytes, serial: bytes, data: bytes, version: str, txn: Any
    ) -> Any:
        if _class_of(data) == "ProcessStep":
            try:
                self.load(oid)
            except POSKeyError:
                self._seen += 1
                if self._seen % self._every == 0:
                    return None
        return super().store(oid, serial, data, version, txn)


class VolatileStorage(DemoStorage):
    """Commits into memory over a read-only FileStorage, and exits the
    server process *die_after* commits after it opened (half a second
    later, once they were acknowledged): every commit since is lost."""

    def __init__(self, path: str, die_after: int = 100) -> None:
        super().__init__(base=FileStorage(path, read_only=True))
        self._die_after = die_after
        self._commits = 0

    def tpc_finish(self, txn: Any, f: Any = None) -> Any:
        tid = super().tpc_finish(txn, f)
        self._commits += 1
        if self._commits == self._die_after:
            threading.Thread(target=_exit_soon, daemon=True).start()
        return tid


def _exit_soon() -> None:
    time.sleep(0.5)
    os._exit(3)


class AbortCommitsFileStorage(FileStorage):
    """tpc_abort commits what the transaction stored so far, when it
    stored anything: a failed commit's writes appear."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._stored = False

    def tpc_begin(self, txn: Any, tid: Any = None, status: str = " ") -> Any:
        self._stored = False
        return super().tpc_begin(txn, tid, status)

    def store(
        self, oid: bytes, serial: bytes, data: bytes, version: str, txn: Any
    ) -> Any:
        result = super().store(oid, serial, data, version, txn)
        self._stored = True
        return result

    def checkCurrentSerialInTransaction(
        self, oid: bytes, serial: bytes, txn: Any
    ) -> None:
        super().checkCurrentSerialInTransaction(oid, serial, txn)

    def tpc_abort(self, txn: Any) -> None:
        if self._stored and txn is self._transaction:
            self._stored = False
            try:
                super().tpc_vote(txn)
                super().tpc_finish(txn)
                return
            except Exception:
                pass
        super().tpc_abort(txn)


class LWWFileStorage(FileStorage):
    """Stores over the current revision whatever revision the writer
    read: no conflict, the last writer wins."""

    def store(
        self, oid: bytes, serial: bytes, data: bytes, version: str, txn: Any
    ) -> Any:
        try:
            _, current = self.load(oid)
        except POSKeyError:
            current = serial
        return super().store(oid, current, data, version, txn)


class NoReadCurrentFileStorage(FileStorage):
    """Does not check the reads a transaction named with readCurrent."""

    def checkCurrentSerialInTransaction(
        self, oid: bytes, serial: bytes, txn: Any
    ) -> None:
        pass


class _Config(BaseConfig):
    """Datatype of every section here: the class by its section type."""

    kinds: dict[str, type[Any]] = {}

    def open(self, *args: Any, **kwargs: Any) -> Any:
        config = self.config
        options = {
            key.replace("-", "_"): value
            for key, value in vars(config).items()
            if not key.startswith("_") and key != "path" and value is not None
        }
        return self.kinds[config.getSectionType()](config.path, **options)


_Config.kinds = {
    "stalefilestorage": StaleFileStorage,
    "forgetfulfilestorage": ForgetfulFileStorage,
    "rangefilestorage": RangeFileStorage,
    "holefilestorage": HoleFileStorage,
    "volatilefilestorage": VolatileStorage,
    "abortcommitsfilestorage": AbortCommitsFileStorage,
    "lwwfilestorage": LWWFileStorage,
    "noreadcurrentfilestorage": NoReadCurrentFileStorage,
}
