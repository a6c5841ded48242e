"""compare of files of timed trials (run, sweep, matrix), or of one file's
storages against one, cell by cell, in pyperf's words: "3.47 ms -> 4.34 ms:
1.25x slower (+25%)", "not significant", "inconclusive (5 vs 5 trials; at
least 7 needed)"; files of one kind and data set only (docs/internals.md).
The cell's measure is a statistic of its trials (CellComparison); the
rendering is the one comparison's (scenarios.results.compare); this module
adds the page (old against new drawn trial by trial) and the --fail-above
gate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from html import escape
from operator import attrgetter
from typing import Any, ClassVar, Protocol

from scenarios.results import environment, formatter, htmlbase, power, significance, svg
from scenarios.results.compare import Change, Comparison, check_same, one_side, paired
from scenarios.results.files import ResultsError
from scenarios.results.kinds import View
from scenarios.results.metadata import differences
from scenarios.results.model import Cells
from scenarios.results.significance import Difference, Statistic


class Compared(Protocol):
    """A result compare reads (RunResult, SweepRun, MatrixRun): its kind,
    metadata, cells and what two files must share to be compared."""

    kind: ClassVar[str]

    @property
    def metadata(self) -> dict[str, Any]: ...

    def cells(self, cpu: bool = False) -> Cells: ...

    def identity(self) -> dict[str, Any]: ...


@dataclasses.dataclass(frozen=True)
class CellComparison(Change):
    """One cell: *column* (a storage, "storage variant" or, against a
    baseline, "file vs mapping") at *row*, compared by *statistic* among
    *cells* cells tested together."""

    difference: Difference
    statistic: str = significance.DEFAULT_STATISTIC
    cells: int = 1
    #: The raw samples (old, new), for views that draw each trial.
    samples: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())

    JSON_SKIP = ("statistic", "cells", "samples")
    JSON_FLAT = ("difference",)
    JSON_EXTRA = ("verdict", "trials", "inconclusive")

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

    def values(self) -> tuple[str, str]:
        d = self.difference
        return formatter.duration(d.old.estimate), formatter.duration(d.new.estimate)

    @property
    def words(self) -> str:
        """The verdict, with the ratio when it has none: "1.01x, ..."."""
        if self.difference.significant:
            return self.verdict
        return f"{formatter.ratio(self.difference.ratio)}, {self.verdict}"

    def fields(self) -> tuple[str, ...]:
        return (f"{self.trials[0]} vs {self.trials[1]}",)

    def row_words(self, pvalues: bool = False) -> str:
        """The words without what every inconclusive cell of the comparison
        shares (the trials needed: RunComparison.notes): "0.94x,
        inconclusive"; the trials are the row's own field; p and q after
        them with *pvalues*."""
        words = self.words
        if self.inconclusive:
            words = f"{formatter.ratio(self.difference.ratio)}, inconclusive"
        return words + (f"  ({self.pvalues()})" if pvalues else "")

    def pvalues(self) -> str:
        """ "p 0.0079, q 0.36" (q: adjusted across the cells)."""
        d = self.difference
        q = "" if d.q_value is None else f", q {d.q_value:.2g}"
        return f"p {d.p_value:.2g}{q}"


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunComparison(Comparison):
    """Every compared cell of two timed files, grouped by column."""

    cells: tuple[CellComparison, ...]
    metric: str
    statistic: Statistic

    HEADER = ("task", "trials", "old", "new", "change")
    JSON_EXTRA = ("alpha", "summary")
    JSON_AS = {"statistic": attrgetter("name")}

    @property
    def alpha(self) -> float:
        return significance.ALPHA

    def slower(self) -> list[CellComparison]:
        return [c for c in self.cells if c.difference.slower]

    def faster(self) -> list[CellComparison]:
        return [c for c in self.cells if c.difference.faster]

    def inconclusive(self) -> list[CellComparison]:
        return [c for c in self.cells if c.inconclusive]

    @staticmethod
    def tally(
        cells: Sequence[CellComparison],
    ) -> tuple[list[CellComparison], list[CellComparison], list[CellComparison], int]:
        """*cells* slower, faster, inconclusive, and how many are none."""
        slower = [c for c in cells if c.difference.slower]
        faster = [c for c in cells if c.difference.faster]
        unsure = [c for c in cells if c.inconclusive]
        return slower, faster, unsure, len(cells) - len(slower + faster + unsure)

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
        slower, faster, unsure, quiet = self.tally(cells)
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

    def notes(self) -> list[str]:
        """What the inconclusive cells share, said once (the trials a side
        that would decide a change among this many cells), then the cells
        one file only has."""
        unsure = self.inconclusive()
        if not unsure:
            return super().notes()
        needed = power.trials_needed(self.statistic, len(self.cells))
        more = (
            f"more than {power.MOST_TRIALS}" if needed is None else f"at least {needed}"
        )
        cells = formatter.plural(len(unsure), "cell")
        note = (
            f"Inconclusive ({cells}): too few trials to decide "
            f"a change among {len(self.cells)} cells; {more} a side needed (each "
            "cell's trials beside it); run more trials (--repeat) to tell."
        )
        return [note, *super().notes()]


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


def _compared(
    result: Compared,
    title: str,
    pairs: list[tuple[str, str, Any, Any]],
    cpu: bool,
    s: Statistic,
    **more: Any,
) -> RunComparison:
    """(column, row, old samples, new samples) compared by *s*, the cells'
    p-values adjusted for each other."""
    cells = [
        CellComparison(c, r, significance.difference(a, b, s), samples=(a, b))
        for c, r, a, b in pairs
    ]
    return RunComparison(
        kind=result.kind,
        title=title,
        metric="CPU" if cpu else "wall",
        statistic=s,
        cells=_adjusted(cells, s),
        **more,
    )


def compare_files(
    old: Compared,
    new: Compared,
    old_name: str = "OLD",
    new_name: str = "NEW",
    cpu: bool = False,
    stat: str | Statistic | None = None,
) -> RunComparison:
    """Each cell of *new* against the same cell of *old*, by *stat* (None:
    the one the files record)."""
    if old.kind != new.kind:
        raise ResultsError(
            f"{old_name} is a {old.kind} result and {new_name} a {new.kind} "
            "result; compare files of one kind"
        )
    check_same(old.identity(), new.identity(), old_name, new_name)
    s = chosen_statistic(stat, old, new)
    a, b = old.cells(cpu), new.cells(cpu)
    pairs = [
        (_label(storage, variant), row, x, y)
        for (storage, variant, row), x, y in paired(a, b, old_name, new_name, "cell")
    ]
    unmatched = tuple(
        f"{_label(k[0], k[1])} {k[2]} ({old_name if in_old else new_name})"
        for k, in_old in one_side(a, b)
    )
    speeds = environment.speed_warning(
        old.metadata.get("environment") or {},
        new.metadata.get("environment") or {},
        old_name,
        new_name,
    )
    busy = environment.busy_lines([(old_name, old.metadata), (new_name, new.metadata)])
    warnings = ((speeds,) if speeds else ()) + tuple(busy)
    title = f"{old_name} -> {new_name}"
    causes = tuple(differences(old.metadata, new.metadata))
    return _compared(
        old, title, pairs, cpu, s, unmatched=unmatched, warnings=warnings, causes=causes
    )


def compare_baseline(
    result: Compared,
    baseline: str,
    name: str = "FILE",
    cpu: bool = False,
    stat: str | Statistic | None = None,
) -> RunComparison:
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
    pairs = []
    unmatched = []
    for (storage, variant, row), samples in all_cells.items():
        if storage == baseline:
            continue
        base = all_cells.get((baseline, variant, row))
        column = f"{_label(storage, variant)} vs {_label(baseline, variant)}"
        if base is None:
            unmatched.append(f"{_label(storage, variant)} {row}")
        else:
            pairs.append((column, row, base, samples))
    title = f"{name}, against {baseline}"
    return _compared(result, title, pairs, cpu, s, unmatched=tuple(unmatched))


# -- the view ------------------------------------------------------------------


def page(result: RunComparison, changed: bool = False) -> str:
    """Per column, a chart of old against new (each trial a tick) and the
    table of verdicts."""
    body = [
        "<h1>vfab-loadtest compare</h1>",
        *(f'<p class="lede">{escape(x)}</p>' for x in result.opening()),
        f'<p class="lede">{escape(result.heading())}</p>',
        *(f'<p class="note wide">{escape(w)}</p>' for w in result.warnings),
    ]
    old, new = svg.Series("old", svg.PALETTE[0]), svg.Series("new", svg.PALETTE[1])
    shown = [c for c in result.cells if c.changed or not changed]
    for column in result.columns:
        cells = [c for c in shown if c.column == column]
        if not cells:
            continue
        marks: dict[tuple[str, str], svg.Mark] = {}
        for c in cells:
            d = c.difference
            for series, iv, values in (
                (old, d.old, c.samples[0]),
                (new, d.new, c.samples[1]),
            ):
                note = f"{column}, {c.row}, {series.name}: " + formatter.duration(
                    iv.estimate
                )
                marks[(c.row, series.name)] = svg.Mark(
                    iv.estimate, iv.low, iv.high, note, values
                )
        chart = svg.dot_chart([c.row for c in cells], [old, new], marks)
        rows = [[c.row, *c.fields(), *c.values(), c.words, c.pvalues()] for c in cells]
        body.append(f"<h2>{escape(column)}</h2><figure>{chart}</figure>")
        body.append(htmlbase.table([*RunComparison.HEADER, "p, q"], rows))
        body.append(f'<p class="note">{escape(result.column_summary(column))}</p>')
    return htmlbase.document(f"vfab-loadtest compare: {result.title}", body)


#: compare's options that apply to run, sweep and matrix files: every one.
OPTIONS = frozenset(
    {"baseline", "cpu", "statistic", "pvalues", "changed", "fail_above"}
    | {"json", "markdown", "html"}
)


def view(old: Compared, new: Compared | None, args: Any) -> View:
    """compare's view of two run or sweep files (*new* None: the storages
    of *old* against args.baseline); exit EXIT_GATE on a significant
    slowdown above args.fail_above."""
    if new is not None:
        result = compare_files(
            old, new, str(args.old), str(args.new), args.cpu, args.statistic
        )
    else:
        result = compare_baseline(
            old, args.baseline, str(args.old), args.cpu, args.statistic
        )
    failed = [] if args.fail_above is None else result.slowdowns_above(args.fail_above)
    # Short: the view on stdout has each cell's whole line; the biggest
    # slowdown first.
    failed = sorted(failed, key=lambda c: c.difference.ratio or 0, reverse=True)
    cells = [
        f"{c.cell_name}: {c.difference.ratio or 0:.2f}x slower "
        f"({c.difference.change or 0:+.0%})"
        for c in failed
    ]
    slowdowns = formatter.plural(len(failed), "significant slowdown")
    return result.view(
        cells,
        f"{slowdowns} above {args.fail_above or 0:.0%}",
        5,
        (args.pvalues, args.changed),
        html=lambda: page(result, args.changed),
    )
