"""Census: what a ZODB database holds, per class, read without importing a class.

The census walks the object graph from the root object (oid 0) at one
transaction, reading each current record with loadBefore and following the
references in its pickle (ZODB.serialize.referencesf).  A record's class is
read from the GLOBAL opcode of its first pickle, so the census works on any
ZODB database, whether or not its classes can be imported here, and never
runs code from the database.  Where the storage iterates (IStorageIteration)
it also reads the whole history up to that transaction: revisions per
class, current against old, and current objects the walk did not reach
(garbage that a pack with GC would remove).

What the census opens (open_path, open_zeo, open_uri) it opens read-only
where the storage supports it: FileStorage(read_only=True), ZEO
ClientStorage(read_only=True), and `read_only=1` added to file:// and
zeo:// URIs.  A read-only FileStorage takes no lock, so it can be opened
while a ZEO server serves the same Data.fs; it then sees the file as it was
when opened, and the census says so.  For the server's current view, ask
the server (--zeo-address).  Other storages (bdb) are opened through the
registry, in a directory `vfab-bench populate` wrote; the census only ever
reads from them.

JSON format history (bump CENSUS_SCHEMA_VERSION and add a line on change):
  1 -- {"schema_version": 1, "kind": "census",
        "source": what was opened (path, URI or HOST:PORT),
        "storage": the storage's class, "module.Name",
        "tid": hex id of the transaction the census reads at (null: empty),
        "tid_time": its time, ISO 8601 UTC (null: empty),
        "classes": [{"class": "module.Name", "count": current objects
                     reached from the root, "bytes": their pickle bytes,
                     "revisions": records of this class in the history,
                     "old_revisions": those not current (both null where
                     the storage does not iterate)}, ...] (most bytes first),
        "objects": sum of the counts, "pickle_bytes": sum of the bytes,
        "missing": references to objects the storage does not have,
        "size_bytes": storage.getSize() (FileStorage: Data.fs; ZEO: the
                      server's storage, as the server last reported it),
        "directory_bytes": bytes of the files in the database's directory
                           (Data.fs with its .index, ...; null without one),
        "storage_len": len(storage) (current objects, reached or not),
        "history": {"transactions", "records", "current", "old",
                    "unreachable"} or null where the storage does not
                   iterate or --no-history was given,
        "vfab": the spec a vfab data set records ({"scale", "seed",
                "size"}) or null for any other database,
        "seconds": time the census took,
        "warning": why the view may be stale (a Data.fs another process
                   has open), or null,
        "metadata": {"date", "versions", "command"}}
"""

from __future__ import annotations

import dataclasses
import datetime
import fcntl
import io
import os
import pickletools
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from zodbpickle.pickle import Unpickler

import storages
from scenarios.data.datadir import check_path_storage, read_marker
from scenarios.results import metadata
from storages import StorageError

CENSUS_SCHEMA_VERSION = 1

#: Class name given to a record whose class cannot be read.
UNKNOWN_CLASS = "?"


# -- reading pickles without importing anything ------------------------------


def class_name(data: bytes) -> str:
    """'module.Name' of the class in a ZODB data record's first pickle.

    Reads the pickle's GLOBAL (or STACK_GLOBAL) opcode; never imports.
    """
    # ZODB writes b'\x80\x03cmodule\nName\n...': the fast, common case.
    head = data[2:] if data[:1] == b"\x80" else data
    for prefix in (b"c", b"(c"):
        if head.startswith(prefix):
            module, name, _ = head[len(prefix) :].split(b"\n", 2)
            return f"{module.decode()}.{name.decode()}"
    strings: list[str] = []
    try:
        for op, arg, _ in pickletools.genops(data):  # stops at the first STOP
            if op.name in ("GLOBAL", "INST"):
                where, _, what = str(arg).partition(" ")
                return f"{where}.{what}"
            if op.name == "STACK_GLOBAL" and len(strings) >= 2:
                return f"{strings[-2]}.{strings[-1]}"
            if isinstance(arg, str):
                strings.append(arg)
    except Exception:  # a damaged record is counted, not fatal
        pass
    return UNKNOWN_CLASS


