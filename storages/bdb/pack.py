"""Packing a BDBStorage while commits go on.

pack(t) keeps, for every object, the revision current at the pack time
(the last one before it) and every later one; older revisions go.  With
garbage collection an object also goes when no chain of references leads
to it from the root at the pack time, nor from any record written after
it.  The work is done in three steps:

1. Reachability: walk from the root (and from every object written after
   the pack time) through the references of each object's revisions from
   the pack time on, reading without locks (a commit in progress adds
   revisions, and so references: more is kept, never less).  The reachable
   oids are kept in an fsIndex (compact, like FileStorage's GC).
2. Sweep: scan the data table in key order in chunks of a few thousand
   records, choosing the keys to delete among the committed ones.
3. Each chunk's deletions are one short Berkeley DB transaction taken
   under the storage's commit lock, so commits wait at most for one chunk.
   Before deleting, the transactions committed since step 1 are read, and
   any object they wrote or reference is taken back from the doomed set
   (with everything it references).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ZODB.fsIndex import fsIndex
from ZODB.utils import p64, u64, z64

from storages.bdb.format import DIRTY, Tables, last_key, seek_before, split_oids

#: Records scanned per snapshot in the sweep (whole objects, so a chunk may
#: run over for an object with many revisions).
SCAN_CHUNK = 5000


class PackTarget(Protocol):
    """What Packer needs of a storage (BDBStorage provides it)."""

    @property
    def tables(self) -> Tables: ...

    @property
    def commit_lock(self) -> AbstractContextManager[Any]: ...

    def lastTransaction(self) -> bytes: ...

    def write(
        self,
        doing: str,
        change: Callable[[Any], None],
        removed: int = 0,
        gone: Iterable[bytes] = (),
    ) -> None: ...

    def checkpoint(self) -> None: ...


class Packer:
    """One pack of one storage to *stop* (a tid)."""

    def __init__(
        self,
        storage: PackTarget,
        stop: bytes,
        referencesf: Callable[[bytes], list[bytes]],
        gc: bool,
    ) -> None:
        self.storage = storage
        self.tables = storage.tables
        self.stop = stop
        self.referencesf = referencesf
        self.gc = gc
        self.reachable = fsIndex()  # oid -> 0, used as a set
        self.seen = z64  # transactions up to here are in self.reachable

    def pack(self) -> None:
        storage, tables = self.storage, self.tables
        last = tables.meta.get(b"packed")  # tid + b"g" (with GC) or b"-"
        if (
            last is not None
            and self.stop <= last[:8]
            and (last[8:] == b"g" or not self.gc)
        ):
            return  # already packed to this time or a later one, as thoroughly
        if last_key(tables.data) is None:
            return
        self.seen = storage.lastTransaction()
        if self.gc:
            self._walk(self._roots())
        resume: bytes | None = z64
        while resume is not None:
            doomed, old, resume = self._scan(resume)
            self._delete(doomed, old)
        with storage.commit_lock:
            mark = self.stop + (b"g" if self.gc else b"-")
            storage.write(
                "packing", lambda txn: tables.meta.put(b"packed", mark, txn=txn)
            )
        storage.checkpoint()

    # -- step 1 ---------------------------------------------------------------

    def _roots(self) -> list[bytes]:
        """The root and every oid written after the pack time, up to seen."""
        roots = [z64]
        cursor = self.tables.txn_oids.cursor(flags=DIRTY)
        try:
            rec = cursor.set_range(self.stop)
            while rec is not None and rec[0] <= self.seen:
                roots.extend(split_oids(rec[1]))
                rec = cursor.next()
        finally:
            cursor.close()
        return roots

    def _revisions_from_stop(self, oid: bytes) -> list[bytes]:
        """The data of oid's revision current at the pack time and of every
        later revision (one snapshot)."""
        stop = self.stop
        found = []
        cursor = self.tables.data.cursor(flags=DIRTY)
        try:
            rec = cursor.set_range(oid + stop)
            while rec is not None and rec[0][:8] == oid:
                found.append(rec[1])
                rec = cursor.next()
            rec = seek_before(cursor, oid + stop)[1]
            if rec is not None and rec[0][:8] == oid:
                found.append(rec[1])
        finally:
            cursor.close()
        return found

    def _walk(self, oids: Iterable[bytes]) -> None:
        """Add *oids* and everything they reach to self.reachable."""
        reachable, referencesf = self.reachable, self.referencesf
        stack = list(oids)
        while stack:
            oid = stack.pop()
            if oid in reachable:
                continue
            reachable[oid] = 0
            for data in self._revisions_from_stop(oid):
                if data:
                    stack.extend(r for r in referencesf(data) if r not in reachable)

    def _catch_up(self) -> None:
        """Under the commit lock: what commits since self.seen wrote or
        reference is reachable, whatever step 1 concluded."""
        storage = self.storage
        last = storage.lastTransaction()
        if last <= self.seen:
            return
        written = []
        cursor = self.tables.txn_oids.cursor(flags=DIRTY)
        try:
            rec = cursor.set_range(p64(u64(self.seen) + 1))
            while rec is not None:
                written.extend(split_oids(rec[1]))
                rec = cursor.next()
        finally:
            cursor.close()
        self.seen = last
        # An oid already reachable was walked; new references from a newer
        # revision of it are found by walking the written oids' revisions.
        for oid in written:
            if oid in self.reachable:
                del self.reachable[oid]
        self._walk(written)

    # -- step 2 ---------------------------------------------------------------

    def _scan(
        self, resume: bytes
    ) -> tuple[dict[bytes, tuple[list[bytes], bool]], list[bytes], bytes | None]:
        """From oid *resume* on, about SCAN_CHUNK records: ({doomed oid:
        (keys, was live)}, [old revision keys], next oid or None)."""
        stop, gc, reachable = self.stop, self.gc, self.reachable
        doomed: dict[bytes, tuple[list[bytes], bool]] = {}
        old: list[bytes] = []
        # Records above it are a commit in progress (read uncommitted).
        ltid = self.storage.lastTransaction()
        cursor = self.tables.data.cursor(flags=DIRTY)
        try:
            # One byte of each value tells a revision from an undone creation.
            rec = cursor.set_range(resume, dlen=1, doff=0)
            scanned = 0
            while rec is not None and scanned < SCAN_CHUNK:
                oid = rec[0][:8]
                keys, live = [], []
                while rec is not None and rec[0][:8] == oid:
                    if rec[0][8:] <= ltid:
                        keys.append(rec[0])
                        live.append(bool(rec[1]))
                    rec = cursor.next(dlen=1, doff=0)
                if not keys:
                    continue  # created by a commit in progress
                scanned += len(keys)
                before = sum(1 for k in keys if k[8:] < stop)
                if gc and oid not in reachable:
                    doomed[oid] = (keys, live[-1])
                elif before:
                    old.extend(keys[: before - 1])
                    if before == len(keys) and not live[-1]:
                        # Only an undone creation is left: nothing to keep.
                        old.append(keys[-1])
            resume_at = rec[0][:8] if rec is not None else None
        finally:
            cursor.close()
        return doomed, old, resume_at

    # -- step 3 ---------------------------------------------------------------

    def _delete(
        self, doomed: dict[bytes, tuple[list[bytes], bool]], old: list[bytes]
    ) -> None:
        storage, tables = self.storage, self.tables
        with storage.commit_lock:
            if self.gc and doomed:
                self._catch_up()
                doomed = {o: v for o, v in doomed.items() if o not in self.reachable}
            keys = old + [k for ks, _ in doomed.values() for k in ks]
            if not keys:
                return
            gone = sum(1 for _, was_live in doomed.values() if was_live)
            # Under the commit lock lastTransaction() cannot move.
            newest = storage.lastTransaction()

            def delete(txn: Any) -> None:
                by_tid: dict[bytes, set[bytes]] = defaultdict(set)
                for key in keys:
                    tables.data.delete(key, txn=txn)
                    by_tid[key[8:]].add(key[:8])
                for tid, oids in by_tid.items():
                    blob = tables.txn_oids.get(tid, txn=txn) or b""
                    left = b"".join(o for o in split_oids(blob) if o not in oids)
                    if left or tid == newest:
                        # The newest transaction stays, even empty: it is
                        # where lastTransaction() comes from on open.
                        tables.txn_oids.put(tid, left, txn=txn)
                    else:
                        tables.txn_oids.delete(tid, txn=txn)
                        tables.txns.delete(tid, txn=txn)

            storage.write("packing", delete, removed=gone, gone=doomed)
