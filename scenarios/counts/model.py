"""A count run's results: the raw counts of every counted trial per phase and
storage (CountSample), never a summary alone; a cell is their median with
its spread, exact or not (what is exact: docs/counts.md,
docs/internals.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from scenarios.counts.syscalls import TIMING_GROUPS
from scenarios.results import schema
from scenarios.results.files import COUNTS, ResultsError
from scenarios.results.model import PhaseRows, SampleCell, TrialSummary
from vfab.codec import Json

#: The two sides a cell can count: the client process and the servers.
SIDES = ("client", "server")

#: What a cell can count: instructions, or a group of system calls
#: (scenarios.counts.syscalls.GROUPS).
INSTRUCTIONS = "instructions"

#: The spread assumed for a cell that cannot be exact, whatever its trials
#: showed: ZEO's commit rows moved 2-8% run to run (client and server), and
#: +8.7% (the client's commit users/groups) in a release under a CPU hog
#: against one without (docs/counts.md): the client's event loop turns
#: more often while it waits.
NOT_EXACT_FLOOR = 0.15


@dataclasses.dataclass(frozen=True)
class CountSample(Json):
    """One counted phase of one trial."""

    instructions: int
    server_instructions: int | None = None
    #: {group: calls} of the client process (scenarios.counts.syscalls).
    syscalls: dict[str, int] | None = None
    server_syscalls: dict[str, int] | None = None
    #: The start-up layout it was counted under (0: the process as it
    #: starts; scenarios.counts.fixed.shift_layout).
    layout: int = 0

    def value(self, side: str, what: str) -> int | None:
        """Instructions or one group of system calls, of one side."""
        if what == INSTRUCTIONS:
            return self.instructions if side == "client" else self.server_instructions
        calls = self.syscalls if side == "client" else self.server_syscalls
        return None if calls is None else calls.get(what)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One storage's count in one row: the median of its trials, their
    spread, and whether it may differ run to run (not exact)."""

    value: int
    spread: float
    exact: bool
    trials: int

    def tolerance(self, exact_threshold: float) -> float:
        """The relative change this cell may show between two runs of the
        same code: *exact_threshold* where exact, else its trials' spread
        and NOT_EXACT_FLOOR at least."""
        if self.exact:
            return exact_threshold
        return max(self.spread, NOT_EXACT_FLOOR)


@dataclasses.dataclass(frozen=True)
class CountResult(SampleCell[CountSample]):
    """All counted trials of one phase on one storage at one size."""

    samples: tuple[CountSample, ...]

    def cell(self, side: str, what: str, exact_here: bool = True) -> Cell | None:
        """The cell, or None when nothing was counted.  *exact_here*: whether
        the storage's client can count exactly (no server of its own)."""
        values = sorted(self.values(lambda s: s.value(side, what)))
        if not values:
            return None
        value = values[(len(values) - 1) // 2]
        spread = (values[-1] - values[0]) / value if value else float(values[-1] > 0)
        if what == INSTRUCTIONS:
            exact = exact_here and side == "client"
        else:
            exact = what not in TIMING_GROUPS
        return Cell(value, spread, exact, len(values))


@dataclasses.dataclass(frozen=True)
class CountRun(schema.Stored, PhaseRows[CountResult]):
    """One `run --counts`: metadata, every phase's counts, the trials."""

    FORMAT = COUNTS
    WHAT = "count file"

    metadata: dict[str, Any]
    results: tuple[CountResult, ...]
    trials: tuple[TrialSummary, ...] = ()

    def has_server(self, storage: str) -> bool:
        """Whether *storage* talks to a server (metadata "counts" "served"),
        or its counts include a server's."""
        if storage in self.metadata.get("counts", {}).get("served", ()):
            return True
        return any(
            s.server_instructions is not None or s.server_syscalls is not None
            for r in self.results
            if r.storage == storage
            for s in r.samples
        )

    def cell(
        self, storage: str, phase: str, side: str, what: str, size: str | None = None
    ) -> Cell | None:
        r = self.get(storage, phase, size)
        if r is None:
            return None
        return r.cell(side, what, exact_here=not self.has_server(storage))

    @classmethod
    def from_json(cls, data: Any) -> CountRun:
        """The file's run, refused (ResultsError) where one cell is listed
        twice: which copy counts cannot be told."""
        run = super().from_json(data)
        seen: set[tuple[str, str, str]] = set()
        for r in run.results:
            key = (r.storage, r.size, r.phase)
            if key in seen:
                raise ResultsError(
                    f"malformed {cls.WHAT}: {r.storage} {r.phase} [{r.size}] is "
                    "listed twice"
                )
            seen.add(key)
        counts = run.metadata.get("counts")
        served = counts.get("served", []) if isinstance(counts, dict) else []
        if not isinstance(served, list) or not all(isinstance(n, str) for n in served):
            raise ResultsError(
                f"malformed {cls.WHAT}: metadata.counts.served: not a list of names"
            )
        return run

    @classmethod
    def schema(cls) -> schema.Object:
        return schema.of(
            cls,
            required=("results",),
            metadata=schema.metadata(schema.CONFIG),
            results=schema.ListOf(
                schema.of(
                    CountResult, samples=schema.ListOf(schema.of(CountSample, True), 1)
                )
            ),
            trials=schema.ListOf(schema.of(TrialSummary, True)),
        )
