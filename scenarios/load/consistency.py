"""The consistency check after a concurrent run: the stored data set, read
through a fresh client, against the state before the run (Baseline) and the
history of every transaction the clients attempted (scenarios.load.history).

What it checks, by kind of violation:

- lost write: an acknowledged write (a sequence created, a price, a lab's
  stock) is missing, or was replaced although no later write was
  acknowledged; a sequence present before the run is gone;
- phantom write: the data holds the effect of a failed transaction, or a
  value or sequence no transaction of the run wrote;
- index drift: an index of the library (category, lab, material, price,
  process price, the count) or of the sequences (by group) disagrees with
  the objects, either way;
- lost update: two acknowledged read-modify-writes built on the same
  revision (two price changes, or two transfers of a lab's stock, that both
  made revision r + 1);
- inconsistent read: an acknowledged transaction read a value that no
  serial order of the committed transactions produces: the write of a
  failed transaction, a value nobody wrote, or a stock audit whose sum is
  not the total before the run (transfers keep it);
- invalid data: a BTree that fails its own check, a step outside its
  capability's ranges, a price outside its catalogue range.

What it cannot see: writes of operations whose records were lost (a client
killed before its line was written: at most its last attempt), changes to
objects the operations never write (users, groups, the generator's
sequences' steps), and anything another program did to the database during
the run.  Unknown outcomes (the connection was lost during the commit) are
allowed either way.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from scenarios.load.history import settle
from vfab import operations
from vfab.model import ID_BITS, ID_MASK, VirtualFab, cents, price_key

#: The kinds of violation, in the order reports list them.
KINDS = (
    "lost write",
    "phantom write",
    "index drift",
    "lost update",
    "inconsistent read",
    "invalid data",
)

Register = tuple[str, Any]  # ("price", capability id) or ("stock", lab name)


@dataclasses.dataclass(frozen=True)
class Baseline:
    """What the registers and the sequences made by operations were before
    the run (read through a fresh client: Baseline.read)."""

    #: (kind, key) -> (revision, value)
    registers: dict[Register, tuple[int, int]]
    #: ids of sequences in the operations' id range
    sequences: frozenset[int]

    @property
    def stock_total(self) -> int:
        return sum(v for (kind, _), (_, v) in self.registers.items() if kind == "stock")

    @classmethod
    def read(cls, fab: VirtualFab) -> Baseline:
        registers: dict[Register, tuple[int, int]] = {}
        for cap in fab.library.capabilities.values():
            registers["price", cap.id] = (cap.price_revision, cents(cap.price))
        for lab in fab.catalogue.labs.values():
            registers["stock", lab.name] = (lab.stock_revision, lab.wafer_stock)
        ids = fab.sequences.keys(min=operations.FIRST_ORDER_ID)
        return cls(registers, frozenset(int(i) for i in ids))


@dataclasses.dataclass(frozen=True)
class Violation:
    kind: str
    text: str
    #: the attempts involved, as client#n (operation)
    ops: tuple[str, ...] = ()
    #: the transaction ids involved (hex)
    tids: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {
            "ops": list(self.ops),
            "tids": list(self.tids),
        }


@dataclasses.dataclass
class ConsistencyReport:
    """What check() looked at (*checked*: counts by name) and every
    violation it found."""

    checked: dict[str, int] = dataclasses.field(default_factory=dict)
    violations: list[Violation] = dataclasses.field(default_factory=list)
    #: seconds the check took through a client (verify()), None in-process
    seconds: float | None = None

    @property
    def ok(self) -> bool:
        return not self.violations

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for v in self.violations:
            out[v.kind] += 1
        return out

    def summary(self) -> str:
        """'consistency: N violations' and, when there are some, by kind."""
        n = len(self.violations)
        text = f"consistency: {n} violation{'s' * (n != 1)}"
        if n:
            kinds = ", ".join(f"{c} {k}" for k, c in self.counts().items() if c)
            text += f" ({kinds})"
        return text

    def what(self) -> str:
        """What was checked, in words."""
        c = self.checked
        return (
            f"checked {c.get('attempts', 0)} attempts ({c.get('ok', 0)} ok, "
            f"{c.get('failed', 0)} failed, {c.get('unknown', 0)} unknown), "
            f"{c.get('reads', 0)} reads, {c.get('audits', 0)} stock audits; "
            f"{c.get('prices', 0)} prices, {c.get('labs', 0)} labs' stock, "
            f"{c.get('sequences', 0)} sequences made by operations, "
            f"{c.get('index_entries', 0)} index entries both ways"
            + ("" if self.seconds is None else f", in {self.seconds:.1f} s")
        )

    def lines(self, limit: int = 5) -> list[str]:
        """The first *limit* violations in words, and how many more."""
        out = [f"{v.kind}: {v.text}" for v in self.violations[:limit]]
        if len(self.violations) > limit:
            out.append(f"... and {len(self.violations) - limit} more (all in the JSON)")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "checked": True,
            "ok": self.ok,
            "summary": self.summary(),
            "what": self.what(),
            "counts": self.counts(),
            "problems": self.lines(),
            "violations": [v.to_json() for v in self.violations],
            "tally": dict(self.checked),
            "seconds": self.seconds,
        }


def not_checked(reason: str) -> dict[str, Any]:
    """The JSON of a check that did not run, saying why."""
    return {
        "checked": False,
        "ok": None,
        "summary": f"consistency not checked: {reason}",
        "what": "",
        "counts": {},
        "problems": [],
        "violations": [],
        "tally": {},
    }


def check(
    fab: VirtualFab, baseline: Baseline, events: Iterable[Any]
) -> ConsistencyReport:
    """Check *fab* (read through a fresh client) against *baseline* and the
    run's history *events* (scenarios.load.history.Event)."""
    checker = _Checker(fab, baseline, settle(events))
    checker.run()
    order = {k: i for i, k in enumerate(KINDS)}
    checker.report.violations.sort(key=lambda v: order[v.kind])
    return checker.report


