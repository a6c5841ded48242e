"""The FileStorage index file (Data.fs.index), checked against Data.fs.

FileStorage trusts its index: opened on a Data.fs whose index loads but
points elsewhere, it serves the wrong records (CorruptedDataError at the
first load, or worse: another object's state); opened read-write on an
index that does not load, it rebuilds and rewrites it.  check_index()
compares, reading only, every (oid, position) the index holds with what
the transactions of Data.fs up to the index's saved position say (the
index may be older than the file: FileStorage reads on from there).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from storages.errors import DamagedStorage, StorageError

_TXN_HEADER = struct.Struct(">8sQcHHH")
_DATA_HEADER = struct.Struct(">8s8sQQHQ")

#: What repairs it: FileStorage rebuilds a missing index from Data.fs.
INDEX_REPAIR = "move {path} away; FileStorage rebuilds it from the Data.fs"


def _damaged(index_path: Path, what: str) -> DamagedStorage:
    return DamagedStorage(
        str(index_path),
        "(the index of its Data.fs)",
        what,
        INDEX_REPAIR.format(path=index_path),
    )


def _expected(f: Any, stop: int) -> Any:
    """The fsIndex FileStorage builds reading Data.fs *f* up to *stop* (a
    transaction boundary: the file was checked whole before)."""
    from ZODB.fsIndex import fsIndex

    index = fsIndex()
    pos = 4
    while pos < stop:
        f.seek(pos)
        header = f.read(_TXN_HEADER.size)
        _, tlen, status, ulen, dlen, elen = _TXN_HEADER.unpack(header)
        end = pos + tlen
        if status != b"u":
            rpos = pos + _TXN_HEADER.size + ulen + dlen + elen
            f.seek(rpos)
            body = f.read(end - rpos)
            i = 0
            while i < len(body):
                oid, _, _, _, _, plen = _DATA_HEADER.unpack_from(body, i)
                index[oid] = rpos + i
                i += _DATA_HEADER.size + (plen or 8)
        pos = end + 8
    return index


def _boundaries(f: Any, size: int) -> set[int]:
    out = {4}
    pos = 4
    while pos < size:
        f.seek(pos + 8)
        (tlen,) = struct.unpack(">Q", f.read(8))
        pos += tlen + 8
        out.add(pos)
    return out


def saved_position(path: Path) -> int | None:
    """The position *path*.index was saved at (None: no index, or one
    that does not load)."""
    from ZODB.fsIndex import fsIndex

    try:
        return int(fsIndex.load(f"{path}.index")["pos"])
    except Exception:  # missing or damaged: check_index says which
        return None


def check_index(path: Path) -> None:
    """DamagedStorage, nothing changed, when *path*.index exists and does
    not load or does not match the FileStorage *path* (checked whole
    before: check_filestorage)."""
    from ZODB.fsIndex import fsIndex
    from ZODB.utils import oid_repr

    index_path = Path(f"{path}.index")
    if not index_path.exists():
        return
    try:
        info = fsIndex.load(str(index_path))
        index, saved = info["index"], int(info["pos"])
    except OSError as e:
        raise StorageError(f"cannot read {index_path}: {e.strerror}") from None
    except Exception as e:  # any failure to unpickle damaged bytes
        raise _damaged(index_path, f"it does not load ({type(e).__name__})") from None
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        if saved not in _boundaries(f, size):
            raise _damaged(
                index_path,
                f"its saved position {saved} is not the end of a transaction",
            )
        expected = _expected(f, saved)
    if len(index) != len(expected):
        raise _damaged(
            index_path,
            f"it holds {len(index)} objects, the Data.fs {len(expected)} "
            f"(up to byte {saved})",
        )
    for (oid, pos), (want_oid, want) in zip(
        index.items(), expected.items(), strict=True
    ):
        if oid != want_oid or pos != want:
            raise _damaged(
                index_path,
                f"it puts object {oid_repr(want_oid)} at byte "
                f"{index.get(want_oid)}, the Data.fs at byte {want}",
            )
