"""BDBStorage's record layout: what storage.py writes and pack.py rewrites.

Both modules import this one (as ZODB's FileStorage/format.py serves
fspack.py), so neither imports the other's internals.

On disk, in the environment directory (see docs/bdb.md):

    zodb.db      the B-tree tables below, one file
    log.*        Berkeley DB's write-ahead log (removed once checkpointed)
    __db.*       Berkeley DB's shared regions (cache, locks; scratch)
    zodb.lock    held by the one process that has the storage open

Tables in zodb.db (keys big-endian, so B-tree order is numeric order):

    data      oid + tid -> pickle (b"" for an object whose creation
              was undone in the source of a copy)  # {oid+tid -> pickle}
    txns      tid -> status, user, description, extension
    txn_oids  tid -> the oids the transaction wrote, in store order
    meta      b"format" -> FORMAT (names LAYOUT_VERSION), b"len" -> live objects (p64),
              b"packed" -> tid the last pack went up to + b"g" if it
              collected garbage, b"-" if not
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from berkeleydb import db

DATA_FILE = "zodb.db"
LOCK_FILE = "zodb.lock"
#: The record layout this module describes.  An environment records the
#: version it was written in (meta b"format"); one written in another
#: version is refused with an error naming both, never read.  Version 1: the
#: tables above (revisions keyed oid + tid in one table).
LAYOUT_VERSION = 1
FORMAT_PREFIX = b"vfab-loadtest BDBStorage "
FORMAT = FORMAT_PREFIX + str(LAYOUT_VERSION).encode("ascii")
TABLES = ("data", "txns", "txn_oids", "meta")
#: Above every real tid (those stop at 0x7fff...): oid + MAXKEY sorts after
#: all revisions of oid.
MAXKEY = b"\xff" * 8
#: Reads never wait for a commit in progress: they read uncommitted pages
#: and ignore every record whose tid is above lastTransaction() (see
#: BDBStorage._limit).  Not MVCC: see docs/bdb.md, "Cache size".
DIRTY = db.DB_READ_UNCOMMITTED
LOG_FILE_SIZE = 4 << 20
TXN_HEADER = struct.Struct(">cIII")  # status, len(user), len(desc), len(ext)


class Tables(NamedTuple):
    """The open table handles of one environment (see the module docstring)."""

    data: Any
    txns: Any
    txn_oids: Any
    meta: Any


def last_key(table: Any) -> bytes | None:
    """The largest key of *table*, or None when it is empty."""
    cursor = table.cursor()
    try:
        rec = cursor.last(dlen=0, doff=0)
    finally:
        cursor.close()
    return None if rec is None else rec[0]


def seek_before(
    cursor: Any, key: bytes, dlen: int | None = None
) -> tuple[tuple[bytes, bytes] | None, tuple[bytes, bytes] | None]:
    """(the first record at or after *key* as set_range found it, with no
    data; the last record before *key*, with its first *dlen* bytes of data
    or all of it), either None when there is none; the cursor is left on
    the second.

    Read uncommitted, the table can change between two cursor moves: a
    commit in progress inserts its records (whose tids are above every
    committed one) after set_range and before prev or last.  Were set_range
    past the end, last() would then return one of those: a revision of
    another object, or an uncommitted one of this object.  So the records at
    or after *key* that showed up meanwhile are stepped over.
    """
    part = {} if dlen is None else {"dlen": dlen, "doff": 0}
    after = cursor.set_range(key, dlen=0, doff=0)
    rec = cursor.prev(**part) if after is not None else cursor.last(**part)
    while rec is not None and rec[0] >= key:
        rec = cursor.prev(**part)
    return after, rec


def encode_txn(status: str | bytes, user: bytes, desc: bytes, ext: bytes) -> bytes:
    if isinstance(status, str):
        status = status.encode("ascii")
    return TXN_HEADER.pack(status, len(user), len(desc), len(ext)) + user + desc + ext


def decode_txn(value: bytes) -> tuple[str, bytes, bytes, bytes]:
    status, lu, ld, le = TXN_HEADER.unpack_from(value)
    i = TXN_HEADER.size
    return (
        status.decode("ascii"),
        value[i : i + lu],
        value[i + lu : i + lu + ld],
        value[i + lu + ld : i + lu + ld + le],
    )


def split_oids(blob: bytes) -> list[bytes]:
    return [blob[i : i + 8] for i in range(0, len(blob), 8)]
