"""Two run or sweep files (or one file's storages against one), cell by cell,
in pyperf's words: "3.47 ms -> 4.34 ms: 1.25x slower (+25%)", "not
significant", "inconclusive (5 vs 5 trials; at least 7 needed)"; files
of one kind and data set only (docs/internals.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from scenarios.results import environment, formatter, power, significance
from scenarios.results.compare_rows import Row, block
from scenarios.results.compare_rows import markdown as rows_markdown
from scenarios.results.files import ResultsError
from scenarios.results.model import Cells
from scenarios.results.significance import Difference, Statistic
from scenarios.results.table import paragraph, wrapped


class Compared(Protocol):
    """A result compare reads (RunResult, SweepRun): its kind, metadata,
    cells and what two files must share to be compared."""

    kind: ClassVar[str]

    @property
    def metadata(self) -> dict[str, Any]: ...

    def cells(self, cpu: bool = False) -> Cells: ...

    def identity(self) -> dict[str, Any]: ...


def check_comparable(
    old: Compared, new: Compared, old_name: str, new_name: str
) -> None:
    if old.kind != new.kind:
        raise ResultsError(
            f"{old_name} is a {old.kind} result and {new_name} a {new.kind} "
            "result; compare files of one kind"
        )
    check_same(old.identity(), new.identity(), old_name, new_name)


def check_same(
    a: dict[str, Any],
    b: dict[str, Any],
    old_name: str,
    new_name: str,
    meaning: str = "they measured different data sets",
) -> None:
    """ResultsError naming the first of *a*'s keys whose value *b* does not
    share (two files' identities: size, scale, seed...)."""
    for key in a:
        if a[key] != b.get(key):
            raise ResultsError(
                f"{old_name} and {new_name} differ in {key} ({a[key]} vs "
                f"{b.get(key)}): {meaning}"
            )


@dataclasses.dataclass(frozen=True)
class CellComparison:
    """One cell of the comparison: *column* (a storage, "storage variant" or,
    against a baseline, "file vs mapping") at *row*, compared by *statistic*
    among *cells* cells tested together."""

    column: str
    row: str
    difference: Difference
    statistic: str = significance.DEFAULT_STATISTIC
    cells: int = 1
    #: The raw samples (old, new), for views that draw each trial.
    samples: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())

    @property
    def trials(self) -> tuple[int, int]:
        """The trials on each side of this cell (rows may differ: the 2000
        rows' top-up trials)."""
        return self.difference.old.n, self.difference.new.n

    @property
    def inconclusive(self) -> bool:
        """Not significant because the trials are too few to decide: either
        no samples of these sizes could be significant even alone, or the
        cell alone would be (p < ALPHA) but a change that moved alone among
        this many cells needs more trials.  A cell whose samples show no
        difference even alone, with trials that could have, is "not
        significant"."""
        d = self.difference
        if d.significant:
            return False
        m, n = self.trials
        if not power.decidable(m, n, self.statistic):
            return True
        return d.p_value < significance.ALPHA and not power.decidable(
            m, n, self.statistic, self.cells
        )

    @property
    def changed(self) -> bool:
        """Significant, or the samples could not decide (--changed shows
        these)."""
        return self.difference.significant or self.inconclusive

    @property
    def verdict(self) -> str:
        d = self.difference
        if d.significant:
            return d.words()
        if self.inconclusive:
            m, n = self.trials
            return power.inconclusive_words(m, n, self.statistic, self.cells)
        return "not significant"

    @property
    def times(self) -> str:
        d = self.difference
        old, new = d.old.estimate, d.new.estimate
        return f"{formatter.duration(old)} -> {formatter.duration(new)}"

    @property
    def words(self) -> str:
        """The verdict, with the ratio when it has none: "1.01x, ..."."""
        if self.difference.significant:
            return self.verdict
        return f"{formatter.ratio(self.difference.ratio)}, {self.verdict}"

    @property
    def line(self) -> str:
        return f"{self.times}: {self.words}"

    @property
    def short_words(self) -> str:
        """The words without what every inconclusive cell of the comparison
        shares (the trials needed: Comparison.inconclusive_note): "0.94x,
        inconclusive"; the trials are the row's own field."""
        if self.inconclusive:
            return f"{formatter.ratio(self.difference.ratio)}, inconclusive"
        return self.words

    def shown_row(self, pvalues: bool = False) -> Row:
        """The cell as every comparison shows a row: the trials between
        the task and the values (and p and q after the words with
        *pvalues*)."""
        d = self.difference
        words = self.short_words + (f"  ({self.pvalues()})" if pvalues else "")
        return Row(
            self.row,
            formatter.duration(d.old.estimate),
            formatter.duration(d.new.estimate),
            words,
            (f"{self.trials[0]} vs {self.trials[1]}",),
        )

    def pvalues(self) -> str:
        """ "p 0.0079, q 0.36" (q: adjusted across the cells)."""
        d = self.difference
        q = "" if d.q_value is None else f", q {d.q_value:.2g}"
        return f"p {d.p_value:.2g}{q}"

    def to_json(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "row": self.row,
            "verdict": self.verdict,
            "trials": list(self.trials),
            "inconclusive": self.inconclusive,
            **self.difference.to_json(),
        }


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Every compared cell, grouped by column, and what could not be
    compared."""

    kind: str
    title: str
    metric: str
    statistic: Statistic
    cells: tuple[CellComparison, ...]
    unmatched: tuple[str, ...] = ()
    #: Lines to print before the cells (the machines' speeds differed).
    warnings: tuple[str, ...] = ()

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(c.column for c in self.cells))

    def slower(self) -> list[CellComparison]:
        return [c for c in self.cells if c.difference.slower]

    def faster(self) -> list[CellComparison]:
        return [c for c in self.cells if c.difference.faster]

    def inconclusive(self) -> list[CellComparison]:
        return [c for c in self.cells if c.inconclusive]

    def slowdowns_above(self, threshold: float) -> list[CellComparison]:
        """Significant slowdowns by more than *threshold* (0.10: +10%)."""
        return [
            c
            for c in self.slower()
            if (change := c.difference.change) is not None and change > threshold
        ]

    def column_summary(self, column: str) -> str:
        """ "file: 23 cells; 3 slower, 1 faster, 5 inconclusive, 14 not
        significant; worst: commit processes, 2.10x slower (+110%)"."""
        cells = [c for c in self.cells if c.column == column]
        slower = [c for c in cells if c.difference.slower]
        faster = [c for c in cells if c.difference.faster]
        unsure = [c for c in cells if c.inconclusive]
        quiet = len(cells) - len(slower) - len(faster) - len(unsure)
        line = (
            f"{column}: {len(cells)} cells; {len(slower)} slower, {len(faster)} "
            f"faster, {len(unsure)} inconclusive, {quiet} not significant"
        )
        if slower:
            worst = max(slower, key=lambda c: c.difference.ratio or 0)
            line += f"; worst: {worst.row}, {worst.verdict}"
        return line

    def summary(self) -> list[str]:
        """One line per column (storage): never a mean across storages,
        whose cells measure different things."""
        return [self.column_summary(column) for column in self.columns]

    def heading(self) -> str:
        unit = " per object" if self.kind == "sweep" else ""
        tests = significance.tests_used([c.difference for c in self.cells])
        return (
            f"{self.title}: {self.metric} time{unit}, the {self.statistic.label} "
            f"of each cell's trials; significant: permutation test of the "
            f"{self.statistic.label} ({tests}), false discovery rate "
            f"{significance.ALPHA} across the {len(self.cells)} cells"
        )

    def _shown(self, changed: bool) -> list[CellComparison]:
        return [c for c in self.cells if c.changed or not changed]

    def inconclusive_note(self) -> str:
        """What the inconclusive cells share, said once: the trials a side
        that would decide a change among this many cells ("" when none is
        inconclusive)."""
        unsure = self.inconclusive()
        if not unsure:
            return ""
        needed = power.trials_needed(self.statistic, len(self.cells))
        more = (
            f"more than {power.MOST_TRIALS}" if needed is None else f"at least {needed}"
        )
        cells = formatter.plural(len(unsure), "cell")
        return (
            f"Inconclusive ({cells}): too few trials to decide "
            f"a change among {len(self.cells)} cells; {more} a side needed (each "
            "cell's trials beside it); run more trials (--repeat) to tell."
        )

    def _notes(self) -> list[str]:
        note = self.inconclusive_note()
        return ([note] if note else []) + (
            [unmatched_line(self.unmatched)] if self.unmatched else []
        )

    def text(self, pvalues: bool = False, changed: bool = False) -> str:
        """Per column, a line per cell: trials, the two values, the verdict
        (and p and q with *pvalues*); only the changed and undecided cells
        with *changed*."""
        parts = [paragraph(self.heading()), *map(paragraph, self.warnings)]
        shown = self._shown(changed)
        for column in self.columns:
            rows = [c.shown_row(pvalues) for c in shown if c.column == column]
            if rows:
                parts.append(block(column, rows))
        if changed and not shown:
            parts.append("No cell changed and every cell was decided.")
        parts += map(paragraph, self._notes())
        summary = ["Summary:", *(wrapped(f"  {s}") for s in self.summary())]
        parts.append("\n".join(summary))
        return "\n\n".join(parts) + "\n"

    def markdown(self, pvalues: bool = False, changed: bool = False) -> str:
        parts = [f"# {self.heading()}", *self.warnings]
        shown = self._shown(changed)
        header = ["task", "trials", "old", "new", "change"]
        for column in self.columns:
            rows = [c.shown_row(pvalues) for c in shown if c.column == column]
            if rows:
                parts.append(rows_markdown(column, header, rows))
        parts += self._notes()
        parts.append("\n".join(f"- {s}" for s in self.summary()))
        return "\n\n".join(parts) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": self.title,
            "metric": self.metric,
            "statistic": self.statistic.name,
            "alpha": significance.ALPHA,
            "cells": [c.to_json() for c in self.cells],
            "unmatched": list(self.unmatched),
            "warnings": list(self.warnings),
            "summary": self.summary(),
        }


