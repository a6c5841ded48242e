"""The read-only check of a FileStorage (check_filestorage) and the
recovery of one a crash cut (recover_filestorage).

ZODB's fstest judges the layout, one transaction at a time; what it leaves
out is checked here: the pickles, a record's tid and its pointers to earlier
records, and whether a last transaction that runs past the end of the file
is a crash's cut (recoverable) or damage.  Nothing here writes but
recover_filestorage, on request.
"""

from __future__ import annotations

import io
import os
import re
import struct
import zlib
from pathlib import Path

from storages.base import CrashCutStorage, DamagedStorage, StorageError

#: How a damaged FileStorage is repaired; always on a copy (the output is a
#: new file), so the damaged original stays as evidence.
FS_REPAIR = "python -m ZODB.fsrecover {path} {path}.recovered"

# FileStorage's layout (ZODB.FileStorage.format): a 4-byte magic, then
# transactions: header (tid, length - 8, status, len(user), len(desc),
# len(ext)), user, desc, ext, data records, and the length again.  A data
# record: header (oid, tid, prev, tloc, len(version), len(data)), the
# pickle, or when len(data) is 0 an 8-byte back pointer.
_TXN_HEADER = struct.Struct(">8sQcHHH")
_DATA_HEADER = struct.Struct(">8s8sQQHQ")


class _Damage(Exception):
    """Where (byte offset) and what, inside _check_transactions."""

    def __init__(self, offset: int, what: str) -> None:
        super().__init__(offset, what)
        self.offset = offset
        self.what = what


class _CrashCut(_Damage):
    """The last transaction, from *offset* to the end of the file, is what a
    crash during its commit leaves: the *count*-th, *nbytes* long."""

    def __init__(self, offset: int, what: str, count: int, nbytes: int) -> None:
        super().__init__(offset, what)
        self.count = count
        self.nbytes = nbytes


#: How --recover keeps the bytes it drops: beside the file, as FileStorage
#: does when it cuts a transaction off (Data.fs.tr0, .tr1, ...).
FS_RECOVERY = (
    "serve or populate --recover on its directory drops it, keeping its "
    "bytes in {path}.trN"
)


def _tr_name(path: Path) -> Path:
    """The Data.fs.trN FileStorage's _truncate would write next."""
    i = 0
    while os.path.lexists(f"{path}.tr{i}"):
        i += 1
    return Path(f"{path}.tr{i}")