class _Ref:
    """A persistent reference met while reading a state (holds the oid)."""

    def __init__(self, ref: Any) -> None:
        oid = ref[0] if isinstance(ref, tuple) else ref
        self.oid = oid.encode("latin-1") if isinstance(oid, str) else oid


class _Opaque:
    """Stands in for any class a state names; calling it gives None."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass


class _StateReader(Unpickler):  # type: ignore[misc]
    """Unpickles with every class replaced by _Opaque (nothing imported)
    and every persistent reference by _Ref."""

    def find_class(self, module: str, name: str) -> type[_Opaque]:
        return _Opaque

    def persistent_load(self, ref: Any) -> _Ref:
        return _Ref(ref)


def plain_state(data: bytes) -> Any:
    """The state (second pickle) of a record, read by _StateReader, or None
    if it cannot be read that way.  Enough to read a PersistentMapping's
    keys and plain values."""
    try:
        u = _StateReader(io.BytesIO(data))
        u.load()
        return u.load()
    except Exception:
        return None


def _mapping_data(data: bytes) -> dict[Any, Any] | None:
    """The items of a pickled PersistentMapping (ZODB's root is one)."""
    state = plain_state(data)
    if not isinstance(state, dict):
        return None
    for key in ("data", "_container"):  # ZODB 3.x used _container
        if isinstance(state.get(key), dict):
            return state[key]  # type: ignore[no-any-return]
    return None


# -- the census ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ClassCount:
    """One class: current objects reached from the root and their pickle
    bytes; revisions in the history where the storage iterates."""

    name: str
    count: int
    bytes: int
    revisions: int | None = None
    old_revisions: int | None = None

    @property
    def average(self) -> float:
        return self.bytes / self.count if self.count else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "count": self.count,
            "bytes": self.bytes,
            "revisions": self.revisions,
            "old_revisions": self.old_revisions,
        }


@dataclasses.dataclass(frozen=True)
class History:
    """The storage's history up to the census transaction."""

    transactions: int
    records: int
    current: int  # objects whose latest record holds data
    old: int  # records superseded by a later one
    unreachable: int  # current objects the walk from the root did not reach

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Census:
    """What one database holds.  Limits: objects reached only through weak
    or cross-database references are not counted (referencesf skips them);
    on ZEO, size and length are what the server last told the client."""

    source: str
    storage: str
    tid: str | None
    tid_time: str | None
    classes: tuple[ClassCount, ...]
    missing: int
    size_bytes: int | None
    directory_bytes: int | None
    storage_len: int | None
    history: History | None
    vfab: dict[str, Any] | None
    seconds: float
    warning: str | None = None

    @property
    def objects(self) -> int:
        return sum(c.count for c in self.classes)

    @property
    def pickle_bytes(self) -> int:
        return sum(c.bytes for c in self.classes)

    def get(self, name: str) -> ClassCount | None:
        for c in self.classes:
            if c.name == name:
                return c
        return None

    def counts(self) -> dict[str, int]:
        return {c.name: c.count for c in self.classes}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": CENSUS_SCHEMA_VERSION,
            "kind": "census",
            "source": self.source,
            "storage": self.storage,
            "tid": self.tid,
            "tid_time": self.tid_time,
            "classes": [c.to_json() for c in self.classes],
            "objects": self.objects,
            "pickle_bytes": self.pickle_bytes,
            "missing": self.missing,
            "size_bytes": self.size_bytes,
            "directory_bytes": self.directory_bytes,
            "storage_len": self.storage_len,
            "history": None if self.history is None else self.history.to_json(),
            "vfab": self.vfab,
            "seconds": round(self.seconds, 3),
            "warning": self.warning,
            "metadata": {
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"
                ),
                "versions": metadata.versions(),
                "command": sys.argv,
            },
        }


def _tid_time(tid: bytes) -> str:
    from persistent.timestamp import TimeStamp

    seconds = TimeStamp(tid).timeTime()
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(
        timespec="seconds"
    )


