"""file: ZODB FileStorage (Data.fs) in the directory the runner gives.

The runner gives each trial a fresh temporary directory.  An existing
Data.fs is checked whole, read-only, before anything opens it read-write
(check_filestorage): FileStorage itself, opened read-write on a damaged
file, truncates it to its last good transaction without a word.
"""

from __future__ import annotations

import fcntl
import io
import os
import struct
import zlib
from pathlib import Path

from storages.base import (
    CrashCutStorage,
    DamagedStorage,
    StorageError,
    StorageFactory,
    Store,
    URIScheme,
)
from storages.zodbstore import Wrap, ZODBStore, wrapping


def open_filestorage(path: Path, read_only: bool = False):  # type: ignore[no-untyped-def]
    """FileStorage at *path*, with the failures a user can fix turned into
    StorageError (locked by another process, unwritable, corrupt)."""
    from zc.lockfile import LockError
    from ZODB.FileStorage import FileStorage
    from ZODB.FileStorage.FileStorage import FileStorageError
    from ZODB.FileStorage.format import CorruptedError

    try:
        return FileStorage(str(path), read_only=read_only)
    except LockError:
        raise StorageError(f"{path} is locked: another process has it open") from None
    except (CorruptedError, FileStorageError) as e:
        raise StorageError(
            f"{path} is not a usable FileStorage ({type(e).__name__})"
        ) from None
    except OSError as e:
        raise StorageError(f"cannot open {path}: {e.strerror}") from None