def unmatched_line(unmatched: Sequence[str]) -> str:
    return f"In one file only ({len(unmatched)}): " + "; ".join(unmatched)


def _adjusted(out: list[CellComparison], stat: Statistic) -> tuple[CellComparison, ...]:
    """The cells with their p-values adjusted for each other, each knowing
    the statistic and how many cells were tested with it."""
    diffs = significance.adjust([c.difference for c in out])
    return tuple(
        dataclasses.replace(c, difference=d, statistic=stat.name, cells=len(out))
        for c, d in zip(out, diffs, strict=True)
    )


def chosen_statistic(stat: str | Statistic | None, *results: Compared) -> Statistic:
    """*stat*, or the statistic the files record (run --statistic); a
    ResultsError when they record different ones and none was chosen."""
    if stat is not None:
        return significance.statistic(stat)
    names = {significance.recorded(r.metadata) for r in results}
    if len(names) > 1:
        labels = " and ".join(sorted(names))
        raise ResultsError(
            f"the files show different statistics ({labels}); choose one "
            "with --statistic"
        )
    return significance.statistic(names.pop())


def _label(storage: str, variant: str) -> str:
    return f"{storage} {variant}" if variant else storage


def compare_files(
    old: Compared,
    new: Compared,
    old_name: str = "OLD",
    new_name: str = "NEW",
    cpu: bool = False,
    stat: str | Statistic | None = None,
) -> Comparison:
    """Each cell of *new* against the same cell of *old*, by *stat* (None:
    the one the files record)."""
    check_comparable(old, new, old_name, new_name)
    s = chosen_statistic(stat, old, new)
    a, b = old.cells(cpu), new.cells(cpu)
    out = []
    for key, old_samples in a.items():
        if key in b:
            storage, variant, row = key
            out.append(
                CellComparison(
                    _label(storage, variant),
                    row,
                    significance.difference(old_samples, b[key], s),
                    samples=(old_samples, b[key]),
                )
            )
    unmatched = [
        f"{_label(k[0], k[1])} {k[2]} ({old_name if k in a else new_name})"
        for k in [*a, *(k for k in b if k not in a)]
        if (k in a) != (k in b)
    ]
    if not out:
        raise ResultsError(f"{old_name} and {new_name} have no cell in common")
    speeds = environment.speed_warning(
        old.metadata.get("environment") or {},
        new.metadata.get("environment") or {},
        old_name,
        new_name,
    )
    busy = environment.busy_lines([(old_name, old.metadata), (new_name, new.metadata)])
    return Comparison(
        kind=old.kind,
        title=f"{old_name} -> {new_name}",
        metric="CPU" if cpu else "wall",
        statistic=s,
        cells=_adjusted(out, s),
        unmatched=tuple(unmatched),
        warnings=((speeds,) if speeds else ()) + tuple(busy),
    )


