"""The history indexed for the checker: the settled attempts, who wrote
which version of every register, what each read saw, the attempts'
places in real time and in the storage's commit order, and which of them
committed (scenarios.checker.judge builds one, the rules and the graph read
it).

A version of a register is its revision: every write of the operations
builds revision r + 1 on the revision r it read, so the revisions give
each register's version order, which is what a dependency graph needs.
A sequence is a register with one version (revision 1).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

from scenarios.checker.violations import Baseline
from scenarios.load.history import Access, Event, Session, settle
from vfab.operations import FIRST_ORDER_ID

Register = tuple[str, Any]

#: The attempt that stands for the state before the run (the baseline).
INITIAL = -1


@dataclasses.dataclass(frozen=True)
class Source:
    """What a read saw.  kind: "initial" (the version before the run),
    "written" (*writers* committed it), "intermediate" (their write, but
    not their last of that register), "failed" (only failed attempts wrote
    it), "corrupt" (*writers* wrote that revision and value, but other
    fields), "nobody" (no attempt of the run wrote it)."""

    kind: str
    writers: tuple[int, ...] = ()


def agrees(a: Access, b: Access) -> bool:
    """Two accesses of one register's revision agree on what it holds:
    the same value (a read without one agrees) and digest (where both
    have one)."""
    if a.value is not None and b.value is not None and a.value != b.value:
        return False
    return not (a.digest and b.digest and a.digest != b.digest)


def tid_int(tid: str | None) -> int | None:
    return None if not tid else int(tid, 16)


class Places(NamedTuple):
    """Index.places(): one entry per attempt asked about."""

    start: list[float | None]
    end: list[float | None]
    tid: list[int | None]
    snapshot: list[int | None]
    writer: list[bool]


class Index:
    """*events* settled and indexed; *sessions*: each client's Session
    record (its clock; absent clients are on the coordinator's)."""

    def __init__(
        self,
        events: Iterable[Event],
        baseline: Baseline,
        sessions: dict[str, Session] | None = None,
    ) -> None:
        self.attempts: list[Event] = sorted(
            settle(events), key=lambda e: (e.client, e.n)
        )
        self.baseline = baseline
        self.sessions = sessions or {}
        self.offsets = {c: s.clock.offset_s for c, s in self.sessions.items()}
        #: two times are ordered only when further apart than both clocks'
        #: uncertainties
        self.margin = 2 * max(
            (s.clock.uncertainty_s for s in self.sessions.values()), default=0.0
        )
        #: register -> revision -> [(attempt, its write)]
        self.writes: dict[Register, dict[int, list[tuple[int, Access]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        #: (attempt, register) of writes that are not the attempt's last of
        #: that register (an intermediate version)
        self.intermediate: set[tuple[int, int, Register]] = set()
        self.by_client: dict[str, list[int]] = defaultdict(list)
        #: transaction id -> the ok attempts acknowledged with it
        self.by_tid: dict[str, list[int]] = defaultdict(list)
        #: tids the log gave attempts whose outcome was unknown
        self.log_tids: dict[int, str] = {}
        writes, by_client, by_tid = self.writes, self.by_client, self.by_tid
        for i, e in enumerate(self.attempts):
            by_client[e.client].append(i)
            if e.outcome == "ok" and e.tid:
                by_tid[e.tid].append(i)
            if not e.writes:
                continue
            for w in e.writes:
                writes[w.kind, w.key][w.revision].append((i, w))
            if len(e.writes) == 1:
                continue  # its one write is its last
            last: dict[Register, int] = {}
            for w in e.writes:
                register = (w.kind, w.key)
                last[register] = max(last.get(register, w.revision), w.revision)
            for w in e.writes:
                register = (w.kind, w.key)
                if w.revision < last[register]:
                    self.intermediate.add((i, w.revision, register))
        #: read -> what it saw (source())
        self._sources: dict[Access, Source] = {}
        #: attempts that committed: ok ones, and unknown ones whose writes
        #: were seen (observe())
        self.committed: set[int] = {
            i for i, e in enumerate(self.attempts) if e.outcome == "ok"
        }

    # -- time and order -------------------------------------------------

    def start(self, i: int) -> float | None:
        if i == INITIAL:
            return None
        e = self.attempts[i]
        return None if e.start is None else e.start + self.offsets.get(e.client, 0.0)

    def end(self, i: int) -> float | None:
        """When attempt *i* ended (its commit acknowledged), on the
        coordinator's clock; None for one whose outcome was unknown."""
        if i == INITIAL:
            return self.baseline.at
        e = self.attempts[i]
        if e.end is None or e.outcome != "ok":
            return None
        return e.end + self.offsets.get(e.client, 0.0)

    def tid(self, i: int) -> str | None:
        """The transaction that committed attempt *i* (the baseline's view
        for INITIAL); None for a read-only or unresolved one."""
        if i == INITIAL:
            return self.baseline.tid
        e = self.attempts[i]
        if e.outcome == "ok" and e.writes:
            return e.tid
        return self.log_tids.get(i)

    def writes_anything(self, i: int) -> bool:
        return i == INITIAL or bool(self.attempts[i].writes)

    def places(self, attempts: Iterable[int]) -> Places:
        """start(), end(), tid() and the snapshot (both as numbers) and
        writes_anything() of each of *attempts*: the same, in one pass
        (the graph asks them of every committed attempt)."""
        places = Places([], [], [], [], [])
        offsets, log_tids, events = self.offsets, self.log_tids, self.attempts
        for i in attempts:
            if i == INITIAL:
                places.start.append(None)
                places.end.append(self.end(i))
                places.tid.append(tid_int(self.tid(i)))
                places.snapshot.append(None)
                places.writer.append(True)
                continue
            e = events[i]
            offset = offsets.get(e.client, 0.0)
            ok = e.outcome == "ok"
            places.start.append(None if e.start is None else e.start + offset)
            places.end.append(e.end + offset if ok and e.end is not None else None)
            places.tid.append(tid_int(e.tid if ok and e.writes else log_tids.get(i)))
            places.snapshot.append(tid_int(e.snapshot))
            places.writer.append(bool(e.writes))
        return places

    # -- what reads saw ---------------------------------------------------

    def source(self, read: Access) -> Source:
        """What *read* saw (see Source).  Worked out once per distinct
        read (the rules and the graph both ask, and many reads are alike):
        it depends on the writes indexed and their outcomes, which do not
        change once the index is built (observe() changes only what
        committed)."""
        known = self._sources.get(read)
        if known is None:
            known = self._sources[read] = self._source(read)
        return known

    def _source(self, read: Access) -> Source:
        register = (read.kind, read.key)
        if read.kind == "sequence":
            if read.key in self.baseline.sequences or read.key < FIRST_ORDER_ID:
                return Source("initial")  # made before the run
        else:
            base = self.baseline.registers.get(register)
            if base is not None and read.revision == base[0]:
                if agrees(read, Access(read.kind, read.key, base[0], base[1], base[2])):
                    return Source("initial")
                return Source("corrupt", (INITIAL,))
        writers = self.writes.get(register, {}).get(read.revision, [])
        same = [i for i, w in writers if agrees(w, read)]
        done = tuple(i for i in same if self.attempts[i].outcome != "failed")
        if done:
            if all((i, read.revision, register) in self.intermediate for i in done):
                return Source("intermediate", done)
            return Source("written", done)
        if same:
            return Source("failed", tuple(same))
        corrupt = tuple(
            i
            for i, w in writers
            if self.attempts[i].outcome != "failed"
            and (read.value is None or w.value == read.value)
        )
        if corrupt:
            return Source("corrupt", corrupt)
        return Source("nobody")

    def observe(self, writers: Iterable[int]) -> None:
        """Writers whose write was seen committed (a read saw it, it is
        stored, the log holds it): an unknown outcome becomes committed."""
        for i in writers:
            if i != INITIAL and self.attempts[i].outcome == "unknown":
                self.committed.add(i)

    def name(self, i: int) -> str:
        return "the state before the run" if i == INITIAL else self.attempts[i].name
