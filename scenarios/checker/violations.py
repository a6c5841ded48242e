"""What the consistency check reports (scenarios.checker.consistency): the
kinds of violation, the Baseline a run starts from, a Violation, and the
ConsistencyReport with its words, and the Check the commands keep of it."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from scenarios.checker.check import Check
from scenarios.results.formatter import plural
from vfab import digests, operations
from vfab.codec import Derived
from vfab.model import VirtualFab, cents

#: The kinds of violation, worst first (the order reports list them).
KINDS = (
    "lost write",
    "lost record",
    "phantom write",
    "corrupt value",
    "index drift",
    "lost update",
    "inconsistent read",
    "dependency cycle",
    "stale read",
    "invalid data",
)

Register = tuple[str, Any]  # ("price", capability id) or ("stock", lab name)


@dataclasses.dataclass(frozen=True)
class Baseline:
    """What the registers and the sequences made by operations were before
    the run (read through a fresh client: Baseline.read), and where that
    read stood: the last transaction its view held (*tid*, 16 hex) and when
    it ended on the run's clock (*at*), where known."""

    #: (kind, key) -> (revision, value, digest)
    registers: dict[Register, tuple[int, int, str]]
    #: ids of sequences in the operations' id range
    sequences: frozenset[int]
    tid: str | None = None
    at: float | None = None

    @property
    def stock_total(self) -> int:
        return sum(
            v for (kind, _), (_, v, _) in self.registers.items() if kind == "stock"
        )

    @classmethod
    def read(
        cls, fab: VirtualFab, tid: str | None = None, at: float | None = None
    ) -> Baseline:
        registers: dict[Register, tuple[int, int, str]] = {}
        for cap in fab.library.capabilities.values():
            registers["price", cap.id] = (
                cap.price_revision,
                cents(cap.price),
                digests.capability(cap),
            )
        for lab in fab.catalogue.labs.values():
            registers["stock", lab.name] = (
                lab.stock_revision,
                lab.wafer_stock,
                digests.lab(lab),
            )
        ids = fab.sequences.keys(min=operations.FIRST_ORDER_ID)
        return cls(registers, frozenset(int(i) for i in ids), tid, at)


@dataclasses.dataclass(frozen=True)
class Violation(Derived):
    kind: str
    text: str
    #: the attempts involved, as client#n (operation)
    ops: tuple[str, ...] = ()
    #: the transaction ids involved (hex)
    tids: tuple[str, ...] = ()
    #: the anomaly it is (G1a, G-single, lost update, ...), where it has a name
    anomaly: str | None = None
    #: a writer the history does not hold (a lost client, another program)
    #: could have caused it: not counted when the history is incomplete
    foreign: bool = False

    JSON_SKIP: ClassVar[tuple[str, ...]] = ("foreign",)


@dataclasses.dataclass
class ConsistencyReport:
    """What check() looked at (*checked*: counts by name), every violation
    it found, the anomalies the storage is allowed to show that it showed
    (*allowed*, with examples in *notes*), the isolation level the history
    satisfies, and why it is not fully checked (*not_checked*; findings a
    missing history could explain are then *unexplained*, not violations)."""

    checked: dict[str, int] = dataclasses.field(default_factory=dict)
    violations: list[Violation] = dataclasses.field(default_factory=list)
    #: seconds the check took through a client (verify()), None in-process
    seconds: float | None = None
    allowed: dict[str, int] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    level: str = ""
    ruled_out: list[str] = dataclasses.field(default_factory=list)
    #: what the storage promises beyond snapshot isolation, in words
    promise: str = ""
    not_checked: list[str] = dataclasses.field(default_factory=list)
    unexplained: list[Violation] = dataclasses.field(default_factory=list)
    #: the storage's log was not read and could change the verdict
    #: (scenarios.checker.consistency reads it and judges again)
    needs_log: bool = False

    @property
    def ok(self) -> bool | None:
        """False: a violation; None: not fully checked; True: right."""
        if self.violations:
            return False
        return None if self.not_checked else True

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for v in self.violations:
            out[v.kind] += 1
        return out

    def anomalies(self) -> dict[str, int]:
        """Violations by anomaly name (those that have one)."""
        out: dict[str, int] = {}
        for v in self.violations:
            if v.anomaly:
                out[v.anomaly] = out.get(v.anomaly, 0) + 1
        return out

    def summary(self) -> str:
        """'consistency: N violations' and, when there are some, by kind;
        then why it is not fully checked."""
        n = len(self.violations)
        text = f"consistency: {n} violation{'s' * (n != 1)}"
        if n:
            kinds = ", ".join(f"{c} {k}" for k, c in self.counts().items() if c)
            text += f" ({kinds})"
        if self.not_checked:
            text += "; not fully checked: " + "; ".join(self.not_checked)
        return text

    def what(self) -> str:
        """What was checked, in words."""
        c = self.checked
        retried = c.get("retried", 0)
        text = (
            f"checked {c.get('attempts', 0)} attempts ({c.get('ok', 0)} ok, "
            f"{plural(retried, 'conflict')} retried, "
            f"{c.get('failed', 0) - retried} failed, "
            f"{c.get('unknown', 0)} unknown), "
            f"{c.get('reads', 0)} reads, {c.get('audits', 0)} stock audits; "
            f"{c.get('prices', 0)} prices, {c.get('labs', 0)} labs' stock, "
            f"{c.get('sequences', 0)} sequences made by operations, "
            f"{c.get('index_entries', 0)} index entries both ways; a "
            f"dependency graph of {c.get('nodes', 0)} transactions and "
            f"{c.get('edges', 0)} edges"
            + ("" if self.seconds is None else f", in {self.seconds:.1f} s")
        )
        if self.level:
            text += f"; the history is {self.level}"
        if self.allowed:
            shown = ", ".join(f"{n} {name}" for name, n in sorted(self.allowed.items()))
            text += f" (allowed here: {shown})"
        return text

    def lines(self, limit: int = 5) -> list[str]:
        """The first *limit* violations in words, and how many more; then
        the first examples of what was allowed or left unexplained."""
        out = [f"{v.kind}: {v.text}" for v in self.violations[:limit]]
        if len(self.violations) > limit:
            out.append(f"... and {len(self.violations) - limit} more (all in the JSON)")
        out += self.notes[:2]
        if self.unexplained:
            first = self.unexplained[0]
            out.append(
                f"not counted ({len(self.unexplained)}, a missing history could "
                f"explain them), first: {first.kind}: {first.text}"
            )
        return out

    def result(self) -> Check:
        """What the commands keep of it (scenarios.checker.check)."""
        return Check(
            checked=True,
            ok=self.ok,
            summary=self.summary(),
            what=self.what(),
            counts=self.counts(),
            problems=tuple(self.lines()),
            violations=tuple(v.to_json() for v in self.violations),
            tally=dict(self.checked),
            seconds=self.seconds,
            level=self.level,
            ruled_out=tuple(self.ruled_out),
            promise=self.promise,
            anomalies=self.anomalies(),
            allowed=dict(self.allowed),
            not_checked=tuple(self.not_checked),
            unexplained=tuple(v.to_json() for v in self.unexplained),
        )

    def to_json(self) -> dict[str, Any]:
        return self.result().to_json()
