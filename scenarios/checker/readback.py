"""Reading a data set back after a run, into plain data the checker judges
(scenarios.checker.judge): every register with its revision, value, digest
and the transaction that stored it, every sequence made by operations
with its digest, the indexes' contents, the BTrees' own checks, the
records that could not be loaded, and (when asked) the storage's
transaction log since the baseline.

Nothing here decides what is right.  A record that cannot be loaded
(POSKeyError: never written, or gone) is noted with the object that refers
to it and the reading goes on; a walk that cannot go on (a missing bucket
of a tree) notes what it could not read.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from scenarios.load.promises import snapshot_of
from vfab import digests, operations
from vfab.model import VirtualFab, cents

#: Sequences prefetched at a time: a whole run's steps at once overflow a ZEO
#: client's cache, which then evicts them before they are read (one round
#: trip per object: 10,000 sequences took 108 s at once).
BATCH = 500

Register = tuple[str, Any]  # ("price", capability id) or ("stock", lab name)


@dataclasses.dataclass(frozen=True)
class Stored:
    """One object as stored: its revision (1 for a sequence), the value
    the history records for it (cents, wafers, [owner, group, steps]), its
    digest (vfab.digests) and the transaction that stored it (16 hex)."""

    revision: int
    value: Any
    digest: str
    serial: str


@dataclasses.dataclass(frozen=True)
class Offer:
    """What the indexes of a capability should say: its process, category,
    lab and material by name, and its price."""

    process: str
    category: str
    lab: str
    material: str
    price: float


@dataclasses.dataclass(frozen=True)
class Unloadable:
    """A record that could not be loaded: its oid (hex), what it is, and
    the object that refers to it (a register or sequence key, or None)."""

    oid: str
    what: str
    referrer: tuple[str, Any] | None
    error: str


@dataclasses.dataclass
class FinalRead:
    """The data set as a fresh client read it after the run."""

    #: the last transaction this read's view holds (16 hex), if known
    snapshot: str | None = None
    registers: dict[Register, Stored] = dataclasses.field(default_factory=dict)
    offers: dict[int, Offer] = dataclasses.field(default_factory=dict)
    #: sequences in the operations' id range
    sequences: dict[int, Stored] = dataclasses.field(default_factory=dict)
    #: every sequence's group (the by-group index's truth)
    groups: dict[int, str] = dataclasses.field(default_factory=dict)
    #: index name -> key -> entries (ids, or price keys)
    indexes: dict[str, dict[Any, set[int]]] = dataclasses.field(default_factory=dict)
    #: library.by_price's keys, library.count() (None: no such index)
    by_price: set[int] | None = None
    count: int | None = None
    #: what BTrees.check.check said of each tree that failed it
    tree_problems: list[str] = dataclasses.field(default_factory=list)
    #: a step whose capability is not the library's: (sequence id, text)
    bad_references: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    unloadable: list[Unloadable] = dataclasses.field(default_factory=list)
    #: walks that could not be finished, in words
    unread: list[str] = dataclasses.field(default_factory=list)
    #: the storage's transactions after the baseline: (tid, description);
    #: None where not read, or the storage keeps no log (log_note says)
    log: list[tuple[str, str]] | None = None
    log_note: str = ""


def _serial(obj: Any) -> str:
    return bytes(obj._p_serial).hex()


def _oid(obj: Any) -> str:
    oid = getattr(obj, "_p_oid", None)
    return bytes(oid).hex() if oid is not None else "?"


def _cannot_load(error: BaseException) -> bool:
    """A record that cannot be loaded: POSKeyError, or the ReadConflictError
    ZODB's MVCC adapter raises for an object its snapshot does not hold."""
    name = type(error).__name__
    return name == "POSKeyError" or (
        name == "ReadConflictError" and "deleted" in str(error)
    )


def _oid_of(error: BaseException) -> str:
    arg = error.args[0] if error.args else None
    return arg.hex() if isinstance(arg, bytes) else "?"


