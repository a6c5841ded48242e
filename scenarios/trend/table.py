"""A trend across saved runs: each cell's values over run files put in
order by the versions they recorded, with the steps marked as asv marks
them.  A step is compare's cell between two neighbours (the same test, the same
adjustment over the pair's cells, the same words): a change it calls
significant is marked, one it calls inconclusive is "undecided", never
"no change" (docs/internals.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scenarios.results import environment, power, significance
from scenarios.results.compare import check_same
from scenarios.results.compare_runs import CellComparison
from scenarios.results.files import ResultsError
from scenarios.results.formatter import duration as format_time
from scenarios.results.formatter import plural
from scenarios.results.kinds import sniff
from scenarios.results.significance import Difference, Statistic
from scenarios.results.table import Table, paragraph, wrapped
from scenarios.trend.runs import (
    BY_DATE,
    BY_PYTHON,
    DEFAULT_BY,
    Point,
    Read,
    order,
    read_runs,
    recorded_version,
)

__all__ = [
    "BY_DATE",
    "BY_PYTHON",
    "DEFAULT_BY",
    "Point",
    "Step",
    "Trend",
    "build",
    "read_runs",
    "recorded_version",
]

#: (storage, row)
Cell = tuple[str, str]

#: Marks after a value: a significant slowdown or speed-up from the previous
#: run, a change the samples cannot decide, no mark.
SLOWER, FASTER, UNDECIDED, SAME = "▲", "▼", "?", " "
#: A space textwrap does not break at (a character no path or label holds).
_KEEP = "\x00"
#: A cell a run does not have.
MISSING = "-"
#: The marks in words, for JSON.
MARK_WORDS = {SLOWER: "slower", FASTER: "faster", UNDECIDED: "undecided",
              SAME: "same"}  # fmt: skip


@dataclasses.dataclass(frozen=True, kw_only=True)
class Step(CellComparison):
    """One cell's change from run *before* to run *after* (indexes of
    Trend.points): compare's cell (its Difference adjusted with the
    pair's other cells, its verdict), marked."""

    before: int
    after: int

    @property
    def cell(self) -> Cell:
        return self.column, self.row

    @property
    def mark(self) -> str:
        if self.difference.slower:
            return SLOWER
        if self.difference.faster:
            return FASTER
        return UNDECIDED if self.inconclusive else SAME


