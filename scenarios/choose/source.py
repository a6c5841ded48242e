"""choose --from SOURCE: the user's own database, opened read-only and
never changed (scenarios.census.sources: checked whole first, a damaged
or foreign one refused), copied into each candidate with the storage API
(tpc_begin, restore, tpc_vote, tpc_finish: each transaction timed alone,
its records read from the source before its clock starts), every record
then compared with the source (each object's latest state; every
revision where the target keeps history), and the objects read back by
oid at each client count, cold and warm.

Raw records only: nothing is unpickled, so a database written by classes
this process cannot import works.  Memory is bounded by the largest
transaction (its records, held while it is copied) and a fixed sample of
oids, not by the database.
"""

from __future__ import annotations

import contextlib
import functools
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import storages
from scenarios.census import sources
from scenarios.census.sources import Source
from scenarios.checker.known_bugs import known_bug
from scenarios.choose.config import ChooseConfig, one_process
from scenarios.choose.databases import fresh, open_raw, size_on_disk
from scenarios.choose.measure import guarded
from scenarios.choose.model import Candidate, CopyResult, ReadPoint, SizeBucket
from scenarios.clients import histogram
from scenarios.load.target import is_zconfig
from scenarios.progress import Progress
from storages import StorageError, StorageOptions

#: Oids kept to draw reads from (a reservoir sample of the source's).
SAMPLE = 10_000
#: Records named in a WRONG verdict.
EXAMPLES = 5
#: Seconds a read pass may take before it is called stuck.
READ_WAIT_S = 600.0
#: Loads per read pass, over all readers (--quick: a quarter).
LOADS = 20_000


def open_source(text: str) -> Source:
    """The database *text* names, read-only: a FileStorage file, a
    ZConfig file, or a URI; StorageError (one line, exit 2) when it is
    missing, damaged, foreign, or open in another process (a copy of a
    file another process writes would not be its state)."""
    if "://" in text:
        source = sources.open_uri(text)
    else:
        path = Path(text)
        if not path.exists():
            raise StorageError(f"--from {text}: no such file")
        if path.is_dir():
            raise StorageError(
                f"--from {text} is a directory: give a FileStorage file, a "
                "ZConfig file or a URI"
            )
        if path.suffix in (".conf", ".cfg") or _starts_zconfig(path):
            source = sources.open_config(path)
        else:
            source = sources.open_uri(f"file://{path.resolve()}")
    if source.warning is not None:
        source.close()
        raise StorageError(
            f"--from {text} is open in another process (locked): stop it, or "
            "give a copy"
        )
    return source