class Reader:
    """Reads one data set (*fab*, on a connection that *prefetch*es: see
    read_final)."""

    def __init__(
        self, fab: VirtualFab, prefetch: Callable[[list[Any]], None] | None
    ) -> None:
        self.fab = fab
        self.prefetch = prefetch or (lambda objects: None)
        self.final = FinalRead()

    def lost(
        self, error: BaseException, what: str, referrer: tuple[str, Any] | None
    ) -> None:
        self.final.unloadable.append(
            Unloadable(_oid_of(error), what, referrer, type(error).__name__)
        )

    def guarded(self, what: str, read: Callable[[], None]) -> None:
        """read(), noting a record it could not load as unloadable and the
        walk *what* as unfinished."""
        try:
            read()
        except Exception as e:
            if not _cannot_load(e):
                raise
            self.lost(e, f"a record of {what}", None)
            self.final.unread.append(what)

    def run(self) -> FinalRead:
        self.guarded("library.capabilities", self._capabilities)
        self.guarded("catalogue.labs", self._labs)
        self._trees()
        self.guarded("the library's indexes", self._indexes)
        self.guarded("sequences", self._sequences)
        return self.final

    def _capabilities(self) -> None:
        for cid, cap in self.fab.library.capabilities.items():
            try:
                process = cap.process
                self.final.offers[cid] = Offer(
                    process.name,
                    process.category,
                    cap.lab.name,
                    cap.material.name,
                    cap.price,
                )
                self.final.registers["price", cid] = Stored(
                    cap.price_revision,
                    cents(cap.price),
                    digests.capability(cap),
                    _serial(cap),
                )
            except Exception as e:
                if not _cannot_load(e):
                    raise
                self.lost(e, f"capability {cid} or what it refers to", None)

    def _labs(self) -> None:
        for name, lab in self.fab.catalogue.labs.items():
            try:
                self.final.registers["stock", name] = Stored(
                    lab.stock_revision, lab.wafer_stock, digests.lab(lab), _serial(lab)
                )
            except Exception as e:
                if not _cannot_load(e):
                    raise
                self.lost(e, f"lab {name}", None)

    def _trees(self) -> None:
        from BTrees.check import check

        fab = self.fab
        library = fab.library
        trees = [("sequences", fab.sequences), ("library", library.capabilities)]
        for name in ("by_category", "by_lab", "by_material", "by_process_price"):
            tree = getattr(library, name, None)
            if tree is not None:
                trees.append((f"library.{name}", tree))
        if library.by_price is not None:
            trees.append(("library.by_price", library.by_price))
        if fab.sequences_by_group is not None:
            trees.append(("sequences_by_group", fab.sequences_by_group))
        for name, tree in trees:
            try:
                check(tree)
                tree._check()
            except AssertionError as e:
                text = str(e).strip().splitlines()
                self.final.tree_problems.append(
                    f"the {name} BTree fails its check: "
                    f"{text[0] if text else 'AssertionError'}"
                )
            except Exception as e:
                if not _cannot_load(e):
                    raise
                self.lost(e, f"a bucket of the {name} BTree", None)

    def _indexes(self) -> None:
        library = self.fab.library
        by_group = self.fab.sequences_by_group
        if by_group is not None:
            self.final.indexes["sequences_by_group"] = {
                k: set(v) for k, v in by_group.items()
            }
        if library.by_category is None:
            return
        for name in ("by_category", "by_lab", "by_material", "by_process_price"):
            index = getattr(library, name)
            self.final.indexes[f"library.{name}"] = {
                k: set(v) for k, v in index.items()
            }
        self.final.by_price = set(library.by_price or ())
        if library.count is not None:
            self.final.count = int(library.count())

    def _batches(self, items: Iterable[tuple[int, Any]], steps: bool) -> Iterator[Any]:
        """*items* ((sequence id, sequence) pairs), each batch of BATCH
        after its sequences (and, with *steps*, their steps) were
        prefetched."""
        for batch in iter(lambda: list(itertools.islice(items, BATCH)), []):
            try:
                self.prefetch([s for _, s in batch])
                if steps:
                    self.prefetch([step for _, s in batch for step in s.steps])
            except Exception as e:
                if not _cannot_load(e):
                    raise  # read one by one below, each loss noted there
            yield from batch

    def _sequences(self) -> None:
        fab = self.fab
        first = operations.FIRST_ORDER_ID
        items = iter(fab.sequences.items(max=first - 1, excludemax=False))
        for sid, s in self._batches(items, steps=False):
            try:
                self.final.groups[int(sid)] = s.group.name
            except Exception as e:
                if not _cannot_load(e):
                    raise
                self.lost(e, f"sequence {sid} or its group", None)
        ordered = iter(fab.sequences.items(min=first))
        capabilities = fab.library.capabilities
        for sid, s in self._batches(ordered, steps=True):
            sid = int(sid)
            try:
                self.final.groups[sid] = s.group.name
                value = (s.owner.login, s.group.name, len(s.steps))
            except Exception as e:
                if not _cannot_load(e):
                    raise
                self.lost(e, f"sequence {sid} or its owner or group", ("sequence", sid))
                continue
            lost = False
            for n, step in enumerate(s.steps, 1):
                try:
                    cap = step.capability
                    if capabilities.get(cap.id) is not cap:
                        self.final.bad_references.append(
                            (sid, f"step {n}: capability {cap.id} is not the library's")
                        )
                except Exception as e:
                    if not _cannot_load(e):
                        raise
                    self.final.unloadable.append(
                        Unloadable(
                            _oid(step),
                            f"step {n} of sequence {sid}",
                            ("sequence", sid),
                            type(e).__name__,
                        )
                    )
                    lost = True
            if lost:
                continue
            self.final.sequences[sid] = Stored(
                1, value, digests.sequence(s), _serial(s)
            )


def read_final(
    fab: VirtualFab, connection: Any = None, prefetch: bool = True
) -> FinalRead:
    """The FinalRead of *fab*, read on *connection* (its snapshot noted;
    what the check reads prefetched first: a cold client would wait one
    round trip per object, about 1 ms each on a server here)."""
    fetch = getattr(connection, "prefetch", None) if prefetch else None
    if fetch is not None:
        fetch(list(fab.library.capabilities.values()))
        fetch(list(fab.catalogue.labs.values()))
    final = Reader(fab, fetch).run()
    final.snapshot = snapshot_of(connection) if connection is not None else None
    return final


def read_log(storage: Any, after: str) -> tuple[list[tuple[str, str]] | None, str]:
    """(the transactions *storage* committed after the transaction *after*
    (16 hex): (tid, description), or None; why None)."""
    from ZODB.utils import p64

    iterator = getattr(storage, "iterator", None)
    if iterator is None:
        return None, f"{type(storage).__name__} has no transaction log to read"
    start = p64(int(after, 16) + 1)
    out: list[tuple[str, str]] = []
    try:
        transactions = iterator(start)
        try:
            for txn in transactions:
                description = txn.description
                if isinstance(description, bytes):
                    description = description.decode("utf-8", "replace")
                out.append((bytes(txn.tid).hex(), str(description)))
        finally:
            close = getattr(transactions, "close", None)
            if close is not None:
                close()
    except Exception as e:
        text = str(e).strip().splitlines()
        why = f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
        return None, f"its transaction log cannot be read ({why})"
    return out, ""