def compare_baseline(
    result: Compared,
    baseline: str,
    name: str = "FILE",
    cpu: bool = False,
    stat: str | Statistic | None = None,
) -> Comparison:
    """Each other storage's cells against *baseline*'s (same variant and row),
    by *stat* (None: the one the file records)."""
    s = chosen_statistic(stat, result)
    all_cells = result.cells(cpu)
    storages = list(dict.fromkeys(k[0] for k in all_cells))
    if baseline not in storages:
        raise ResultsError(
            f"no storage {baseline!r} in {name}; it has {', '.join(storages)}"
        )
    if len(storages) == 1:
        raise ResultsError(f"{name} has only {baseline!r}: nothing to compare")
    out = []
    unmatched = []
    for (storage, variant, row), samples in all_cells.items():
        if storage == baseline:
            continue
        base = all_cells.get((baseline, variant, row))
        column = f"{_label(storage, variant)} vs {_label(baseline, variant)}"
        if base is None:
            unmatched.append(f"{_label(storage, variant)} {row}")
            continue
        out.append(
            CellComparison(
                column,
                row,
                significance.difference(base, samples, s),
                samples=(base, samples),
            )
        )
    return Comparison(
        kind=result.kind,
        title=f"{name}, against {baseline}",
        metric="CPU" if cpu else "wall",
        statistic=s,
        cells=_adjusted(out, s),
        unmatched=tuple(unmatched),
    )