def lock_held(lock_path: Path) -> bool:
    """True when another process holds the FileStorage lock file *lock_path*
    (a ZEO server, an application).  Never creates the lock file."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


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

    Checked, as ZODB's fstest does: the magic, every transaction header
    (ascending tids, status, lengths, the length repeated after it), every
    data record header (its tid and transaction position, back pointers
    inside the file); beyond fstest, every pickle must parse (two pickles,
    nothing after them; zc.zlibstorage's compressed records are
    decompressed first).  A short last transaction is the damage FileStorage
    calls "truncated, possibly due to damaged records" (and would cut off
    when opened read-write).  Its index file, when there is one, must load
    and match it (storages.fsindex).  *in_use*: another process has the file open
    for writing (a ZEO server); a short last transaction is then a commit
    in progress, not damage.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, as one with block
    except OSError as e:
        raise StorageError(f"cannot read {path}: {e.strerror}") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            count = _check_transactions(f, size, in_use)
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


def _check_transactions(f: io.BufferedReader, size: int, in_use: bool) -> int:
    from ZODB._compat import FILESTORAGE_MAGIC

    if size == 0:
        raise _Damage(0, "the file is empty, not a FileStorage")
    if f.read(4) != FILESTORAGE_MAGIC:
        raise _Damage(0, "no FileStorage magic number: not a FileStorage file")
    pos = 4
    last_tid = b"\0" * 8
    count = 0
    while pos < size:
        where = f"transaction {count + 1}"
        header = f.read(_TXN_HEADER.size)
        if len(header) < _TXN_HEADER.size:
            if in_use:
                break
            raise _CrashCut(
                pos,
                f"is cut short in its header ({size - pos} of "
                f"{_TXN_HEADER.size} bytes)",
                count + 1,
                size - pos,
            )
        tid, tlen, status, ulen, dlen, elen = _TXN_HEADER.unpack(header)
        end = pos + tlen  # where the repeated length starts
        if tid <= last_tid:
            raise _Damage(pos, f"{where} has a tid not above the one before it")
        if tlen < _TXN_HEADER.size + ulen + dlen + elen:
            raise _Damage(pos, f"{where} has an impossible length ({tlen})")
        if end + 8 > size:
            if in_use:
                break
            if _cut_by_crash(f, pos, tid, status, ulen + dlen + elen, size):
                raise _CrashCut(
                    pos,
                    f"is cut short (its header says {tlen + 8} bytes, "
                    f"{size - pos} are left)",
                    count + 1,
                    size - pos,
                )
            raise _Damage(
                pos,
                f"{where} is cut short (its header says {tlen + 8} bytes, "
                f"{size - pos} are left): truncated, possibly due to damaged records",
            )
        if status == b"c":
            if end + 8 == size:
                raise _CrashCut(
                    pos,
                    "was never finished (its status is still 'c', checkpoint)",
                    count + 1,
                    size - pos,
                )
            raise _Damage(
                pos, f"{where} was never finished (its checkpoint flag is set)"
            )
        if status not in b" up":
            raise _Damage(pos, f"{where} has an invalid status {status!r}")
        body = f.read(tlen + 8 - _TXN_HEADER.size)
        if len(body) != tlen + 8 - _TXN_HEADER.size:
            raise _Damage(pos, f"{where} is cut short")
        if body[-8:] != header[8:16]:
            raise _Damage(
                end, f"{where} does not end where its header says (length differs)"
            )
        if status != b"u":
            _check_records(body, pos, tid, ulen + dlen + elen, where)
        last_tid = tid
        pos = end + 8
        count += 1
    return count


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


def _check_records(body: bytes, tpos: int, tid: bytes, meta: int, where: str) -> None:
    """The data records of the transaction at *tpos*, whose bytes after the
    header are *body* (records from *meta* on, the repeated length last)."""
    base = tpos + _TXN_HEADER.size  # file offset of body[0]
    i = meta
    stop = len(body) - 8
    while i < stop:
        pos = base + i
        if i + _DATA_HEADER.size > stop:
            raise _Damage(pos, f"a data record of {where} is cut short")
        oid, serial, prev, tloc, vlen, plen = _DATA_HEADER.unpack_from(body, i)
        if serial != tid or tloc != tpos:
            raise _Damage(
                pos, f"a data record of {where} does not belong to it (tid/position)"
            )
        if vlen:
            raise _Damage(pos, f"a data record of {where} has a version length")
        if prev >= pos or (prev and prev < 4):
            raise _Damage(pos, f"a data record of {where} points to a bad earlier one")
        i += _DATA_HEADER.size
        if plen == 0:  # a back pointer (undo) or 0 (object deleted)
            if i + 8 > stop:
                raise _Damage(pos, f"a data record of {where} is cut short")
            (back,) = struct.unpack_from(">Q", body, i)
            if back >= pos or (back and back < 4):
                raise _Damage(pos, f"a data record of {where} has a bad back pointer")
            i += 8
            continue
        if i + plen > stop:
            raise _Damage(
                pos, f"a data record of {where} extends beyond its transaction"
            )
        if not record_parses(body[i : i + plen]):
            raise _Damage(pos, f"the data of a record of {where} is not a pickle")
        i += plen
    if i != stop:
        raise _Damage(base + i, f"the data records of {where} overrun it")


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


#: Files beside Data.fs that are not the storage: FileStorage's scratch file
#: for the transaction being committed (it keeps the size of the largest
#: one), its copy from before a pack (a backup the administrator removes)
#: and its lock.  Leaving them out makes a phase's size change the bytes the
#: storage wrote, and the size after a pack the packed size.
NOT_STORAGE = (".tmp", ".old", ".lock")


def directory_size(directory: Path, not_storage: tuple[str, ...] = NOT_STORAGE) -> int:
    """Bytes of the regular files below *directory* that make up the storage:
    all but those whose names end with one of *not_storage* (a factory's
    ``not_storage``)."""
    total = 0
    for dirpath, _, names in os.walk(directory):
        for n in names:
            if n.endswith(not_storage):
                continue
            try:
                total += os.stat(os.path.join(dirpath, n)).st_size
            except FileNotFoundError:
                pass
    return total


def filestorage_section(directory: Path) -> str:
    """ZConfig section serving Data.fs in *directory*."""
    return f"<filestorage 1>\n  path {Path(directory) / 'Data.fs'}\n</filestorage>\n"


class FileFactory(StorageFactory):
    name = "file"
    description = "ZODB FileStorage (Data.fs) on local disk"
    keeps_directory = True
    servable = True
    wraps_storage = True
    not_storage = NOT_STORAGE
    uri_schemes = (URIScheme("file", read_only=True, local=True),)
    config_sections = ("filestorage",)

    @classmethod
    def check_at(
        cls, path: Path, must_exist: bool = False, read_only: bool = False
    ) -> None:
        """Check the FileStorage file *path* a command is about to open.
        Missing: fine unless *must_exist* (opening it read-write creates
        it).  Locked by another process: StorageError, unless *read_only*
        (a short last transaction is then a commit in progress)."""
        if path.is_symlink() and not path.exists():
            raise StorageError(
                f"{path} is a symbolic link that leads nowhere (a loop, or a "
                "missing target): no FileStorage to open"
            )
        if not path.exists():
            if must_exist:
                raise StorageError(f"no FileStorage at {path}")
            return
        if not path.is_file():
            raise StorageError(f"{path} is not a file (a FileStorage is one file)")
        held = lock_held(Path(f"{path}.lock"))
        if held and not read_only:
            raise StorageError(f"{path} is locked: another process has it open")
        check_filestorage(path, in_use=held)

    @classmethod
    def held_at(cls, path: Path) -> bool:
        return lock_held(Path(f"{path}.lock"))

    @classmethod
    def file_kind(cls, path: Path, head: bytes) -> str | None:
        if head[:4] in (b"FS21", b"FS30"):  # Python 3's and 2's FileStorage
            return "a FileStorage"
        # Its index, lock, scratch file, a pack's .old, a recovery's .trN.
        stem, dot, _ = path.name.rpartition(".")
        if dot and stem.endswith(".fs") and (path.parent / stem).is_file():
            return f"a file of the FileStorage {stem}"
        return None

    @classmethod
    def path_uri(cls, path: Path) -> str | None:
        fs_path = path / "Data.fs" if path.is_dir() else path
        if not fs_path.is_file():
            raise StorageError(f"no FileStorage at {path} ({fs_path} is missing)")
        return f"file://{fs_path.absolute()}"

    def served_section(self, directory: Path) -> tuple[str, tuple[str, ...]]:
        return filestorage_section(directory), ()

    def check_existing(self, directory: Path) -> None:
        path = Path(directory) / "Data.fs"
        if not path.is_file():
            raise StorageError(f"no FileStorage in {directory} ({path} is missing)")
        if lock_held(Path(f"{path}.lock")):
            raise StorageError(f"{path} is locked: another process has it open")
        check_filestorage(path)

    def recover_existing(self, directory: Path) -> str | None:
        path = Path(directory) / "Data.fs"
        if not path.is_file():
            raise StorageError(f"no FileStorage in {directory} ({path} is missing)")
        if lock_held(Path(f"{path}.lock")):
            raise StorageError(f"{path} is locked: another process has it open")
        return recover_filestorage(path)

    def open(self, directory: Path, wrap: Wrap | None = None) -> Store:
        path = Path(directory) / "Data.fs"
        return ZODBStore(
            self.name,
            wrapping(lambda: open_filestorage(path), wrap),
            self.options,
            size=lambda: directory_size(path.parent, self.not_storage),
        )
