"""Check: the consistency check's result as the commands keep it (a scale
point's, verify's, zeoloop's, a history part's), made from the checker's
ConsistencyReport (ConsistencyReport.result) or, when the check could not
run, from why (not_checked).  Its JSON is the "invariants" of a scale
point, the "check" of a history part, the "consistency" of zeoloop's JSON.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from scenarios.results import schema
from vfab.codec import Json


@dataclasses.dataclass(frozen=True)
class Check(Json):
    """Whether the data was checked, the verdict (*ok*: True right, False
    a violation, None not fully checked), its words (*summary*, *what*,
    *problems*), violations by kind (*counts*), each violation, and what
    was looked at (*tally*: attempts, reads, ... by name).

    The fields after *tally* are the checker's since history format 2;
    None where the check did not say (one that did not run, or one of an
    older file), and left out of the JSON then, as those files have them.
    *violations* is None in a file of format 1 (only whether it held)."""

    checked: bool
    ok: bool | None
    summary: str
    what: str = ""
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    problems: tuple[str, ...] = ()
    #: each as {"kind", "text", "ops", "tids", "anomaly"}
    violations: tuple[dict[str, Any], ...] | None = None
    tally: dict[str, int] = dataclasses.field(default_factory=dict)
    #: seconds the check took through a client
    seconds: float | None = None
    #: the isolation level the history satisfies ("" where none was found)
    level: str | None = None
    ruled_out: tuple[str, ...] | None = None
    promise: str | None = None
    anomalies: dict[str, int] | None = None
    allowed: dict[str, int] | None = None
    not_checked: tuple[str, ...] | None = None
    unexplained: tuple[dict[str, Any], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        # "seconds" is null rather than absent in a check of the current
        # checker (one that states a level) made in-process.
        kept = {"ok", "seconds"} if self.level is not None else {"ok"}
        return {
            k: v for k, v in super().to_json().items() if v is not None or k in kept
        }

    def details(self) -> list[str]:
        """The lines under its summary: what was checked, then the first
        problems."""
        return ([self.what] if self.what else []) + list(self.problems)

    @property
    def found(self) -> int:
        """The violations it lists and counts (a right check has none)."""
        return len(self.violations or ()) + sum(self.counts.values())

    @property
    def why_not(self) -> tuple[str, ...]:
        """Why it is not fully checked: its reasons, else its summary."""
        return self.not_checked or (self.summary,)

    @classmethod
    def schema(cls) -> schema.Object:
        """The schema of its JSON; format 1 wrote checked, ok, summary,
        problems."""
        return schema.of(
            cls,
            required=("checked", "ok", "summary", "problems"),
            seconds=schema.Optional(schema.Seconds),
        )


def not_checked(reason: str) -> Check:
    """A check that did not run, saying why."""
    return Check(
        checked=False,
        ok=None,
        summary=f"consistency not checked: {reason}",
        violations=(),
        not_checked=(reason,),
    )
