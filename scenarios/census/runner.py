"""The census itself: a breadth-first walk of the object graph from the root
at one transaction, and where the storage iterates, all its revisions
(revisions per class, current objects the walk did not reach).
"""

from __future__ import annotations

import datetime
import time
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import storages
from scenarios.census.model import Census, ClassCount, Revisions
from scenarios.census.pickles import Ref, class_name, mapping_data


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

    root = mapping_data(near_root.get(z64, b""))
    if root is None or not isinstance(root.get(storages.ROOT_KEY), Ref):
        return None
    suite = mapping_data(near_root.get(root[storages.ROOT_KEY].oid, b"") or b"")
    if suite is None or "fab" not in suite:
        return None
    spec = suite.get("spec")
    return dict(spec) if isinstance(spec, dict) else {}


def _revisions(
    storage: Any, stop: bytes, reached: set[bytes]
) -> tuple[Revisions, Counter[str], Counter[str]]:
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
    totals = Revisions(
        transactions=transactions,
        records=n_records,
        current=len(latest),
        old=n_records - len(latest),
        unreachable=unreachable,
    )
    return totals, records, current


def take(
    storage: Any,
    source: str,
    directory: Path | None = None,
    revisions: bool = True,
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

    totals = None
    records: Counter[str] | None = None
    current: Counter[str] | None = None
    if revisions and IStorageIteration.providedBy(storage):
        if last is None or last == z64:
            totals, records, current = Revisions(0, 0, 0, 0, 0), Counter(), Counter()
        else:
            totals, records, current = _revisions(storage, last, reached)

    classes = []
    for name, (count, nbytes) in per_class.items():
        n_revisions = old = None
        if records is not None and current is not None:
            n_revisions = records[name]
            old = records[name] - current[name]
        classes.append(ClassCount(name, count, nbytes, n_revisions, old))
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
        revisions=totals,
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