def _starts_zconfig(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except OSError as e:
        raise StorageError(f"--from {path}: {e.strerror}") from None
    return is_zconfig(head.decode("latin-1"))


def _bucket(records: int) -> int:
    """The power of two at or above *records*."""
    return 1 << max(0, records - 1).bit_length()


def copy(
    source: Any, target: Any
) -> tuple[int, int, int, float, tuple[SizeBucket, ...]]:
    """Every transaction of *source* into *target*, each timed alone:
    (transactions, records, bytes, seconds, latency by size)."""
    buckets: dict[int, tuple[int, Any]] = {}
    transactions = records = size = 0
    total = 0.0
    for txn in source.iterator():
        held = [(r.oid, r.tid, r.data, r.data_txn) for r in txn]
        started = time.perf_counter()
        target.tpc_begin(txn, txn.tid, txn.status)
        try:
            for oid, tid, data, data_txn in held:
                target.restore(oid, tid, data, "", data_txn, txn)
            target.tpc_vote(txn)
            target.tpc_finish(txn)
        except BaseException:
            target.tpc_abort(txn)
            raise
        took = time.perf_counter() - started
        total += took
        transactions += 1
        records += len(held)
        size += sum(len(d) for _, _, d, _ in held if d)
        key = _bucket(len(held))
        count, hist = buckets.get(key) or (0, histogram.new())
        histogram.record_ms(hist, took * 1000)
        buckets[key] = (count + 1, hist)
    out = tuple(
        SizeBucket(k, n, histogram.encode(h)) for k, (n, h) in sorted(buckets.items())
    )
    return transactions, records, size, total, out


def latest(source: Any) -> Iterator[tuple[bytes, bytes, bytes]]:
    """(oid, tid, data) of every object's latest state: record_iternext
    where the storage has it (no memory), else the last record of each
    oid seen by the iterator (an oid -> tid map)."""
    if hasattr(source, "record_iternext"):
        cursor = None
        while True:
            oid, tid, data, cursor = source.record_iternext(cursor)
            yield oid, tid, data
            if cursor is None:
                return
    seen: dict[bytes, bytes] = {}
    for txn in source.iterator():
        for r in txn:
            seen[r.oid] = r.tid
    for oid in seen:
        data, tid = source.load(oid)
        yield oid, tid, data


def _load(target: Any, oid: bytes, tid: bytes | None = None) -> bytes | None:
    from ZODB.POSException import POSKeyError

    try:
        return target.loadSerial(oid, tid) if tid else target.load(oid)[0]
    except POSKeyError:
        return None


def compare(source: Any, target: Any, keeps_history: bool) -> dict[str, Any]:
    """Every record of *source* looked up in *target*: each object's latest
    state, then (*keeps_history*) each earlier revision; counts, the
    first few wrong ones named, and a sample of the oids for the reads."""
    out: dict[str, Any] = {"checked": 0, "revisions": 0, "lost": 0, "changed": 0}
    examples: list[str] = []
    sample: list[bytes] = []
    rng = random.Random(0)

    def wrong(what: str, oid: bytes, tid: bytes) -> None:
        out[what] += 1
        if len(examples) < EXAMPLES:
            examples.append(
                f"oid 0x{oid.hex().lstrip('0') or '0'} tid {tid.hex()}: {what}"
            )

    for n, (oid, tid, data) in enumerate(latest(source)):
        out["checked"] += 1
        got = _load(target, oid)
        if got is None:
            wrong("lost", oid, tid)
        elif got != data:
            wrong("changed", oid, tid)
        if n < SAMPLE:
            sample.append(oid)
        elif (i := rng.randrange(n + 1)) < SAMPLE:
            sample[i] = oid
    if keeps_history:
        current = getattr(source, "getTid", None) or (lambda oid: source.load(oid)[1])
        for txn in source.iterator():
            for r in txn:
                if r.data is None or current(r.oid) == r.tid:
                    # a backpointer (the revision it names is checked), or
                    # the latest state, checked above
                    continue
                out["revisions"] += 1
                got = _load(target, r.oid, r.tid)
                if got is None:
                    wrong("lost", r.oid, r.tid)
                elif got != r.data:
                    wrong("changed", r.oid, r.tid)
    out["examples"], out["sample"] = examples, sample
    return out


def _draws(oids: list[bytes], n: int, skew: float, seed: int) -> list[bytes]:
    """*n* oids drawn with a Zipf skew over *oids* (the first the most
    popular)."""
    weights = [1.0 / (rank + 1) ** skew for rank in range(len(oids))]
    return random.Random(seed).choices(oids, weights=weights, k=n)


def _read_pass(
    instances: list[Any], draws: list[list[bytes]]
) -> tuple[int, int, float, str]:
    """Each reader loads its draws on its own instance: (loads, loads of
    a record the target lost, seconds, encoded histogram of the loads
    that found theirs).  A reader's other error is raised here."""
    from ZODB.POSException import POSKeyError

    hists = [histogram.new() for _ in instances]
    missing = [0] * len(instances)
    failed: list[BaseException] = []
    barrier = threading.Barrier(len(instances) + 1, timeout=READ_WAIT_S)

    def reader(i: int) -> None:
        storage, hist = instances[i], hists[i]
        try:
            barrier.wait()
            for oid in draws[i]:
                started = time.perf_counter()
                try:
                    storage.load(oid)
                except POSKeyError:
                    missing[i] += 1
                    continue
                histogram.record_ms(hist, (time.perf_counter() - started) * 1000)
        except BaseException as e:  # noqa: BLE001 - raised in the caller
            failed.append(e)

    threads = [
        threading.Thread(target=reader, args=(i,)) for i in range(len(instances))
    ]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join(READ_WAIT_S)
    took = time.perf_counter() - started
    if any(t.is_alive() for t in threads):
        raise StorageError(f"a reader did not finish in {READ_WAIT_S:.0f} s")
    if failed:
        raise failed[0]
    loads = sum(len(d) for d in draws)
    return loads, sum(missing), took, histogram.encode(_merged(hists))


def _merged(hists: list[Any]) -> Any:
    return histogram.merged(histogram.encode(h) for h in hists)


def reads(
    spec: str, oids: list[bytes], config: ChooseConfig, clients: tuple[int, ...]
) -> tuple[ReadPoint, ...]:
    """Loads by oid at each client count: readers are threads of this
    process, each on its own instance where the storage makes one
    (new_instance()); cold on a storage just opened, then warm."""
    if not oids:
        return ()
    total = LOADS // 4 if config.quick else LOADS
    out = []
    for n in clients:
        each = [_draws(oids, max(1, total // n), config.skew, i) for i in range(n)]
        with _opened(spec, n) as instances:
            for cold in (True, False):
                loads, missing, took, hist = _read_pass(instances, each)
                out.append(ReadPoint(n, cold, loads, took, hist, missing))
    return tuple(out)


@contextlib.contextmanager
def _opened(spec: str, n: int) -> Iterator[list[Any]]:
    storage = open_raw(spec)
    instances = [storage]
    try:
        make = getattr(storage, "new_instance", None)
        for _ in range(n - 1):
            instances.append(make() if make is not None else storage)
        yield instances
    finally:
        for s in reversed(instances[1:]):
            if s is not storage:
                s.release() if hasattr(s, "release") else s.close()
        storage.close()


def measure(
    config: ChooseConfig,
    name: str,
    options: StorageOptions,
    source: Source,
    say: Progress,
) -> Candidate:
    """One candidate: the copy, the comparison, the reads, the size."""
    factory = storages.get(name, options)
    clients = (1,) if one_process(factory) else config.clients
    say.step(f"{name}: copying {source.name}", 1.0)
    say.line(f"{name}: copying {source.name}", counted=True)
    with factory.running(), fresh(factory) as (shared, directory):
        target = open_raw(shared.client)
        try:
            txns, records, size, took, by_size = copy(source.storage, target)
            say.status("comparing every record")
            keeps = bool(getattr(target, "supportsUndo", lambda: False)())
            found = compare(source.storage, target, keeps)
        finally:
            target.close()
        say.status("reading")
        read = reads(shared.client, found["sample"], config, clients)
        on_disk = size_on_disk(directory, factory.not_storage)
    say.advance()
    result = CopyResult(
        transactions=txns,
        records=records,
        bytes=size,
        copy_s=took,
        by_size=by_size,
        checked=found["checked"],
        revisions_checked=found["revisions"],
        keeps_history=keeps,
        lost=found["lost"],
        changed=found["changed"],
        examples=tuple(found["examples"]),
        reads=read,
    )
    return Candidate(
        storage=name,
        one_process=one_process(factory),
        size_bytes=on_disk,
        known_bug=known_bug(name),
        copy=result,
    )


def run(
    config: ChooseConfig, options: StorageOptions, source: Source, say: Progress
) -> list[Candidate]:
    say.plan(len(config.storages), unit_s=30.0)
    out = []
    for name in config.storages:
        work = functools.partial(measure, config, name, options, source, say)
        out.append(guarded(name, options, say, work))
    return out
