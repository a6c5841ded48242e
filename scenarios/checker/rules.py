"""The rules of the consistency check that need no dependency graph: the
stored data (a FinalRead, scenarios.checker.readback) against the indexed
history (scenarios.checker.index) and the baseline.  A pure function of
them: rules(index, final) gives the violations and a tally of what was
looked at.

- lost write: an acknowledged write is not stored, or was replaced
  although no later write was acknowledged; a sequence present before the
  run is gone;
- lost record: a record another object refers to cannot be loaded;
- phantom write: a failed attempt's write is stored, or a value or
  sequence no attempt of the run wrote;
- corrupt value: the stored object (or what a read saw) has the revision
  and value an attempt wrote but other fields than it wrote (digests);
- index drift: an index disagrees with the objects, either way;
- lost update: two committed read-modify-writes of the same version;
- inconsistent read: an acknowledged read of a failed attempt's write
  (G1a), of an intermediate version (G1b), of a value nobody wrote, or a
  stock audit whose sum is not the total before the run;
- invalid data: a BTree failing BTrees.check, a price outside its
  catalogue range, a step whose capability is not the library's.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from typing import Any

from scenarios.checker import structure
from scenarios.checker.index import INITIAL, Index, Register
from scenarios.checker.readback import FinalRead, Stored
from scenarios.checker.violations import Violation
from scenarios.load.history import Access


def _money(value: int) -> str:
    return f"${value / 100:,.2f}"


def describe(kind: str, key: Any, rev: int, value: Any) -> str:
    if kind == "price":
        return f"capability {key}'s price revision {rev} ({_money(value)})"
    if kind == "stock":
        return f"lab {key}'s stock revision {rev} ({value} wafers)"
    return f"sequence {key}"


class Rules:
    """One pass of the rules over *index* and *final*; violations() and
    tally after run()."""

    def __init__(self, index: Index, final: FinalRead) -> None:
        self.index = index
        self.final = final
        self.found: list[Violation] = []
        self.tally: dict[str, int] = {}

    def add(
        self,
        kind: str,
        text: str,
        attempts: Iterable[int] = (),
        tids: Iterable[str | None] = (),
        anomaly: str | None = None,
        foreign: bool = False,
    ) -> None:
        names = tuple(self.index.name(i) for i in attempts if i != INITIAL)
        self.found.append(
            Violation(kind, text, names, tuple(t for t in tids if t), anomaly, foreign)
        )

    def run(self) -> list[Violation]:
        self._seen()
        self._lost_records()
        self._registers()
        self._sequences()
        self._reads()
        self._dirty_updates()
        self.tally["index_entries"] = structure.indexes(self.final, self.add)
        structure.invalid(self.final, self.add)
        return self.found

    # -- helpers --------------------------------------------------------

    def names(self, attempts: list[int], shown: int = 10) -> str:
        """Every attempt of *attempts* by name, the first *shown* of them
        in full and how many more."""
        text = ", ".join(self.index.name(i) for i in attempts[:shown])
        more = len(attempts) - shown
        return text + (f" and {more} more" if more > 0 else "")

    def stored_by(self, tid: str) -> str:
        """'stored by transaction T' and whom T was acknowledged to."""
        acked = self.index.by_tid.get(tid, [])
        text = f"stored by transaction {tid}"
        if acked:
            return (
                text
                + ", acknowledged to "
                + ", ".join(self.index.name(i) for i in acked[:3])
            )
        return text + ", acknowledged to no operation of the run"

    def _stored_as_access(self, register: Register, s: Stored) -> Access:
        return Access(register[0], register[1], s.revision, s.value, s.digest)

    def _seen(self) -> None:
        """Unknown outcomes that the stored data show committed."""
        index = self.index
        for register, s in self._stored():
            source = index.source(self._stored_as_access(register, s))
            if source.kind == "written":
                index.observe(source.writers)

    def _stored(self) -> Iterable[tuple[Register, Stored]]:
        yield from self.final.registers.items()
        for sid, s in self.final.sequences.items():
            yield ("sequence", sid), s

    # -- records that cannot be loaded ---------------------------------

    def _lost_records(self) -> None:
        for u in self.final.unloadable:
            text = f"{u.what} (oid 0x{u.oid}) cannot be loaded ({u.error})"
            attempts: list[int] = []
            tids: list[str] = []
            if u.referrer is not None:
                kind, key = u.referrer
                creators = self.index.writes.get((kind, key), {}).get(1, [])
                oks = [i for i, _ in creators if i in self.index.committed]
                if oks:
                    i = oks[0]
                    e = self.index.attempts[i]
                    text += (
                        f": {describe(kind, key, 1, None)}, which refers to it, "
                        f"was committed by {e.name} (transaction {e.tid})"
                    )
                    attempts, tids = [i], [e.tid or ""]
                else:
                    text += f": {describe(kind, key, 1, None)} refers to it"
            self.add("lost record", text, attempts, tids)

    # -- registers ------------------------------------------------------

    def _registers(self) -> None:
        index = self.index
        stored = self.final.registers
        self.tally["prices"] = sum(1 for k, _ in stored if k == "price")
        self.tally["labs"] = sum(1 for k, _ in stored if k == "stock")
        registers = {r for r in index.writes if r[0] != "sequence"}
        for register in sorted(registers - stored.keys(), key=str):
            if self.final.unread or self.final.unloadable:
                break  # not every register could be read: those say so
            oks = [
                i
                for revs in index.writes[register].values()
                for i, _ in revs
                if index.attempts[i].outcome == "ok"
            ]
            self.add(
                "lost write",
                f"{register[0]} of {register[1]} was written but is not stored",
                oks[:3],
            )
        for register, s in stored.items():
            self._lost_update(register)
            self._register(register, s)

    def _lost_update(self, register: Register) -> None:
        kind, key = register
        for r, lst in sorted(self.index.writes.get(register, {}).items()):
            oks = [i for i, _ in lst if self.index.attempts[i].outcome == "ok"]
            if len(oks) > 1:
                names = " and ".join(self.index.name(i) for i in oks[:2])
                self.add(
                    "lost update",
                    f"{names} both made {kind} revision {r} of {key}: each "
                    "read-modify-write built on the same revision and both "
                    "committed",
                    oks,
                    [self.index.attempts[i].tid for i in oks],
                    anomaly="lost update",
                )

    def _register(self, register: Register, s: Stored) -> None:
        index = self.index
        kind, key = register
        writes = index.writes.get(register, {})
        acked = [
            r
            for r, lst in writes.items()
            for i, _ in lst
            if index.attempts[i].outcome == "ok"
        ]
        top = max(acked, default=None)
        if top is not None and top > s.revision:
            i, w = next(
                (i, w) for i, w in writes[top] if index.attempts[i].outcome == "ok"
            )
            e = index.attempts[i]
            self.add(
                "lost write",
                f"{describe(kind, key, top, w.value)} by {e.name} was "
                f"acknowledged (transaction {e.tid}) but revision {s.revision} is "
                f"stored ({self.stored_by(s.serial)})",
                [i],
                [e.tid, s.serial],
            )
        source = index.source(self._stored_as_access(register, s))
        what = describe(kind, key, s.revision, s.value)
        if source.kind == "written":
            return
        if source.kind == "initial":
            return
        if source.kind == "corrupt":
            self._corrupt_stored(register, s, source.writers)
            return
        if source.kind == "failed":
            i = source.writers[0]
            e = index.attempts[i]
            self.add(
                "phantom write",
                f"{what} is the write of {e.name}, whose commit failed "
                f"({e.error}); {self.stored_by(s.serial)}",
                [i, *index.by_tid.get(s.serial, [])[:1]],
                [s.serial],
                anomaly="G1a",
                # stored by a transaction of no attempt: another writer
                # may have written the same (verify runs share a seed)
                foreign=s.serial not in index.by_tid,
            )
        else:  # nobody, or an intermediate version (a stored one is final)
            base = index.baseline.registers.get(register)
            before = f"; before the run it was revision {base[0]}" if base else ""
            self.add(
                "phantom write",
                f"{what} was written by no operation of the run{before}; "
                f"{self.stored_by(s.serial)}",
                index.by_tid.get(s.serial, [])[:1],
                [s.serial],
                foreign=True,
            )
        replaced = [
            i
            for i, _ in writes.get(s.revision, [])
            if index.attempts[i].outcome == "ok"
        ]
        if replaced:
            e = index.attempts[replaced[0]]
            self.add(
                "lost write",
                f"{kind} revision {s.revision} of {key} acknowledged to {e.name} "
                f"(transaction {e.tid}) was replaced by that write",
                replaced[:1],
                [e.tid, s.serial],
            )

    def _corrupt_stored(
        self, register: Register, s: Stored, writers: tuple[int, ...]
    ) -> None:
        kind, key = register
        what = describe(kind, key, s.revision, s.value)
        if writers == (INITIAL,):
            self.add(
                "corrupt value",
                f"{what} is stored with other fields than before the run, "
                f"although no operation of the run wrote it "
                f"({self.stored_by(s.serial)})",
                (),
                [s.serial],
                foreign=True,
            )
            return
        i = writers[0]
        e = self.index.attempts[i]
        self.add(
            "corrupt value",
            f"{what} is stored with other fields than {e.name} wrote "
            f"(transaction {e.tid}); {self.stored_by(s.serial)}",
            [i],
            [e.tid, s.serial],
        )

    # -- sequences --------------------------------------------------------

    def _sequences(self) -> None:
        index = self.index
        stored = self.final.sequences
        unloadable = {
            u.referrer[1] for u in self.final.unloadable if u.referrer is not None
        }
        present = stored.keys() | unloadable
        baseline = index.baseline.sequences
        self.tally["sequences"] = len(present - baseline)
        for sid in sorted(baseline - present):
            if self.final.unread:
                break  # not all of them could be read: the walk says so
            self.add(
                "lost write",
                f"sequence {sid}, stored before the run, is gone",
                foreign=True,
            )
        created = {
            key: revs.get(1, [])
            for (kind, key), revs in index.writes.items()
            if kind == "sequence"
        }
        for sid, lst in sorted(created.items()):
            oks = [i for i, _ in lst if index.attempts[i].outcome == "ok"]
            if len(oks) > 1:
                self.add(
                    "lost update",
                    f"sequence {sid} was acknowledged as created by "
                    f"{' and '.join(index.name(i) for i in oks[:2])}",
                    oks,
                    [index.attempts[i].tid for i in oks],
                    anomaly="lost update",
                )
            if sid in unloadable:
                continue
            s = stored.get(sid)
            if s is None:
                if oks and not self.final.unread:
                    e = index.attempts[oks[0]]
                    self.add(
                        "lost write",
                        f"sequence {sid} created by {e.name} (transaction "
                        f"{e.tid}) was acknowledged but is not stored",
                        oks[:1],
                        [e.tid],
                    )
                continue
            register = ("sequence", sid)
            source = index.source(self._stored_as_access(register, s))
            if source.kind == "written":
                continue
            if source.kind == "corrupt":
                self._corrupt_stored(register, s, source.writers)
            elif source.kind == "failed":
                e = index.attempts[source.writers[0]]
                self.add(
                    "phantom write",
                    f"sequence {sid} is the write of {e.name}, whose commit "
                    f"failed ({e.error}); {self.stored_by(s.serial)}",
                    [source.writers[0], *index.by_tid.get(s.serial, [])[:1]],
                    [s.serial],
                    anomaly="G1a",
                    foreign=s.serial not in index.by_tid,
                )
            elif oks:
                e = index.attempts[oks[0]]
                written = lst[0][1].value
                self.add(
                    "corrupt value",
                    f"sequence {sid} acknowledged to {e.name} as "
                    f"{'/'.join(map(str, written or ()))} is stored as "
                    f"{'/'.join(map(str, s.value))}; {self.stored_by(s.serial)}",
                    oks[:1],
                    [e.tid, s.serial],
                )
        for sid in sorted(stored.keys() - baseline - created.keys()):
            s = stored[sid]
            self.add(
                "phantom write",
                f"sequence {sid} was created by no operation of the run; "
                f"{self.stored_by(s.serial)}",
                index.by_tid.get(s.serial, [])[:1],
                [s.serial],
                foreign=True,
            )

    # -- reads ----------------------------------------------------------

    def _reads(self) -> None:
        """Reads of committed attempts, grouped by what they saw: the
        acknowledged ones, and those of unknown outcome whose write a
        committed one read (so they committed: their reads are judged
        too, and may show more of them committed)."""
        index = self.index
        total = index.baseline.stock_total
        bad: dict[tuple[str, Access], list[int]] = defaultdict(list)
        reads = audits = 0
        todo = deque(sorted(index.committed))
        done: set[int] = set()
        committed, source_of = index.committed, index.source
        while todo:
            i = todo.popleft()
            if i in done:
                continue
            done.add(i)
            for access in index.attempts[i].reads:
                reads += 1
                if access.kind == "stock total":
                    audits += 1
                    if access.value != total:
                        bad["sum", access].append(i)
                    continue
                source = source_of(access)
                if source.kind == "written":
                    if not committed.issuperset(source.writers):
                        # unknown outcomes this read shows committed
                        fresh = [w for w in source.writers if w not in committed]
                        index.observe(fresh)
                        todo.extend(w for w in fresh if w in committed)
                elif source.kind != "initial":
                    bad[source.kind, access].append(i)
        self.tally["reads"] = reads
        self.tally["audits"] = audits
        for (kind, access), readers in bad.items():
            seen = f"{len(readers)} acknowledged read{'s' * (len(readers) != 1)}"
            first = index.name(readers[0])
            if kind == "sum":
                self.add(
                    "inconsistent read",
                    f"{seen} of every lab's stock summed to {access.value} wafers, "
                    f"not {total} (first: {first}): transfers never change the "
                    "sum, so the snapshot mixed states",
                    readers[:3],
                    anomaly="read skew",
                    foreign=True,
                )
                continue
            what = describe(access.kind, access.key, access.revision, access.value)
            source = index.source(access)
            writers = list(source.writers)
            if kind == "failed":
                self.add(
                    "inconsistent read",
                    f"{seen} saw {what}, the write of {index.name(writers[0])}, "
                    f"whose commit failed (read by {self.names(readers)})",
                    [*readers, *writers[:1]],
                    anomaly="G1a",
                    # another writer may have written the same value
                    foreign=True,
                )
            elif kind == "intermediate":
                self.add(
                    "inconsistent read",
                    f"{seen} saw {what}, which {index.name(writers[0])} "
                    f"overwrote in the same transaction (first: {first})",
                    [*readers[:3], *writers[:1]],
                    anomaly="G1b",
                )
            elif kind == "corrupt":
                by = (
                    "the state before the run"
                    if writers == [INITIAL]
                    else f"what {index.name(writers[0])} wrote"
                )
                self.add(
                    "corrupt value",
                    f"{seen} saw {what} with other fields than {by} (first: {first})",
                    [*readers[:3], *[w for w in writers[:1] if w != INITIAL]],
                    foreign=writers == [INITIAL],
                )
            else:
                self.add(
                    "inconsistent read",
                    f"{seen} saw {what}, a value no operation of the run wrote "
                    f"(first: {first})",
                    readers[:3],
                    foreign=True,
                )

    def _dirty_updates(self) -> None:
        """A committed write built on a revision only failed attempts
        wrote (every write makes revision r + 1 of the r it read)."""
        index = self.index
        for i in sorted(index.committed):
            e = index.attempts[i]
            if not e.writes:
                continue
            for w in e.writes:
                if w.kind == "sequence":
                    continue
                register, r = (w.kind, w.key), w.revision - 1
                # the cheap test first: r has a writer that did not fail
                on = index.writes.get(register, {}).get(r, [])
                if not on or any(index.attempts[j].outcome != "failed" for j, _ in on):
                    continue
                if any((v.kind, v.key, v.revision) == (*register, r) for v in e.writes):
                    continue  # built on its own earlier write
                base = index.baseline.registers.get(register)
                if base is not None and base[0] == r:
                    continue
                j = on[0][0]
                self.add(
                    "inconsistent read",
                    f"{describe(w.kind, w.key, w.revision, w.value)} by {e.name} "
                    f"was built on revision {r}, the write of {index.name(j)}, "
                    "whose commit failed (a dirty update)",
                    [i, j],
                    [e.tid],
                    anomaly="dirty update",
                    # another writer may have written the same revision
                    foreign=True,
                )
