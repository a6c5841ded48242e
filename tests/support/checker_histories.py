"""Histories written by hand for the checker's tests: a transaction T
over registers x, y, z, w (prices), the baseline before it, what a
correct storage holds after it, and judge() called on them.
"""

from __future__ import annotations

import dataclasses

from scenarios.checker.judge import judge
from scenarios.checker.readback import FinalRead, Stored
from scenarios.checker.violations import Baseline, ConsistencyReport
from scenarios.load.clock import Clock
from scenarios.load.history import Access, Event, Session

#: The state before the run: registers x, y, z, w at revision 0, value 0,
#: read at transaction 0x05 (its snapshot) at time 0.
BASE_TID = 0x05
NAMES = {"x": 1, "y": 2, "z": 3, "w": 4}


def tid(n: int) -> str:
    return f"{n:016x}"


@dataclasses.dataclass
class T:
    """A transaction written by hand: client, attempt number, reads and
    writes as (register, revision) (value and digest follow from them),
    outcome, times, snapshot and committed tid."""

    client: str
    n: int = 1
    reads: tuple[tuple[str, int], ...] = ()
    writes: tuple[tuple[str, int], ...] = ()
    outcome: str = "ok"
    start: float = 0.0
    end: float = 1.0
    #: None: the history carries no snapshot (the format allows it)
    snapshot: int | None = BASE_TID
    tid: int | None = None
    #: registers read with readCurrent
    current: tuple[str, ...] = ()

    def event(self) -> Event:
        def access(name: str, rev: int, current: bool = False) -> Access:
            return Access(
                "price", NAMES[name], rev, value(name, rev), digest(name, rev), current
            )

        return Event(
            self.client,
            self.n,
            "op",
            self.outcome,
            None if self.outcome == "ok" else "ConflictError",
            tid(self.tid) if self.tid is not None and self.outcome == "ok" else None,
            tuple(access(r, v, r in self.current) for r, v in self.reads),
            tuple(access(r, v) for r, v in self.writes),
            self.start,
            self.end,
            None if self.snapshot is None else tid(self.snapshot),
        )


def value(name: str, rev: int) -> int:
    return 1000 * NAMES[name] + rev


def digest(name: str, rev: int) -> str:
    return f"{name}{rev}"


def baseline() -> Baseline:
    registers = {("price", k): (0, value(n, 0), digest(n, 0)) for n, k in NAMES.items()}
    return Baseline(registers, frozenset(), tid(BASE_TID), 0.0)


def final(txns: list[T], stored: dict[str, tuple[int, int]] | None = None) -> FinalRead:
    """What a correct storage would hold after *txns* (the highest
    revision an ok transaction wrote), or *stored*: register -> (revision,
    the tid that stored it)."""
    out = FinalRead(snapshot=tid(0xFF))
    state = {n: (0, BASE_TID) for n in NAMES}
    for t in txns:
        if t.outcome != "ok":
            continue
        for name, rev in t.writes:
            if rev > state[name][0]:
                state[name] = (rev, t.tid or 0)
    state.update(stored or {})
    for name, (rev, by) in state.items():
        out.registers["price", NAMES[name]] = Stored(
            rev, value(name, rev), digest(name, rev), tid(by)
        )
    return out


def check(
    txns: list[T],
    realtime: bool = True,
    final_read: FinalRead | None = None,
    lost: dict[str, str] | None = None,
) -> ConsistencyReport:
    clients = {t.client for t in txns}
    why = "a test storage" + ("" if realtime else " without real-time order")
    sessions = {
        c: Session(c, Clock(0.0, 0.0, "h"), "Test", realtime, why, "r") for c in clients
    }
    return judge(
        [t.event() for t in txns],
        baseline(),
        final_read or final(txns),
        sessions,
        lost,
    )


def cycles(report: ConsistencyReport) -> list[str]:
    return [v.text for v in report.violations if v.kind == "dependency cycle"]


def only(report: ConsistencyReport) -> dict[str, int]:
    """Violations by anomaly (or kind, where they have none)."""
    out: dict[str, int] = {}
    for v in report.violations:
        key = v.anomaly or v.kind
        out[key] = out.get(key, 0) + 1
    return out