def _walk(
    storage: Any, before: bytes
) -> tuple[dict[str, list[int]], set[bytes], int, dict[bytes, bytes]]:
    """Breadth-first from the root: {class: [count, bytes]}, the oids
    reached, how many references were missing, and the records of the root
    and its direct children (to find a vfab data set)."""
    from ZODB.POSException import POSKeyError
    from ZODB.serialize import referencesf
    from ZODB.utils import z64

    per_class: dict[str, list[int]] = {}
    seen = {z64}
    queue = deque([z64])
    missing = 0
    near_root: dict[bytes, bytes] = {}
    while queue:
        oid = queue.popleft()
        try:
            loaded = storage.loadBefore(oid, before)
        except POSKeyError:
            loaded = None
        if loaded is None:
            missing += 1
            continue
        data = loaded[0]
        if data is None:  # a deleted object (undone creation)
            missing += 1
            continue
        entry = per_class.setdefault(class_name(data), [0, 0])
        entry[0] += 1
        entry[1] += len(data)
        refs = referencesf(data)
        if oid == z64:  # keep the root and its children, nothing deeper
            near_root[oid] = data
            near_root.update((ref, b"") for ref in refs if ref != z64)
        elif oid in near_root:
            near_root[oid] = data
        for ref in refs:
            if ref not in seen:
                seen.add(ref)
                queue.append(ref)
    return per_class, seen, missing, near_root


def _vfab_spec(near_root: dict[bytes, bytes]) -> dict[str, Any] | None:
    """The spec a vfab data set records under root[ROOT_KEY]['spec']."""
    from ZODB.utils import z64

    root = _mapping_data(near_root.get(z64, b""))
    if root is None or not isinstance(root.get(storages.ROOT_KEY), _Ref):
        return None
    suite = _mapping_data(near_root.get(root[storages.ROOT_KEY].oid, b"") or b"")
    if suite is None or "fab" not in suite:
        return None
    spec = suite.get("spec")
    return dict(spec) if isinstance(spec, dict) else {}


def _history(
    storage: Any, stop: bytes, reached: set[bytes]
) -> tuple[History, Counter[str], Counter[str]]:
    """Every record up to *stop*: totals, and records per class, current
    records per class."""
    records: Counter[str] = Counter()
    latest: dict[bytes, str] = {}  # oid -> class of its latest record
    transactions = n_records = 0
    names: dict[str, str] = {}  # interned class names
    for txn in storage.iterator(None, stop):
        transactions += 1
        for record in txn:
            n_records += 1
            if record.data is None:  # deletion (undo of a creation)
                latest.pop(record.oid, None)
                continue
            name = class_name(record.data)
            name = names.setdefault(name, name)
            records[name] += 1
            latest[record.oid] = name
    current: Counter[str] = Counter(latest.values())
    unreachable = sum(1 for oid in latest if oid not in reached)
    history = History(
        transactions=transactions,
        records=n_records,
        current=len(latest),
        old=n_records - len(latest),
        unreachable=unreachable,
    )
    return history, records, current


def take(
    storage: Any,
    source: str,
    directory: Path | None = None,
    history: bool = True,
    warning: str | None = None,
) -> Census:
    """The census of an open *storage* (any IStorage), read at its last
    transaction.  *directory*: where its files live, for their size."""
    from ZODB.interfaces import IStorageIteration
    from ZODB.utils import p64, u64, z64

    t0 = time.perf_counter()
    last = storage.lastTransaction()
    if last is None or last == z64:
        per_class: dict[str, list[int]] = {}
        reached: set[bytes] = set()
        missing = 0
        vfab = None
        tid = tid_time = None
    else:
        per_class, reached, missing, near_root = _walk(storage, p64(u64(last) + 1))
        vfab = _vfab_spec(near_root)
        tid, tid_time = last.hex(), _tid_time(last)

    hist = None
    records: Counter[str] | None = None
    current: Counter[str] | None = None
    if history and IStorageIteration.providedBy(storage):
        if last is None or last == z64:
            hist, records, current = History(0, 0, 0, 0, 0), Counter(), Counter()
        else:
            hist, records, current = _history(storage, last, reached)

    classes = []
    for name, (count, nbytes) in per_class.items():
        revisions = old = None
        if records is not None and current is not None:
            revisions = records[name]
            old = records[name] - current[name]
        classes.append(ClassCount(name, count, nbytes, revisions, old))
    classes.sort(key=lambda c: (-c.bytes, c.name))

    return Census(
        source=source,
        storage=f"{type(storage).__module__}.{type(storage).__name__}",
        tid=tid,
        tid_time=tid_time,
        classes=tuple(classes),
        missing=missing,
        size_bytes=_maybe_int(storage.getSize),
        directory_bytes=None if directory is None else _directory_bytes(directory),
        storage_len=_maybe_int(lambda: len(storage)),
        history=hist,
        vfab=vfab,
        seconds=time.perf_counter() - t0,
        warning=warning,
    )


