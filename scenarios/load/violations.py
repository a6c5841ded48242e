"""What the consistency check reports (scenarios.load.consistency): the
kinds of violation, the Baseline a run starts from, a Violation, and the
ConsistencyReport with its words and JSON."""

from __future__ import annotations

import dataclasses
from typing import Any

from vfab import operations
from vfab.model import VirtualFab, cents

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