def _money(value: int) -> str:
    return f"${value / 100:,.2f}"


class _Checker:
    def __init__(self, fab: VirtualFab, baseline: Baseline, events: list[Any]) -> None:
        self.fab = fab
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

    def _sequences(self) -> None:
        fab = self.fab
        stored = {int(i) for i in fab.sequences.keys(min=operations.FIRST_ORDER_ID)}
        self.report.checked["sequences"] = len(stored - self.baseline.sequences)
        for sid in sorted(self.baseline.sequences - stored):
            self.add("lost write", f"sequence {sid}, stored before the run, is gone")
        for sid, lst in sorted(self.creators.items()):
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
        for sid, s in fab.sequences.items():
            groups[s.group.name].add(int(sid))
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


# -- through a client ----------------------------------------------------------


def read_baseline(target: str | tuple[str, int]) -> Baseline:
    """The Baseline of the data set at *target* (a client spec, or a ZEO
    (host, port)), read through a client of its own before the run."""
    from scenarios.load.session import fab_of, short_connection

    with short_connection(target) as connection:
        fab = fab_of(connection, _where(target))
        connection.prefetch(list(fab.library.capabilities.values()))
        return Baseline.read(fab)


def verify(
    target: str | tuple[str, int], baseline: Baseline, events: Iterable[Any]
) -> ConsistencyReport:
    """check() the data set at *target* through a fresh client, after the
    run: what the check reads is prefetched first (a cold client would
    wait one round trip per object, about 1 ms each on a server here)."""
    import time

    from scenarios.load.session import fab_of, short_connection

    events = list(events)
    started = time.perf_counter()
    with short_connection(target) as connection:
        fab = fab_of(connection, _where(target))
        _prefetch(connection, fab)
        report = check(fab, baseline, events)
    report.seconds = time.perf_counter() - started
    return report


def _where(target: str | tuple[str, int]) -> str:
    from scenarios.load.target import describe

    return describe(target if isinstance(target, str) else f"{target[0]}:{target[1]}")


def _prefetch(connection: Any, fab: VirtualFab) -> None:
    library = fab.library
    connection.prefetch(list(library.capabilities.values()))
    connection.prefetch(list(fab.catalogue.labs.values()))
    sequences = list(fab.sequences.values())
    connection.prefetch(sequences)
    made = fab.sequences.values(min=operations.FIRST_ORDER_ID)
    connection.prefetch([step for s in made for step in s.steps])