def _maybe_int(get: Callable[[], Any]) -> int | None:
    try:
        return int(get())
    except Exception:  # not every storage answers; a census does without
        return None


def _directory_bytes(directory: Path) -> int:
    import storages
    from storages.file import directory_size

    return directory_size(directory, storages.not_storage())


# -- opening what the user named ----------------------------------------------


@dataclasses.dataclass
class Source:
    """An open storage to take a census of; close() releases it."""

    storage: Any
    name: str
    directory: Path | None = None
    warning: str | None = None
    close: Callable[[], None] = lambda: None


def server_holds(lock_path: Path) -> bool:
    """True when another process holds the FileStorage lock file (a ZEO
    server, an application).  Never creates the lock file."""
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


IN_USE = (
    "{path} is open in another process (a ZEO server?); read-only, the "
    "census sees the file as it was when opened: for the server's own "
    "view use --zeo-address"
)


def open_path(name: str, path: Path) -> Source:
    """The database of storage *name* at *path* (file: a directory holding
    Data.fs, or the .fs file itself)."""
    check_path_storage(name)
    if not path.exists():
        raise StorageError(f"{path} does not exist")
    if name == "file":
        from storages.file import open_filestorage

        fs_path = path / "Data.fs" if path.is_dir() else path
        if not fs_path.is_file():
            raise StorageError(f"no FileStorage at {path} ({fs_path} is missing)")
        warning = None
        if server_holds(Path(f"{fs_path}.lock")):
            warning = IN_USE.format(path=fs_path)
        storage = open_filestorage(fs_path, read_only=True)
        return Source(
            storage,
            str(fs_path),
            directory=fs_path.parent,
            warning=warning,
            close=storage.close,
        )
    # Any other directory storage, through the registry: only in a directory
    # populate wrote, because opening one elsewhere would create a database.
    marker = read_marker(path) if path.is_dir() else None
    if marker is None or marker.get("storage") != name:
        raise StorageError(
            f"{path} holds no {name} data set written by vfab-bench populate; "
            "give a URI for any other database"
        )
    store = storages.get(name).open(path)
    db = getattr(store, "db", None)
    if db is None:
        store.close()
        raise StorageError(f"storage {name!r} has no ZODB database to census")
    return Source(db.storage, str(path), directory=path, close=store.close)


def open_zeo(address: tuple[str, int]) -> Source:
    """A read-only ZEO client of the server at *address*."""
    import ZEO.ClientStorage
    from ZEO.Exceptions import ClientDisconnected

    from storages.zeo import check_reachable

    check_reachable(address)
    try:
        storage = ZEO.ClientStorage.ClientStorage(
            address, read_only=True, wait_timeout=10
        )
    except ClientDisconnected:
        raise StorageError(
            f"ZEO server at {address[0]}:{address[1]} did not answer as a ZEO server"
        ) from None
    return Source(storage, f"{address[0]}:{address[1]}", close=storage.close)


def read_only_uri(uri: str) -> str:
    """*uri* with read_only=1 added where its scheme supports it and it
    does not say otherwise."""
    scheme = uri.partition("://")[0]
    if scheme not in ("file", "zeo") or "read_only=" in uri:
        return uri
    extra = "read_only=1" + ("&wait_timeout=10" if scheme == "zeo" else "")
    return f"{uri}{'&' if '?' in uri else '?'}{extra}"


def uri_schemes() -> list[str]:
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group="zodburi.resolvers")})