@dataclasses.dataclass(frozen=True)
class Trend:
    by: str
    statistic: Statistic
    metric: str
    points: tuple[Point, ...]
    storages: tuple[str, ...]
    rows: tuple[str, ...]
    #: cell -> {point index: raw samples}
    samples: dict[Cell, dict[int, tuple[float, ...]]]
    #: cell -> {index of the later run: the step into it}
    steps: dict[Cell, dict[int, Step]]
    #: Files of another kind found in a directory, and left out.
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def estimate(self, cell: Cell, i: int) -> float | None:
        values = self.samples.get(cell, {}).get(i)
        return None if values is None else self.statistic(values)

    def interval(self, cell: Cell, i: int) -> significance.Interval | None:
        values = self.samples.get(cell, {}).get(i)
        return None if values is None else significance.interval(values, self.statistic)

    def step(self, cell: Cell, i: int) -> Step | None:
        return self.steps.get(cell, {}).get(i)

    def marked(self) -> list[Step]:
        """The steps: significant changes, in cell then run order."""
        return [
            s
            for cell in self.cells()
            for s in self.steps.get(cell, {}).values()
            if s.difference.significant
        ]

    def undecided(self) -> list[Step]:
        return [
            s
            for cell in self.cells()
            for s in self.steps.get(cell, {}).values()
            if s.mark == UNDECIDED
        ]

    def trials_needed(self) -> str:
        """How many trials a side the undecided changes needed: "at least
        N" (compare's power module, over the largest pair of runs)."""
        cells = max((s.cells for s in self.undecided()), default=1)
        needed = power.trials_needed(self.statistic, cells)
        if needed is None:
            return f"more than {power.MOST_TRIALS}"
        return f"at least {needed}"

    def cells(self) -> list[Cell]:
        return [
            (s, r) for r in self.rows for s in self.storages if (s, r) in self.samples
        ]

    def ordered_by(self) -> str:
        if self.by == BY_DATE:
            return "date"
        return f"{self.by} version"

    def heading(self) -> str:
        return (
            f"Trend of {len(self.points)} runs, ordered by {self.ordered_by()}"
            f"{'' if self.by == BY_DATE else ', then date'}: "
            f"{self.metric} time, {self.statistic.label} of the trials.  A step "
            f"({SLOWER} slower, {FASTER} faster) is a change from the previous run "
            f"that compare calls significant (permutation test of the "
            f"{self.statistic.label}, false discovery rate {significance.ALPHA} "
            f"over the cells of each pair); {UNDECIDED}: too few trials to decide; "
            f"{MISSING}: not in that run."
        )

    def step_line(self, step: Step) -> str:
        storage, row = step.cell
        d = step.difference
        a, b = self.points[step.before], self.points[step.after]
        q = "" if d.q_value is None else f", q {d.q_value:.3g}"
        return (
            f"{storage}  {row}  {a.label} -> {b.label}: "
            f"{format_time(d.old.estimate)} -> {format_time(d.new.estimate)}: "
            f"{step.verdict} (p {d.p_value:.3g}{q})"
        )

    def text(self) -> str:
        parts = [paragraph(self.heading()), *map(paragraph, self.notes)]
        if self.skipped:
            parts.append(
                paragraph(
                    f"Left out ({len(self.skipped)}, not run files): "
                    + "; ".join(self.skipped)
                )
            )
        parts.append("\n".join(self._run_lines()))
        parts.append(self._table())
        marked = self.marked()
        if marked:
            lines = [f"Steps ({len(marked)}):"]
            lines += [wrapped(f"  {self.step_line(s)}") for s in marked]
            parts.append("\n".join(lines))
        else:
            parts.append("Steps: none (no change between consecutive runs was "
                         "significant).")  # fmt: skip
        undecided = self.undecided()
        if undecided:
            parts.append(
                paragraph(
                    f"Undecided: {len(undecided)} changes between runs with too "
                    f"few trials ({self.trials_needed()} a side needed); run more "
                    "trials (--repeat) to tell."
                )
            )
        return "\n\n".join(parts) + "\n"

    def to_json(self) -> dict[str, Any]:
        """The trend as data (`trend --json`): the runs in order, each
        cell's value and interval in every run it has, and the step into
        each run with compare's numbers.  Runs are numbered from 1, as in
        the text."""
        runs = [
            {
                "run": i,
                "label": p.label,
                "file": str(p.path),
                "version": p.version,
                "date": p.date,
                "trials": p.trials,
                "also_changed": list(p.changed),
            }
            for i, p in enumerate(self.points, 1)
        ]
        cells = []
        for cell in self.cells():
            values = []
            for i in sorted(self.samples[cell]):
                interval = self.interval(cell, i)
                assert interval is not None
                values.append(
                    {
                        "run": i + 1,
                        **interval.to_json(),
                        "samples": list(self.samples[cell][i]),
                    }
                )
            steps = [
                {
                    "from_run": step.before + 1,
                    "to_run": step.after + 1,
                    "mark": MARK_WORDS[step.mark],
                    "verdict": step.verdict,
                    "cells_in_pair": step.cells,
                    **step.difference.to_json(),
                }
                for _, step in sorted(self.steps.get(cell, {}).items())
            ]
            storage, row = cell
            cells.append({"storage": storage, "row": row, "values": values,
                          "steps": steps})  # fmt: skip
        return {
            "kind": "history",
            "ordered_by": self.ordered_by(),
            "metric": self.metric,
            "statistic": self.statistic.name,
            "alpha": significance.ALPHA,
            "runs": runs,
            "cells": cells,
            "notes": list(self.notes),
            "left_out": list(self.skipped),
        }

    def _run_lines(self) -> list[str]:
        width = max(len(p.label) for p in self.points)
        out = []
        for i, p in enumerate(self.points, 1):
            # The label already says the date when the versions tie.
            dated = self.by == BY_DATE or p.when in p.label
            when = "" if dated else f"{p.when}  "
            trials = plural(p.trials, "trial")
            # The run's label and its path each stay whole (a path holding
            # spaces is copied from the text): the path on the label's line
            # when it fits there, else on the next; what follows wraps.
            head = f"{i:>3}  {p.label.ljust(width)}  {when}".rstrip()
            whole = [part.replace(" ", _KEEP) for part in (head, str(p.path))]
            line = "  ".join(whole) + f"  ({trials})"
            if p.changed:
                line += "; also changed: " + ", ".join(p.changed)
            out.append(wrapped(line).replace(_KEEP, " "))
        return out

    def cell_values(self, cell: Cell) -> list[str]:
        """The cell's value in each run with its mark, "-" where absent."""
        out = []
        for i in range(len(self.points)):
            value = self.estimate(cell, i)
            if value is None:
                out.append(MISSING)
                continue
            step = self.step(cell, i)
            out.append(format_time(value) + (step.mark if step else SAME))
        return out

    def _table(self) -> str:
        header = ["task", *self.storages]
        body = []
        for row in self.rows:
            cells = []
            for storage in self.storages:
                if (storage, row) not in self.samples:
                    cells.append(MISSING)
                    continue
                values = self.cell_values((storage, row))
                cells.append("  ".join(v.rjust(9) for v in values))
            body.append([row, *cells])
        # Under each storage, the runs' numbers over their values.
        numbers = "  ".join(
            f"{i}".rjust(8) + " " for i in range(1, len(self.points) + 1)
        )
        body.insert(0, ["", *(numbers for _ in self.storages)])
        # Storages are columns: wider than a line, they come in groups.
        return "\n".join(Table("", header, body).lines())


