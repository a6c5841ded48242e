"""Compare two result files, or the storages of one file against one of them,
cell by cell, in the words pyperf and the RelStorage maintainers use:
"3.47 ms -> 4.34 ms: 1.25x slower (+25%)", "not significant".

A cell is one storage and one row: a phase of a run file (wall or CPU
seconds per trial) or a transaction size of a sweep file (seconds per
object per trial).  The statistic, its interval and the verdict come from
scenarios.results.significance; nothing is compared on summaries alone.

Files are compared only when they measured the same thing: the same kind
(run or sweep), data set size and seed.  Cells present in one file only are
listed, not compared.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from scenarios.results import environment, significance
from scenarios.results.files import ResultsError, read_json
from scenarios.results.model import RunResult
from scenarios.results.significance import Difference, Statistic
from scenarios.sweep.results import SweepRun

#: (storage, variant or "", row) -> raw samples, in the file's order.
Cells = dict[tuple[str, str, str], tuple[float, ...]]


def load(path: Path) -> RunResult | SweepRun:
    """A run or sweep result file, told apart by its "kind"."""
    data = read_json(path)
    try:
        if isinstance(data, dict) and data.get("kind") == "sweep":
            return SweepRun.from_json(data)
        return RunResult.from_json(data)
    except ResultsError as e:
        raise ResultsError(f"{path}: {e}") from None


def kind(result: RunResult | SweepRun) -> str:
    return "sweep" if isinstance(result, SweepRun) else "run"


def cells(result: RunResult | SweepRun, cpu: bool = False) -> Cells:
    """Every cell's raw samples: seconds per trial (run), seconds per object
    per trial (sweep)."""
    out: Cells = {}
    if isinstance(result, SweepRun):
        for p in result.points:
            out[(p.storage, p.variant, f"{p.objects:,} objects/txn")] = tuple(
                (s.cpu_s if cpu else s.wall_s) / p.objects for s in p.samples
            )
        return out
    several = len(result.sizes) > 1
    for r in result.results:
        row = f"{r.phase} [{r.size}]" if several else r.phase
        out[(r.storage, "", row)] = tuple(
            s.cpu_s if cpu else s.wall_s for s in r.samples
        )
    return out


def _identity(result: RunResult | SweepRun) -> dict[str, Any]:
    """What two files must share to be compared."""
    config = result.metadata.get("config", {})
    if isinstance(result, SweepRun):
        return {"seed": config.get("seed")}
    return {
        "size": sorted(result.sizes),
        "scale": config.get("scale"),
        "seed": config.get("seed"),
    }


def check_comparable(
    old: RunResult | SweepRun, new: RunResult | SweepRun, old_name: str, new_name: str
) -> None:
    if kind(old) != kind(new):
        raise ResultsError(
            f"{old_name} is a {kind(old)} result and {new_name} a {kind(new)} "
            "result; compare files of one kind"
        )
    a, b = _identity(old), _identity(new)
    for key in a:
        if a[key] != b[key]:
            raise ResultsError(
                f"{old_name} and {new_name} differ in {key} ({a[key]} vs "
                f"{b[key]}): they measured different data sets"
            )


def format_time(value: float) -> str:
    """Seconds as pyperf writes them: "3.47 ms", "812 us", "1.20 sec"."""
    if value == 0:
        return "0 sec"
    units = (("sec", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
    unit, scale = next(((u, s) for u, s in units if abs(value) >= s), units[-1])
    v = value / scale
    digits = 0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2
    return f"{v:.{digits}f} {unit}"


@dataclasses.dataclass(frozen=True)
class CellComparison:
    """One cell of the comparison: *column* (a storage, "storage variant" or,
    against a baseline, "file vs mapping") at *row*."""

    column: str
    row: str
    difference: Difference

    @property
    def verdict(self) -> str:
        d = self.difference
        if d.significant:
            return d.words()
        return "not significant"

    @property
    def line(self) -> str:
        d = self.difference
        times = f"{format_time(d.old.estimate)} -> {format_time(d.new.estimate)}"
        return f"{times}: {self.verdict}"

    def to_json(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "row": self.row,
            "verdict": self.verdict,
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
    trials: tuple[int, int]
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

    def slowdowns_above(self, threshold: float) -> list[CellComparison]:
        """Significant slowdowns by more than *threshold* (0.10: +10%)."""
        return [
            c
            for c in self.slower()
            if (change := c.difference.change) is not None and change > threshold
        ]

    def summary(self) -> str:
        n = len(self.cells)
        slower, faster = self.slower(), self.faster()
        parts = [
            f"{len(slower)} significantly slower",
            f"{len(faster)} faster",
            f"{n - len(slower) - len(faster)} not significant",
        ]
        line = f"Summary: {n} cells; " + ", ".join(parts)
        if slower:
            worst = max(slower, key=lambda c: c.difference.ratio or 0)
            line += f"; worst: {worst.column} {worst.row}, {worst.verdict}"
        ratios = [
            c.difference.ratio
            for c in self.cells
            if c.difference.ratio is not None and c.difference.ratio > 0
        ]
        if ratios:
            mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            line += f"; geometric mean {significance.ratio_words(mean)}"
        return line + "."

    def heading(self) -> str:
        a, b = self.trials
        unit = " per object" if self.kind == "sweep" else ""
        return (
            f"{self.title}: {self.metric} time{unit}, {self.statistic.label} of "
            f"{a} -> {b} trials; significant: permutation test of the "
            f"{self.statistic.label}, false discovery rate {significance.ALPHA}"
        )

    def text(self) -> str:
        parts = [self.heading(), *self.warnings]
        if min(self.trials) < 4:
            parts.append(
                "Fewer than 4 trials on a side: no difference can be significant."
            )
        for column in self.columns:
            rows = [c for c in self.cells if c.column == column]
            width = max(len(c.row) for c in rows)
            lines = [f"{column}:"]
            lines += [f"  {c.row.ljust(width)}  {c.line}" for c in rows]
            parts.append("\n".join(lines))
        if self.unmatched:
            parts.append(
                f"In one file only ({len(self.unmatched)}): "
                + "; ".join(self.unmatched)
            )
        parts.append(self.summary())
        return "\n\n".join(parts) + "\n"

    def markdown(self) -> str:
        parts = [f"# {self.heading()}", *self.warnings]
        for column in self.columns:
            lines = [f"## {column}", "", "| task | old | new | change |"]
            lines.append("|---|---:|---:|---|")
            for c in self.cells:
                if c.column != column:
                    continue
                d = c.difference
                lines.append(
                    f"| {c.row} | {format_time(d.old.estimate)} | "
                    f"{format_time(d.new.estimate)} | {c.verdict} |"
                )
            parts.append("\n".join(lines))
        if self.unmatched:
            parts.append("In one file only: " + "; ".join(self.unmatched))
        parts.append(self.summary())
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


def _adjusted(out: list[CellComparison]) -> tuple[CellComparison, ...]:
    """The cells with their p-values adjusted for each other."""
    diffs = significance.adjust([c.difference for c in out])
    return tuple(
        dataclasses.replace(c, difference=d) for c, d in zip(out, diffs, strict=True)
    )


def _label(storage: str, variant: str) -> str:
    return f"{storage} {variant}" if variant else storage


def _trials(samples: list[tuple[float, ...]]) -> int:
    return max((len(s) for s in samples), default=0)


def compare_files(
    old: RunResult | SweepRun,
    new: RunResult | SweepRun,
    old_name: str = "OLD",
    new_name: str = "NEW",
    cpu: bool = False,
    stat: str | Statistic = significance.DEFAULT_STATISTIC,
) -> Comparison:
    """Each cell of *new* against the same cell of *old*."""
    check_comparable(old, new, old_name, new_name)
    s = significance.statistic(stat)
    a, b = cells(old, cpu), cells(new, cpu)
    out = []
    for key, old_samples in a.items():
        if key in b:
            storage, variant, row = key
            out.append(
                CellComparison(
                    _label(storage, variant),
                    row,
                    significance.difference(old_samples, b[key], s),
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
    return Comparison(
        kind=kind(old),
        title=f"{old_name} -> {new_name}",
        metric="CPU" if cpu else "wall",
        statistic=s,
        trials=(_trials(list(a.values())), _trials(list(b.values()))),
        cells=_adjusted(out),
        unmatched=tuple(unmatched),
        warnings=(speeds,) if speeds else (),
    )


def compare_baseline(
    result: RunResult | SweepRun,
    baseline: str,
    name: str = "FILE",
    cpu: bool = False,
    stat: str | Statistic = significance.DEFAULT_STATISTIC,
) -> Comparison:
    """Each other storage's cells against *baseline*'s (same variant and row)."""
    s = significance.statistic(stat)
    all_cells = cells(result, cpu)
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
            CellComparison(column, row, significance.difference(base, samples, s))
        )
    trials = _trials(list(all_cells.values()))
    return Comparison(
        kind=kind(result),
        title=f"{name}, against {baseline}",
        metric="CPU" if cpu else "wall",
        statistic=s,
        trials=(trials, trials),
        cells=_adjusted(out),
        unmatched=tuple(unmatched),
    )