def open_uri(uri: str) -> Source:
    """The storage a zodburi URI names (file://, zeo://, bdb:// once the bdb
    storage is installed, ...), read-only where the scheme allows."""
    import zodburi

    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise StorageError(f"not a URI: {uri!r} (e.g. file:///abs/Data.fs)")
    if scheme not in uri_schemes():
        raise StorageError(
            f"no resolver for {scheme}:// URIs; choose from "
            + ", ".join(f"{s}://" for s in uri_schemes())
        )
    directory = None
    warning = None
    if scheme == "zeo":
        from urllib.parse import urlsplit

        from storages.zeo import check_reachable

        where = urlsplit(uri.replace("zeo://", "http://", 1))
        if where.hostname:  # TCP; a Unix socket path is left to ZEO
            try:
                port = where.port or 9991  # zodburi's default
            except ValueError:
                raise StorageError(f"bad port in {uri!r}") from None
            check_reachable((where.hostname, port))
    if scheme == "file":
        fs_path = Path(rest.partition("?")[0])
        if not fs_path.is_file():
            raise StorageError(f"no FileStorage at {fs_path}")
        directory = fs_path.parent
        if server_holds(Path(f"{fs_path}.lock")):
            warning = IN_USE.format(path=fs_path)
    try:
        factory, _ = zodburi.resolve_uri(read_only_uri(uri))
        storage = factory()
    except (StorageError, *storages.user_errors()):
        raise  # one line for the user already
    except Exception as e:
        raise StorageError(
            f"cannot open {uri}: {type(e).__name__}: {e}".splitlines()[0]
        ) from None
    return Source(storage, uri, directory, warning, storage.close)


# -- the text report ----------------------------------------------------------


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def text(census: Census) -> str:
    """The census as a table, one row per class, most bytes first."""
    total_bytes = census.pickle_bytes
    header = ["class", "objects", "bytes", "avg bytes", "% of bytes"]
    if census.history is not None:
        header += ["revisions", "old"]
    rows = []
    for c in census.classes:
        share = c.bytes / total_bytes if total_bytes else 0.0
        row = [c.name, _n(c.count), _n(c.bytes), f"{c.average:,.0f}", f"{share:.1%}"]
        if census.history is not None:
            row += [_n(c.revisions), _n(c.old_revisions)]
        rows.append(row)
    total = [
        "total",
        _n(census.objects),
        _n(total_bytes),
        f"{total_bytes / census.objects:,.0f}" if census.objects else "0",
        "100.0%" if total_bytes else "-",
    ]
    if census.history is not None:
        total += [_n(census.history.records), _n(census.history.old)]
    lines = [
        f"census of {census.source} ({census.storage})",
        f"at transaction {census.tid or '(none: empty database)'}"
        + (f", {census.tid_time}" if census.tid_time else ""),
        "",
    ]
    lines += _columns([header, *rows, total])
    lines.append("")
    if census.history is not None:
        h = census.history
        lines.append(
            f"history: {h.transactions:,} transactions, {h.records:,} records: "
            f"{h.current:,} current, {h.old:,} old; {h.unreachable:,} current "
            "objects not reachable from the root"
        )
    else:
        lines.append("history: not read (no storage iterator, or --no-history)")
    if census.missing:
        lines.append(f"missing: {census.missing:,} references to absent objects")
    size = f"size: {_n(census.size_bytes)} bytes (storage.getSize())"
    if census.directory_bytes is not None:
        size += f", {census.directory_bytes:,} bytes in its directory"
    lines.append(size)
    if census.storage_len is not None:
        lines.append(f"len(storage): {census.storage_len:,} current objects")
    if census.vfab is not None:
        spec = ", ".join(f"{k} {v}" for k, v in sorted(census.vfab.items()))
        lines.append(f"vfab data set: {spec or 'no spec recorded'}")
    lines.append(f"took {census.seconds:.2f} s")
    return "\n".join(lines) + "\n"


def _columns(rows: Iterable[list[str]]) -> list[str]:
    rows = list(rows)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        out.append("  ".join(cells).rstrip())
        if i == 0 or i == len(rows) - 2:
            out.append("  ".join("-" * w for w in widths))
    return out