def chosen_statistic(
    points: Sequence[Point], name: str | None
) -> tuple[Statistic, str]:
    """The statistic asked for, else the one every run recorded (its
    config's "statistic"), else significance's default; and a note when
    the runs disagreed."""
    if name is not None:
        return significance.statistic(name), ""
    recorded = {(p.run.metadata.get("config") or {}).get("statistic") for p in points}
    if len(recorded) == 1:
        only = recorded.pop()
        if only in significance.STATISTICS:
            return significance.statistic(only), ""
    default = significance.statistic(significance.DEFAULT_STATISTIC)
    names = ", ".join(sorted(str(r) for r in recorded))
    return default, (
        f"The runs recorded different statistics ({names}): showing the "
        f"{default.label} (choose with --statistic)."
    )


def build(
    inputs: Sequence[Path],
    by: str = DEFAULT_BY,
    stat: str | None = None,
    cpu: bool = False,
    read: tuple[list[Read], list[str]] | None = None,
) -> Trend:
    """The trend of the run files in *inputs* (files and directories;
    *read*: what read_runs() gave for them, when the caller read them)."""
    runs, skipped = read if read is not None else read_runs(list(map(sniff, inputs)))
    if not runs:
        named = ", ".join(str(p) for p in inputs)
        raise ResultsError(f"no run file (*.json of vfab-bench run) in {named}")
    if len(runs) < 2:
        raise ResultsError(
            f"a trend needs two or more run files; found one ({runs[0][0]})"
        )
    points = order(runs, by)
    first = points[0]
    for p in points[1:]:
        # compare's own check: a step is a difference compare would find.
        check_same(first.identity, p.identity, str(first.path), str(p.path))
    statistic, note = chosen_statistic(points, stat)
    several = len({r.size for p in points for r in p.run.results}) > 1
    samples: dict[Cell, dict[int, tuple[float, ...]]] = {}
    storages: dict[str, None] = {}
    rows: dict[str, None] = {}
    for i, p in enumerate(points):
        for r in p.run.results:
            row = r.row(several)
            values = tuple(r.cpu_values if cpu else r.wall_values)
            samples.setdefault((r.storage, row), {})[i] = values
            storages.setdefault(r.storage)
            rows.setdefault(row)
    if not any(len(by_run) > 1 for by_run in samples.values()):
        raise ResultsError(
            "the run files have no cell in common (no storage and row measured "
            "in two of them)"
        )
    return Trend(
        by=by,
        statistic=statistic,
        metric="CPU" if cpu else "wall",
        points=tuple(points),
        storages=tuple(storages),
        rows=tuple(rows),
        samples=samples,
        steps=_steps(samples, statistic),
        skipped=tuple(skipped),
        notes=(*([note] if note else []), *_speed_warnings(points)),
    )


def _speed_warnings(points: Sequence[Point]) -> list[str]:
    """compare's warning for each pair of neighbours whose machines ran at
    different speeds (environment.speed_warning): a step there may be the
    machine's."""
    out = []
    for a, b in zip(points, points[1:], strict=False):
        warning = environment.speed_warning(
            a.run.metadata.get("environment") or {},
            b.run.metadata.get("environment") or {},
            a.label,
            b.label,
        )
        if warning:
            out.append(warning)
    return out


def _steps(
    samples: dict[Cell, dict[int, tuple[float, ...]]], statistic: Statistic
) -> dict[Cell, dict[int, Step]]:
    """Every cell's change from each run that has it to the next that has
    it, the p-values adjusted across the cells of each pair of runs, as
    compare adjusts the cells of one comparison."""
    by_pair: dict[tuple[int, int], list[tuple[Cell, Difference]]] = {}
    for cell, by_run in samples.items():
        present = sorted(by_run)
        for before, after in zip(present, present[1:], strict=False):
            d = significance.difference(by_run[before], by_run[after], statistic)
            by_pair.setdefault((before, after), []).append((cell, d))
    out: dict[Cell, dict[int, Step]] = {}
    for (before, after), found in by_pair.items():
        adjusted = significance.adjust([d for _, d in found])
        for (cell, _), d in zip(found, adjusted, strict=True):
            step = Step(
                column=cell[0],
                row=cell[1],
                difference=d,
                statistic=statistic.name,
                cells=len(found),
                before=before,
                after=after,
            )
            out.setdefault(cell, {})[after] = step
    return out
