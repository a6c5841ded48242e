"""A sweep's tables (cost per object per transaction size, objects stored)
and its plot."""

from __future__ import annotations

from pathlib import Path

from scenarios.results import environment, significance, table
from scenarios.results.stats import Stats
from scenarios.results.table import Table
from scenarios.sweep.config import VARIANTS
from scenarios.sweep.results import SweepPoint, SweepRun


def _per_object_us(point: SweepPoint, cpu: bool) -> list[float]:
    return [(s.cpu_s if cpu else s.wall_s) * 1e6 / point.objects for s in point.samples]


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
                    cell = significance.cell_text(_per_object_us(p, cpu), s, _micros)
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
                a, b = s(_per_object_us(lo, cpu)), s(_per_object_us(hi, cpu))
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


def plot(run: SweepRun, path: Path) -> None:
    """Cost per object (wall and CPU) against objects per transaction, log x,
    one line per storage and variant; error bars span the trials."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    storages_seen = list(dict.fromkeys(p.storage for p in run.points))
    colours = {s: f"C{i}" for i, s in enumerate(storages_seen)}
    styles = {"btree": "-", "list": "--"}
    for ax, stat, title in (
        (axes[0], "wall_us", "commit wall time"),
        (axes[1], "cpu_us", "commit CPU time (client process)"),
    ):
        for s, v in run.columns:
            pts = [p for n in run.sizes if (p := run.get(s, v, n)) is not None]
            xs = [p.objects for p in pts]
            st: list[Stats] = [getattr(p, stat) for p in pts]
            ys = [x.median for x in st]
            err = [
                [y - x.minimum for y, x in zip(ys, st, strict=True)],
                [x.maximum - y for y, x in zip(ys, st, strict=True)],
            ]
            ax.errorbar(
                xs,
                ys,
                yerr=err,
                color=colours[s],
                linestyle=styles.get(v, ":"),
                marker="o",
                capsize=3,
                label=f"{s} {v}",
            )
        ax.set_xscale("log")
        ax.set_xlabel("objects per transaction")
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs per object")
    axes[0].legend()
    versions = run.metadata.get("versions", {})
    fig.suptitle(
        "vfab-bench sweep: commit cost per object; solid = BTree, dashed = "
        f"flat PersistentList (ZODB {versions.get('ZODB', '?')})"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
