"""Two count files cell by cell: no statistics, a tolerance per cell (2% for
exact cells, the trials' spread and a floor for the others), the ratio on
every line; also the micro-benchmarks counted under pytest
(docs/internals.md).
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Any

from scenarios.counts.coverage import (
    judged_apart,
    one_side_only,
    storage_of_column,
    unknown_groups,
)
from scenarios.counts.model import INSTRUCTIONS, Cell, CountRun
from scenarios.counts.report import millions
from scenarios.counts.syscalls import GROUPS, TIMING_GROUPS
from scenarios.results.compare import Change, Comparison, check_same, paired
from scenarios.results.files import ResultsError
from scenarios.results.formatter import plural
from scenarios.results.metadata import differences
from scenarios.results.table import wrapped

#: The relative change an exact cell must show to differ, by default (the
#: gate's --fail-above).
EXACT_THRESHOLD = 0.02

#: The relative change the process's layout alone gives an exact cell,
#: whatever the threshold: the same code counted under six start-up
#: layouts spread its cells by up to 1.9% (docs/counts.md, measured with
#: tools/count_layouts.py); a cell must move by more to differ.
LAYOUT_FLOOR = 0.03

#: The instructions an exact phase cell may move by, whatever its ratio:
#: an empty commit (about 4,000 instructions) moved by 9% between layouts,
#: and 10,000 instructions is about a microsecond.
EXACT_MIN_CHANGE = 10_000

#: The instructions a cell that is not exact may move by, whatever its
#: spread: a ZEO client's pack row (about 0.2 M instructions, the client
#: waits for the server) moved 11% between two runs of the same code.
NOT_EXACT_MIN_CHANGE = 100_000


def exact_tolerance(threshold: float = EXACT_THRESHOLD, *cells: Cell) -> float:
    """The relative change an exact cell must exceed to differ: *threshold*,
    the layouts' floor, and the spread the *cells* themselves showed over
    their trials and layouts."""
    return max(threshold, LAYOUT_FLOOR, *(c.spread for c in cells))


def count_text(n: int, what: str = INSTRUCTIONS, scale: int | None = None) -> str:
    """A count as a line shows it: millions with three decimals where the
    cell (*scale*: the larger of the two compared, else *n*) is a million or
    more, every digit below that ("2,431"), calls as a plain number."""
    if what != INSTRUCTIONS:
        return str(n)
    return millions(n) if (scale if scale is not None else n) >= 1_000_000 else f"{n:,}"


@dataclasses.dataclass(frozen=True)
class CountDifference(Change):
    """One cell (*what* of *row* in *column*) of OLD against the same cell
    of NEW."""

    what: str
    old: Cell
    new: Cell
    tolerance: float
    #: The absolute change below which the cell never differs (a cell that
    #: is not exact: NOT_EXACT_MIN_CHANGE instructions).
    floor: int = 0

    JSON_SKIP = ("floor",)
    JSON_EXTRA = ("change", "exact", "differs", "verdict")
    JSON_AS = {"old": attrgetter("value"), "new": attrgetter("value")}

    @property
    def timing(self) -> bool:
        """A count that depends on timing (receives): shown, never gated."""
        return self.what in TIMING_GROUPS

    @property
    def exact(self) -> bool:
        return self.old.exact and self.new.exact

    @property
    def change(self) -> float | None:
        """new / old - 1, or None when old is 0 (and new is not)."""
        if self.old.value == 0:
            return 0.0 if self.new.value == 0 else None
        return self.new.value / self.old.value - 1

    @property
    def differs(self) -> bool:
        if self.timing or abs(self.new.value - self.old.value) <= self.floor:
            return False
        change = self.change
        return change is None or abs(change) > self.tolerance

    changed = differs

    def above(self, threshold: float) -> bool:
        """Grew by more than *threshold* and than its tolerance."""
        if not self.differs:
            return False
        change = self.change
        return change is None or change > threshold

    @property
    def gate_name(self) -> str:
        """The cell as a gate's one line names it, short (the view has the
        whole line): "file commit processes: +10.0%", calls named."""
        change = "new" if self.change is None else f"{self.change:+.1%}"
        calls = "" if self.what == INSTRUCTIONS else f" ({self.what})"
        return f"{self.column} {self.row}: {change}{calls}"

    def fmt(self, n: int) -> str:
        return count_text(n, self.what, max(self.old.value, self.new.value))

    def values(self) -> tuple[str, str]:
        return self.fmt(self.old.value), self.fmt(self.new.value)

    @property
    def verdict(self) -> str:
        change = self.change
        if change is None:
            return f"new (was 0, now {self.fmt(self.new.value)})"
        ratio = self.new.value / self.old.value if self.old.value else 1.0
        if change == 0:
            return "no change (1.00x)"
        if self.timing:
            return f"depends on timing, not compared ({ratio:.2f}x)"
        if not self.differs:
            return f"no change ({ratio:.2f}x, within ±{self.tolerance * 100:.1f}%)"
        if ratio >= 1:
            words = f"{ratio:.2f}x more"
        else:
            words = f"{1 / ratio:.2f}x fewer" if ratio > 0 else "none left"
        return f"{words} ({change * 100:+.1f}%)"

    @property
    def prefix(self) -> str:
        return "" if self.what == INSTRUCTIONS else f"{self.what} calls "

    @property
    def label(self) -> str:
        """The task, calls named after it."""
        return self.row + ("" if self.what == INSTRUCTIONS else f" ({self.what} calls)")


#: How many cells the line of biggest changes names.
NAMED_FIRST = 8


def change_size(c: CountDifference) -> float:
    """How much a cell moved, as a ratio either way (2.0: doubled or
    halved); a cell that was 0, infinite."""
    if c.old.value == 0:
        return float("inf") if c.new.value else 1.0
    if c.new.value == 0:
        return float("inf")
    ratio = c.new.value / c.old.value
    return max(ratio, 1 / ratio)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CountComparison(Comparison):
    """Every cell both count files have (the micro-benchmarks' too), by a
    tolerance each: no statistics."""

    cells: tuple[CountDifference, ...]
    trials: tuple[int, int]
    exact_threshold: float
    kind: str = "counts"
    #: What both files hold that was not compared, and why (beside the
    #: cells one file only has): a storage each side judges otherwise, a
    #: call group no version of the suite counts.
    not_compared: tuple[str, ...] = ()

    JSON_SKIP = ("warnings", "trials")
    JSON_EXTRA = ("summary", "unchecked")

    @property
    def unchecked(self) -> list[str]:
        """What the gate could not compare: empty when it compared all that
        both files hold."""
        one_side = [f"{u}: in one file only" for u in self.unmatched]
        return [*self.not_compared, *one_side]

    def biggest(self, cells: list[CountDifference]) -> list[CountDifference]:
        """*cells* by the size of their change, biggest first (a cell that
        was 0 first of all)."""
        return sorted(cells, key=change_size, reverse=True)

    def first(self) -> list[str]:
        """The cells that moved, biggest change first, then the warnings."""
        moved = self.biggest([c for c in self.differing() if not c.timing])
        out = []
        if moved:
            out.append(
                "Biggest changes first: "
                + "; ".join(c.gate_name for c in moved[:NAMED_FIRST])
                + (
                    f"; and {len(moved) - NAMED_FIRST} more"
                    if len(moved) > NAMED_FIRST
                    else ""
                )
            )
        return [*out, *self.warnings]

    def notes(self) -> list[str]:
        out = super().notes()
        if self.not_compared:
            out.append("Not compared: " + "; ".join(self.not_compared) + ".")
        return out

    def differing(self) -> list[CountDifference]:
        return [c for c in self.cells if c.differs]

    def fewer(self) -> list[CountDifference]:
        """Cells that fell by more than their tolerance (improvements)."""
        return [c for c in self.differing() if c.change is not None and c.change < 0]

    def above(self, threshold: float) -> list[CountDifference]:
        return [c for c in self.cells if c.above(threshold)]

    def heading(self) -> str:
        a, b = self.trials
        # The micro-benchmarks' cells have no floor of instructions.
        floor = any(c.floor for c in self.cells)
        return (
            f"{self.title}: instructions and I/O system calls per cell, counted "
            f"(counted trials: {a} -> {b}); a cell differs when it moved by more "
            f"than {max(self.exact_threshold, LAYOUT_FLOOR):.0%}"
            + (f" and {EXACT_MIN_CHANGE:,} instructions" if floor else "")
            + " where exact (what the process's layout alone moves), by more "
            "than its spread where not (≈)"
        )

    def summary(self) -> str:
        """The numbers the release verdict gives too: cells that depend on
        timing (receives) are shown, not counted among the compared."""
        gated = [c for c in self.cells if not c.timing]
        n = len(gated)
        diff = self.differing()
        more = [c for c in diff if (c.change is None or c.change > 0)]
        line = (
            f"Summary: {n} cells compared; {len(more)} more, "
            f"{len(diff) - len(more)} fewer, {n - len(diff)} no change"
        )
        if len(gated) < len(self.cells):
            timing = len(self.cells) - len(gated)
            line += f" ({plural(timing, 'cell')} that depend on timing not compared)"
        if more:
            worst = max(
                more, key=lambda c: float("inf") if c.change is None else c.change
            )
            line += f"; most: {worst.column} {worst.row}, {worst.line}"
        if self.unchecked:
            line += (
                f"; NOT FULLY CHECKED: {plural(len(self.unchecked), 'thing')} "
                "both files hold not compared (above)"
            )
        return line + "."

    def summary_text(self) -> str:
        return wrapped(self.summary())

    def shown(self, changed: bool = False) -> list[Change]:
        """Per column, its instruction cells, then its calls that differ."""
        calls = [c for c in self.cells if c.what != INSTRUCTIONS and c.differs]
        return [*(c for c in self.cells if c.what == INSTRUCTIONS), *calls]


def _identity(run: CountRun) -> dict[str, Any]:
    config = run.metadata.get("config", {})
    return {
        "size": sorted(run.sizes),
        "scale": config.get("scale"),
        "seed": config.get("seed"),
        "rows": config.get("rows"),
    }


def method(run: CountRun) -> str:
    """How *run* was counted (scenarios.counts.runner.METHOD); "unsettled"
    for files written before the method was recorded."""
    counts = run.metadata.get("counts")
    value = counts.get("method") if isinstance(counts, dict) else None
    return value if isinstance(value, str) else "unsettled"


def cells(run: CountRun) -> dict[tuple[str, str, str], Cell]:
    """(column, row, what) -> cell, for every side and everything counted."""
    several = len(run.sizes) > 1
    out: dict[tuple[str, str, str], Cell] = {}
    for r in run.results:
        row = r.row(several)
        for side in ("client", "server"):
            column = r.storage if side == "client" else f"{r.storage} (server)"
            for what in (INSTRUCTIONS, *GROUPS):
                cell = run.cell(r.storage, r.phase, side, what, r.size)
                if cell is not None:
                    out[(column, row, what)] = cell
    return out


def compare_counts(
    old: CountRun,
    new: CountRun,
    old_name: str = "OLD",
    new_name: str = "NEW",
    exact_threshold: float = EXACT_THRESHOLD,
) -> CountComparison:
    check_same(
        _identity(old),
        _identity(new),
        old_name,
        new_name,
        "they counted different work",
    )
    check_same(
        {"method": method(old)},
        {"method": method(new)},
        old_name,
        new_name,
        "they were counted by different versions of the method "
        "(docs/counts.md#the-method): count both with this version",
    )
    apart = judged_apart(old, new, old_name, new_name)
    ca, cb = (
        {k: c for k, c in cells(run).items() if storage_of_column(k[0]) not in apart}
        for run in (old, new)
    )
    out = []
    for (column, row, what), cell, other in paired(ca, cb, old_name, new_name, "cell"):
        exact = cell.exact and other.exact
        if exact and what == INSTRUCTIONS:
            tolerance = exact_tolerance(exact_threshold, cell, other)
            floor = EXACT_MIN_CHANGE
        elif exact:  # system calls: every call counts
            tolerance, floor = exact_threshold, 0
        else:
            tolerance = max(
                cell.tolerance(exact_threshold), other.tolerance(exact_threshold)
            )
            floor = NOT_EXACT_MIN_CHANGE if what == INSTRUCTIONS else 0
        out.append(CountDifference(column, row, what, cell, other, tolerance, floor))
    unmatched = one_side_only(ca.keys(), cb.keys())
    not_compared = (
        *apart.values(),
        *unknown_groups(old, old_name),
        *unknown_groups(new, new_name),
    )
    trials = (
        max((c.trials for c in ca.values()), default=0),
        max((c.trials for c in cb.values()), default=0),
    )
    return CountComparison(
        title=f"{old_name} -> {new_name}",
        trials=trials,
        cells=tuple(out),
        exact_threshold=exact_threshold,
        unmatched=tuple(unmatched),
        not_compared=not_compared,
        causes=tuple(differences(old.metadata, new.metadata)),
    )


def benchmark_cells(data: Any, name: str) -> dict[tuple[str, str], Cell]:
    """(storage, benchmark) -> its instructions, from pytest-benchmark's JSON
    of a count run (pytest_counts); ResultsError naming *name* when it holds
    none or a malformed one."""
    out: dict[tuple[str, str], Cell] = {}
    try:
        for b in data["benchmarks"]:
            value = b.get("extra_info", {}).get("instructions")
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"instructions {value!r}")
            test = str(b["name"]).split("[", 1)[0].removeprefix("test_")
            storage = str((b.get("params") or {}).get("storage", "no storage"))
            rounds = b["extra_info"].get("instructions_rounds") or [value]
            spread = (max(rounds) - min(rounds)) / value if value else 0.0
            if (storage, test) in out:
                # Which copy counts cannot be told (a count file's cell
                # listed twice is refused alike: CountRun.from_json).
                raise ValueError(f"{test} [{storage}] is listed twice")
            # The fewest of the calls: exact, as a client's instructions.
            out[(storage, test)] = Cell(value, spread, True, len(rounds))
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise ResultsError(f"{name}: malformed micro-benchmark counts: {e}") from None
    if not out:
        raise ResultsError(f"{name}: no benchmark holds instructions")
    return out


def compare_benchmarks(
    old: dict[tuple[str, str], Cell],
    new: dict[tuple[str, str], Cell],
    old_name: str = "OLD",
    new_name: str = "NEW",
    exact_threshold: float = EXACT_THRESHOLD,
) -> CountComparison:
    """Two micro-benchmark count sets, benchmark by benchmark (the fewest
    instructions of any call: exact within a few instructions in millions)."""
    out = [
        CountDifference(
            s, t, INSTRUCTIONS, a, b, exact_tolerance(exact_threshold, a, b)
        )
        for (s, t), a, b in paired(old, new, old_name, new_name, "benchmark")
    ]
    unmatched = sorted(f"{s} {t}" for s, t in old.keys() ^ new.keys())
    return CountComparison(
        title=f"{old_name} -> {new_name} (micro-benchmarks)",
        trials=(1, 1),
        cells=tuple(out),
        exact_threshold=exact_threshold,
        unmatched=tuple(unmatched),
    )
