"""A sweep's tables: cost per object per transaction size (the run's
statistic with its interval), objects stored."""

from __future__ import annotations

from scenarios.results import environment, significance, table
from scenarios.results.table import Table
from scenarios.sweep.config import VARIANTS
from scenarios.sweep.model import SweepRun


def _micros(value: float) -> str:
    return f"{value:.1f}"


def tables(run: SweepRun, stat: str | None = None) -> list[Table]:
    """Wall and CPU cost per object (the run's statistic, or *stat*, with its
    interval), objects stored."""
    s = significance.statistic(stat or significance.recorded(run.metadata))
    columns = run.columns
    header = ["objects/txn", *(f"{s} {v}" for s, v in columns)]
    n_trials = max((len(p.samples) for p in run.points), default=0)
    out: list[Table] = []
    for title, cpu in (
        (f"commit wall time per object (µs), {s.label} of {n_trials}", False),
        (f"commit CPU time per object (µs), this process, {s.label}", True),
    ):
        rows = []
        for n in run.sizes:
            row = [f"{n:,}"]
            for storage, v in columns:
                p = run.get(storage, v, n)
                cell = "-"
                if p is not None:
                    cell = significance.cell_text(p.per_object_us(cpu), s, _micros)
                row.append(cell)
            rows.append(row)
        if len(run.sizes) > 1:
            row = [f"{run.sizes[-1]:,} / {run.sizes[0]:,}"]
            for storage, v in columns:
                lo = run.get(storage, v, run.sizes[0])
                hi = run.get(storage, v, run.sizes[-1])
                if lo is None or hi is None:
                    row.append("-")
                    continue
                a, b = s(lo.per_object_us(cpu)), s(hi.per_object_us(cpu))
                row.append(f"x{b / a:.1f} " if a > 0 else "-")
            rows.append(row)
        out.append(Table(title, header, rows, label_left=False))
    rows = []
    for n in run.sizes:
        row = [f"{n:,}"]
        for storage, v in columns:
            p = run.get(storage, v, n)
            row.append("-" if p is None or p.stores is None else f"{p.stores:,}")
        rows.append(row)
    out.append(Table("objects stored by the commit", header, rows, label_left=False))
    return out


def text(run: SweepRun, stat: str | None = None) -> str:
    variants = "; ".join(
        f"{v.name}: {v.description}"
        for v in VARIANTS.values()
        if any(p.variant == v.name for p in run.points)
    )
    return table.text(
        tables(run, stat),
        f"{variants}.  "
        + significance.legend(stat or significance.recorded(run.metadata))
        + "  The last row of a cost table is its growth from the smallest "
        "to the largest transaction."
        + "".join(f"  {line}" for line in environment.lines(run.metadata)),
    )


def markdown(run: SweepRun, stat: str | None = None) -> str:
    return table.markdown(tables(run, stat), ["# vfab-loadtest sweep"])