def check_filestorage(path: Path, in_use: bool = False) -> int:
    """Read the whole FileStorage *path* without writing anything (no lock,
    no index, no scratch file) and return its number of transactions;
    DamagedStorage (one line: where, what, how to repair a copy) when any
    transaction or data record is not whole, StorageError when it cannot be
    read.

    The layout is checked by ZODB's own fstest (ZODB.scripts.fstest, one
    transaction at a time: ascending tids, status, lengths, the length
    repeated after it, every data record inside its transaction), in its
    words; then every pickle must parse (two pickles, nothing after them;
    zc.zlibstorage's compressed records are decompressed first), which
    fstest leaves out.  Before fstest sees a transaction, one that runs past
    the end of the file is told apart: what a crash during its commit
    leaves (CrashCutStorage: --recover drops it, as FileStorage would when
    opened read-write) or damage ("truncated, possibly due to damaged
    records").  Its index file, when there is one, must load and match it
    (storages.fsindex).  *in_use*: another process has the file open for
    writing (a ZEO server); a short last transaction is then a commit in
    progress, not damage.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, as one with block
    except OSError as e:
        raise StorageError(f"cannot read {path}: {e.strerror}") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            count = _check_transactions(f, path, size, in_use)
        except _CrashCut as c:
            raise CrashCutStorage(
                str(path),
                c.count,
                c.offset,
                c.nbytes,
                c.what,
                FS_RECOVERY.format(path=path),
            ) from None
        except _Damage as d:
            raise DamagedStorage(
                str(path), f"at byte {d.offset}", d.what, FS_REPAIR.format(path=path)
            ) from None
        except OSError as e:
            raise StorageError(f"cannot read {path}: {e.strerror}") from None
    if not in_use:  # a server's index is its own, saved when it stops
        from storages.fsindex import check_index

        check_index(path)
    return count


def _check_transactions(
    f: io.BufferedReader, path: Path, size: int, in_use: bool
) -> int:
    from ZODB._compat import FILESTORAGE_MAGIC
    from ZODB.scripts.fstest import FormatError, check_trec

    if size == 0:
        raise _Damage(0, "the file is empty, not a FileStorage")
    if f.read(4) != FILESTORAGE_MAGIC:
        raise _Damage(0, "no FileStorage magic number: not a FileStorage file")
    pos = 4
    last_tid = b"\0" * 8
    count = 0
    while pos < size:
        if _ends_cut(f, pos, size, count + 1, in_use):
            break  # in use: a commit in progress
        f.seek(pos)
        try:
            next_pos, last_tid = check_trec(str(path), f, pos, last_tid, size)
        except FormatError as e:
            raise _fstest_damage(e, path, pos, size, count + 1) from None
        _check_records(f, pos, next_pos, count + 1)
        pos = next_pos
        count += 1
    return count


#: fstest's messages (a fragment of each) in the words of the suite's other
#: damage messages: "transaction N ...".
_FSTEST_WORDS = (
    ("time-stamp reduction", "has a tid not above the one before it"),
    (
        "checkpoint flag was not cleared",
        "was never finished (its checkpoint flag is set)",
    ),
    ("has invalid status", "has an invalid status"),
    (
        "invalid transaction header",
        "has an impossible length (its header's parts do not fit)",
    ),
    (
        "data record exceeds transaction record",
        "holds a data record of another transaction",
    ),
    ("extend beyond the transaction record", "has data records running past its end"),
    (
        "inconsistent transaction length",
        "does not end where its header says (length differs)",
    ),
    ("truncated at", "has a data record cut short"),
)


def _fstest_damage(
    error: Exception, path: Path, tpos: int, size: int, n: int
) -> _Damage:
    """What fstest found in the *n*-th transaction (at *tpos*): at the byte
    it names inside the file (else at the transaction), in the suite's
    words (fstest's own, without the file name, for a message the table
    does not know)."""
    text = str(error).removeprefix(str(path)).strip()
    words = next((ours for theirs, ours in _FSTEST_WORDS if theirs in text), None)
    at = re.search(r" at (\d+)", text)
    offset = int(at.group(1)) if at and int(at.group(1)) < size else tpos
    return _Damage(offset, f"transaction {n} {words or 'fails fstest: ' + text}")


def _ends_cut(f: io.BufferedReader, pos: int, size: int, n: int, in_use: bool) -> bool:
    """Whether the *n*-th transaction, at *pos*, runs past the end of the
    file (True: the file is in use, and that is a commit in progress).
    _CrashCut when a crash during its commit left it so (or left it
    unfinished, status 'c', at the very end), _Damage when it runs past the
    end for another reason; False when it is inside the file."""
    f.seek(pos)
    header = f.read(_TXN_HEADER.size)
    if len(header) < _TXN_HEADER.size:
        if in_use:
            return True
        raise _CrashCut(
            pos,
            f"is cut short in its header ({size - pos} of {_TXN_HEADER.size} bytes)",
            n,
            size - pos,
        )
    tid, tlen, status, ulen, dlen, elen = _TXN_HEADER.unpack(header)
    if pos + tlen + 8 > size:
        if in_use:
            return True
        said = f"(its header says {tlen + 8} bytes, {size - pos} are left)"
        if _cut_by_crash(f, pos, tid, status, ulen + dlen + elen, size):
            raise _CrashCut(pos, f"is cut short {said}", n, size - pos)
        raise _Damage(
            pos,
            f"transaction {n} is cut short {said}: truncated, possibly due to "
            "damaged records",
        )
    if status == b"c" and pos + tlen + 8 == size:
        raise _CrashCut(
            pos,
            "was never finished (its status is still 'c', checkpoint)",
            n,
            size - pos,
        )
    return False


def _check_records(f: io.BufferedReader, tpos: int, end: int, n: int) -> None:
    """The data records of the *n*-th transaction (at *tpos*, its repeated
    length ending at *end*), whose layout fstest checked: every pickle
    parses (two pickles, nothing after them), and what fstest does not look
    at in a record's header, as it walks them: the record's tid is the
    transaction's, and its pointers to earlier records (prev, an undo's
    back pointer) lead inside the file, before it."""
    f.seek(tpos)
    body = f.read(end - tpos)
    tid, _, status, ulen, dlen, elen = _TXN_HEADER.unpack_from(body)
    if status == b"u":
        return  # undone: fstest skips its records too
    i = _TXN_HEADER.size + ulen + dlen + elen
    stop = len(body) - 8
    while i < stop:
        pos = tpos + i
        _, serial, prev, _, vlen, plen = _DATA_HEADER.unpack_from(body, i)
        record = f"a data record of transaction {n}"
        if serial != tid:
            raise _Damage(pos, f"{record} has another transaction's tid")
        if vlen:  # ZODB 5 writes none: the pickle is not where it says
            raise _Damage(pos, f"{record} has a version")
        if prev >= pos or 0 < prev < 4:
            raise _Damage(pos, f"{record} points to a bad earlier one")
        start = i + _DATA_HEADER.size
        if plen == 0:  # a back pointer (undo) or 0 (object deleted)
            (back,) = struct.unpack_from(">Q", body, start)
            if back >= pos or 0 < back < 4:
                raise _Damage(pos, f"{record} has a bad back pointer")
        elif not record_parses(body[start : start + plen]):
            raise _Damage(
                pos, f"the data of a record of transaction {n} is not a pickle"
            )
        i = start + (plen or 8)


def _cut_by_crash(
    f: io.BufferedReader, tpos: int, tid: bytes, status: bytes, meta: int, size: int
) -> bool:
    """Whether the transaction at *tpos*, which runs past the end of the
    file, is one a crash cut while FileStorage wrote it: a status FileStorage
    writes (a crash leaves 'c', which _finish turns into ' ' only once the
    whole transaction is written, or a file cut after it), and every data
    record header wholly present belonging to it.  A length damaged in the
    middle of the file fails this: what follows is the next transaction,
    whose records belong to another."""
    if status not in b" upc":
        return False
    if size - tpos >= 8:
        # Whole but for its header's length: the length repeated after it
        # says where it really ends.  Damage, not a cut.
        f.seek(size - 8)
        (repeated,) = struct.unpack(">Q", f.read(8))
        if repeated == size - tpos - 8:
            return False
    f.seek(tpos + _TXN_HEADER.size + meta)
    rest = f.read(size - f.tell())
    i = 0
    base = tpos + _TXN_HEADER.size + meta
    while i + _DATA_HEADER.size <= len(rest):
        oid, serial, prev, tloc, vlen, plen = _DATA_HEADER.unpack_from(rest, i)
        if serial != tid or tloc != tpos or vlen:
            return False
        if prev >= base + i or (prev and prev < 4):
            return False
        i += _DATA_HEADER.size + (plen or 8)
    return True


def recover_filestorage(path: Path) -> str | None:
    """Drop the last transaction of the FileStorage *path* when a crash cut
    it (check_filestorage raises CrashCutStorage), as FileStorage does when
    it opens such a file read-write (ZODB.FileStorage.FileStorage._truncate:
    the bytes are copied to PATH.trN, then the file is cut), and check the
    rest whole again.  One line saying what was dropped, or None when the
    file was whole; DamagedStorage, nothing changed, for any other damage."""
    from ZODB.FileStorage.FileStorage import _truncate

    from storages.fsindex import check_index, saved_position

    try:
        check_filestorage(path)
    except CrashCutStorage as cut:
        kept = _tr_name(path)
        index = Path(f"{path}.index")
        # An index saved with the cut transaction in it is stale once it
        # is dropped (FileStorage would ignore and rebuild it): set aside
        # beside the bytes.  Any other fault of the index: refused first.
        saved = saved_position(path)
        stale = saved is not None and saved > cut.offset
        if not stale:
            check_index(path)
        try:
            with open(path, "r+b") as f:
                _truncate(f, str(path), cut.offset)
                f.flush()
                os.fsync(f.fileno())
            if stale:
                os.replace(index, f"{kept}.index")
        except OSError as e:
            raise StorageError(f"cannot recover {path}: {e.strerror}") from None
        check_filestorage(path)
        return (
            f"{path}: dropped transaction {cut.transaction}, cut by a crash "
            f"({cut.nbytes} bytes at byte {cut.offset}; {cut.what}); its bytes "
            f"are kept in {kept}"
            + (f", its stale index in {kept}.index" if stale else "")
        )
    return None


def record_parses(data: bytes) -> bool:
    """*data* is a ZODB record: two pickles (class, state), nothing after."""
    from ZODB._compat import PersistentUnpickler

    if data[:2] == b".z":  # zc.zlibstorage
        try:
            data = zlib.decompress(data[2:])
        except zlib.error:
            return False
    stream = io.BytesIO(data)
    unpickler = PersistentUnpickler(None, lambda ref: None, stream)
    try:
        unpickler.noload()
        unpickler.noload()
    except Exception:  # any parse failure of damaged bytes
        return False
    return stream.tell() == len(data)
