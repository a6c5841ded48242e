"""The rules of the consistency check (scenarios.load.consistency.check):
one pass over the settled history, then the stored registers, sequences,
reads and indexes, each violation added to the report as found."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from scenarios.load.violations import (
    Baseline,
    ConsistencyReport,
    Register,
    Violation,
)
from vfab import operations
from vfab.model import ID_BITS, ID_MASK, VirtualFab, cents, price_key


def _money(value: int) -> str:
    return f"${value / 100:,.2f}"


#: Sequences prefetched at a time: a whole run's steps at once overflow a ZEO
#: client's cache, which then evicts them before they are read (one round
#: trip per object: 10,000 sequences took 108 s at once).
BATCH = 500


class Checker:
    """*prefetch*: a connection's prefetch(objects), asked before each
    batch of sequences is read (None: nothing to ask, in-process)."""

    def __init__(
        self,
        fab: VirtualFab,
        baseline: Baseline,
        events: list[Any],
        prefetch: Callable[[list[Any]], None] | None = None,
    ) -> None:
        self.fab = fab
        self.prefetch = prefetch or (lambda objects: None)
        self.baseline = baseline
        self.events = events
        self.report = ConsistencyReport()
        #: register -> revision -> [(event, value)]
        self.writers: dict[Register, dict[int, list[tuple[Any, Any]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        #: sequence id -> [(event, (owner, group, steps))]
        self.creators: dict[int, list[tuple[Any, Any]]] = defaultdict(list)
        #: transaction id -> acknowledged events
        self.by_tid: dict[str, list[Any]] = defaultdict(list)

    def add(self, kind: str, text: str, events: Iterable[Any] = (), tids=()) -> None:
        events = list(events)
        self.report.violations.append(
            Violation(
                kind,
                text,
                tuple(e.name for e in events),
                tuple(t for t in tids if t),
            )
        )

    def run(self) -> None:
        tally = self.report.checked
        for e in self.events:
            tally["attempts"] = tally.get("attempts", 0) + 1
            tally[e.outcome] = tally.get(e.outcome, 0) + 1
            if e.tid and e.outcome == "ok":
                self.by_tid[e.tid].append(e)
            for kind, key, rev, value in e.writes:
                if kind == "sequence":
                    self.creators[key].append((e, value))
                else:
                    self.writers[kind, key][rev].append((e, value))
        self._structure()
        self._registers()
        self._sequences()
        self._reads()
        self._indexes()

    # -- helpers --------------------------------------------------------

    def _stored_by(self, tid: str) -> str:
        """'stored by transaction T' and whom T was acknowledged to."""
        acked = self.by_tid.get(tid, [])
        text = f"stored by transaction {tid}"
        if acked:
            text += ", acknowledged to " + ", ".join(e.name for e in acked[:3])
        else:
            text += ", acknowledged to no operation of the run"
        return text

    @staticmethod
    def _describe(kind: str, key: Any, rev: int, value: Any) -> str:
        if kind == "price":
            return f"capability {key}'s price revision {rev} ({_money(value)})"
        return f"lab {key}'s stock revision {rev} ({value} wafers)"

    # -- checks ---------------------------------------------------------

    def _structure(self) -> None:
        fab = self.fab
        library = fab.library
        trees = [("sequences", fab.sequences), ("library", library.capabilities)]
        for name in ("by_category", "by_lab", "by_material", "by_process_price"):
            tree = getattr(library, name, None)
            if tree is not None:
                trees.append((f"library.{name}", tree))
        if fab.sequences_by_group is not None:
            trees.append(("sequences_by_group", fab.sequences_by_group))
        for name, tree in trees:
            try:
                tree._check()
            except AssertionError as e:
                self.add("invalid data", f"the {name} BTree fails its check: {e}")
        for cap in library.capabilities.values():
            bounds = operations.price_range(cap)
            if bounds is not None and not bounds[0] <= cap.price <= bounds[1]:
                self.add(
                    "invalid data",
                    f"capability {cap.id}: price {cap.price} outside its "
                    f"catalogue range [{bounds[0]:g}, {bounds[1]:g}]",
                )

    def _stored_registers(self) -> dict[Register, tuple[int, int, str]]:
        stored: dict[Register, tuple[int, int, str]] = {}
        for cap in self.fab.library.capabilities.values():
            tid = bytes(cap._p_serial).hex()
            stored["price", cap.id] = (cap.price_revision, cents(cap.price), tid)
        for lab in self.fab.catalogue.labs.values():
            tid = bytes(lab._p_serial).hex()
            stored["stock", lab.name] = (lab.stock_revision, lab.wafer_stock, tid)
        return stored

    def _registers(self) -> None:
        stored = self._stored_registers()
        tally = self.report.checked
        tally["prices"] = sum(1 for k, _ in stored if k == "price")
        tally["labs"] = sum(1 for k, _ in stored if k == "stock")
        for register in sorted(self.writers.keys() - stored.keys(), key=str):
            writes = [e for lst in self.writers[register].values() for e, _ in lst]
            self.add(
                "lost write",
                f"{register[0]} of {register[1]} was written but is not stored",
                [e for e in writes if e.outcome == "ok"][:3],
            )
        for register, (rev, value, tid) in stored.items():
            self._register(register, rev, value, tid)

    def _register(self, register: Register, rev: int, value: int, tid: str) -> None:
        kind, key = register
        writes = self.writers.get(register, {})
        for r, lst in sorted(writes.items()):
            oks = [e for e, _ in lst if e.outcome == "ok"]
            if len(oks) > 1:
                names = " and ".join(e.name for e in oks[:2])
                self.add(
                    "lost update",
                    f"{names} both made {kind} revision {r} of {key}: "
                    "each read-modify-write built on the same revision",
                    oks,
                    [e.tid for e in oks],
                )
        ok_revs = [r for r, lst in writes.items() for e, _ in lst if e.outcome == "ok"]
        top = max(ok_revs, default=None)
        if top is not None and top > rev:
            e, v = next((e, v) for e, v in writes[top] if e.outcome == "ok")
            self.add(
                "lost write",
                f"{self._describe(kind, key, top, v)} by {e.name} was "
                f"acknowledged (transaction {e.tid}) but revision {rev} is stored "
                f"({self._stored_by(tid)})",
                [e],
                [e.tid, tid],
            )
        base = self.baseline.registers.get(register)
        if base == (rev, value):
            return
        here = writes.get(rev, [])
        if any(e.outcome != "failed" and v == value for e, v in here):
            return
        what = self._describe(kind, key, rev, value)
        failed = [e for e, v in here if e.outcome == "failed" and v == value]
        if failed:
            e = failed[0]
            self.add(
                "phantom write",
                f"{what} is the write of {e.name}, whose commit failed "
                f"({e.error}); {self._stored_by(tid)}",
                [e, *self.by_tid.get(tid, [])[:1]],
                [tid],
            )
        else:
            before = f"; before the run it was revision {base[0]}" if base else ""
            self.add(
                "phantom write",
                f"{what} was written by no operation of the run{before}; "
                f"{self._stored_by(tid)}",
                self.by_tid.get(tid, [])[:1],
                [tid],
            )
        replaced = [e for e, v in here if e.outcome == "ok"]
        if replaced:
            e = replaced[0]
            self.add(
                "lost write",
                f"{kind} revision {rev} of {key} acknowledged to {e.name} "
                f"(transaction {e.tid}) was replaced by that write",
                [e],
                [e.tid, tid],
            )

    def _batches(self, items: Iterable[tuple[Any, Any]], steps: bool) -> Iterator[Any]:
        """*items* ((sequence id, anything) pairs), each batch of BATCH
        after its stored sequences (and, with *steps*, their steps) were
        prefetched."""
        sequences = self.fab.sequences
        batch: list[tuple[Any, Any]] = []
        for item in itertools.chain(items, [None]):
            if item is not None:
                batch.append(item)
                if len(batch) < BATCH:
                    continue
            found = [s for s in (sequences.get(k) for k, _ in batch) if s is not None]
            self.prefetch(found)
            if steps:
                self.prefetch([step for s in found for step in s.steps])
            yield from batch
            batch = []

    def _sequences(self) -> None:
        fab = self.fab
        stored = {int(i) for i in fab.sequences.keys(min=operations.FIRST_ORDER_ID)}
        self.report.checked["sequences"] = len(stored - self.baseline.sequences)
        for sid in sorted(self.baseline.sequences - stored):
            self.add("lost write", f"sequence {sid}, stored before the run, is gone")
        for sid, lst in self._batches(sorted(self.creators.items()), steps=True):
            oks = [e for e, _ in lst if e.outcome == "ok"]
            if len(oks) > 1:
                self.add(
                    "lost update",
                    f"sequence {sid} was acknowledged as created by "
                    f"{' and '.join(e.name for e in oks[:2])}",
                    oks,
                    [e.tid for e in oks],
                )
            s = fab.sequences.get(sid)
            if s is None:
                if oks:
                    e = oks[0]
                    self.add(
                        "lost write",
                        f"sequence {sid} created by {e.name} (transaction "
                        f"{e.tid}) was acknowledged but is not stored",
                        [e],
                        [e.tid],
                    )
                continue
            tid = bytes(s._p_serial).hex()
            value = (s.owner.login, s.group.name, len(s.steps))
            if any(e.outcome != "failed" and v == value for e, v in lst):
                self._steps(sid, s)
                continue
            failed = [e for e, v in lst if e.outcome == "failed" and v == value]
            if failed:
                e = failed[0]
                self.add(
                    "phantom write",
                    f"sequence {sid} is the write of {e.name}, whose commit "
                    f"failed ({e.error}); {self._stored_by(tid)}",
                    [e, *self.by_tid.get(tid, [])[:1]],
                    [tid],
                )
            elif oks:
                e = oks[0]
                self.add(
                    "lost write",
                    f"sequence {sid} acknowledged to {e.name} as "
                    f"{'/'.join(map(str, lst[0][1]))} is stored as "
                    f"{'/'.join(map(str, value))}; {self._stored_by(tid)}",
                    [e],
                    [e.tid, tid],
                )
        for sid in sorted(stored - self.baseline.sequences - self.creators.keys()):
            tid = bytes(fab.sequences[sid]._p_serial).hex()
            self.add(
                "phantom write",
                f"sequence {sid} was created by no operation of the run; "
                f"{self._stored_by(tid)}",
                self.by_tid.get(tid, [])[:1],
                [tid],
            )

    def _steps(self, sid: int, s: Any) -> None:
        capabilities = self.fab.library.capabilities
        for n, step in enumerate(s.steps, 1):
            cap = step.capability
            where = f"sequence {sid} step {n}"
            if capabilities.get(cap.id) is not cap:
                self.add(
                    "invalid data", f"{where}: capability {cap.id} is not the library's"
                )
            if not 1 <= step.wafers <= cap.lot_size:
                self.add(
                    "invalid data",
                    f"{where}: {step.wafers} wafers, lot size {cap.lot_size}",
                )
            for name, value in step.settings.items():
                low, high = cap.ranges.get(name, (value, value))
                if not low <= value <= high:
                    self.add(
                        "invalid data",
                        f"{where}: {name}={value} outside [{low}, {high}]",
                    )

    def _reads(self) -> None:
        """Reads of acknowledged attempts, grouped by what they saw."""
        total = self.baseline.stock_total
        bad: dict[tuple[str, Any, int, Any], list[Any]] = defaultdict(list)
        reads = audits = 0
        for e in self.events:
            if e.outcome != "ok":
                continue
            for access in e.reads:
                kind, key, rev, value = access
                reads += 1
                if kind == "stock total":
                    audits += 1
                    if value != total:
                        bad[access].append(e)
                    continue
                if self.baseline.registers.get((kind, key)) == (rev, value):
                    continue
                lst = self.writers.get((kind, key), {}).get(rev, [])
                if not any(w.outcome != "failed" and v == value for w, v in lst):
                    bad[access].append(e)
        self.report.checked["reads"] = reads
        self.report.checked["audits"] = audits
        for (kind, key, rev, value), readers in bad.items():
            seen = f"{len(readers)} acknowledged read{'s' * (len(readers) != 1)}"
            first = readers[0].name
            if kind == "stock total":
                self.add(
                    "inconsistent read",
                    f"{seen} of every lab's stock summed to {value} wafers, not "
                    f"{total} (first: {first}): transfers never change the sum, "
                    "so the snapshot mixed states",
                    readers[:3],
                )
                continue
            what = self._describe(kind, key, rev, value)
            lst = self.writers.get((kind, key), {}).get(rev, [])
            failed = [w for w, v in lst if w.outcome == "failed" and v == value]
            source = (
                f"the write of {failed[0].name}, whose commit failed"
                if failed
                else "a value no operation of the run wrote"
            )
            self.add(
                "inconsistent read",
                f"{seen} saw {what}, {source} (first: {first})",
                [*readers[:3], *failed[:1]],
            )

    def _indexes(self) -> None:
        fab = self.fab
        library = fab.library
        entries = 0
        caps = list(library.capabilities.values())
        if library.by_category is None:
            self.add("index drift", "the library has no indexes (never built)")
        else:
            expected: dict[str, dict[Any, set[int]]] = {
                "by_category": defaultdict(set),
                "by_lab": defaultdict(set),
                "by_material": defaultdict(set),
            }
            by_process: dict[str, set[int]] = defaultdict(set)
            prices: set[int] = set()
            for c in caps:
                expected["by_category"][c.process.category].add(c.id)
                expected["by_lab"][c.lab.name].add(c.id)
                expected["by_material"][c.material.name].add(c.id)
                key = price_key(cents(c.price), c.id)
                prices.add(key)
                by_process[c.process.name].add(key)
            for name, want in expected.items():
                entries += self._compare_map(
                    f"library.{name}", getattr(library, name), want, _cap_ids
                )
            entries += self._compare_set("library.by_price", library.by_price, prices)
            entries += self._compare_map(
                "library.by_process_price", library.by_process_price, by_process, _keys
            )
            if library.count is not None and library.count() != len(caps):
                self.add(
                    "index drift",
                    f"library.count says {library.count()} capabilities, "
                    f"the library holds {len(caps)}",
                )
        if fab.sequences_by_group is None:
            self.report.checked["index_entries"] = entries
            return
        groups: dict[str, set[int]] = defaultdict(set)
        for sid, _ in self._batches(fab.sequences.items(), steps=False):
            groups[fab.sequences[sid].group.name].add(int(sid))
        entries += self._compare_map(
            "sequences_by_group", fab.sequences_by_group, groups, _seq_ids
        )
        self.report.checked["index_entries"] = entries

    def _compare_map(
        self, name: str, index: Any, want: dict[Any, set[int]], say
    ) -> int:
        have = {k: set(v) for k, v in index.items()}
        n = 0
        for key in sorted(have.keys() | want.keys(), key=str):
            n += len(have.get(key, ()))
            missing = want.get(key, set()) - have.get(key, set())
            extra = have.get(key, set()) - want.get(key, set())
            if missing or extra:
                self.add(
                    "index drift", f"{name}[{key!r}]: {_drift(missing, extra, say)}"
                )
        return n

    def _compare_set(self, name: str, index: Any, want: set[int]) -> int:
        have = set(index)
        missing, extra = want - have, have - want
        if missing or extra:
            self.add("index drift", f"{name}: {_drift(missing, extra, _keys)}")
        return len(have)


def _cap_ids(ids: Iterable[int]) -> str:
    return ", ".join(f"capability {i}" for i in sorted(ids)[:5])


def _seq_ids(ids: Iterable[int]) -> str:
    return ", ".join(f"sequence {i}" for i in sorted(ids)[:5])


def _keys(keys: Iterable[int]) -> str:
    return ", ".join(
        f"capability {k & ID_MASK} at {_money(k >> ID_BITS)}" for k in sorted(keys)[:5]
    )


def _drift(missing: set[int], extra: set[int], say) -> str:
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing ({say(missing)})")
    if extra:
        parts.append(f"{len(extra)} extra ({say(extra)})")
    return ", ".join(parts)
