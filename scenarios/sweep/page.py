"""A sweep's page: its cost curves in SVG (scenarios.results.svg) and its
tables, in the style of every page; offline, no script."""

from __future__ import annotations

from html import escape

from scenarios.results import significance, svg
from scenarios.results.htmlbase import Page
from scenarios.sweep.config import VARIANTS
from scenarios.sweep.model import SweepRun
from scenarios.sweep.report import tables as sweep_tables


def charts(sweep: SweepRun, stat: str | None = None) -> list[tuple[str, str]]:
    """(caption, SVG) of the wall and the CPU cost per object against
    objects per transaction: a line per storage and variant (solid: BTree,
    dashed: the flat list), each point *stat* (None: the sweep's
    statistic) with its interval as an error bar."""
    s = significance.statistic(stat or significance.recorded(sweep.metadata))
    storages = list(dict.fromkeys(p.storage for p in sweep.points))
    colours = {st: svg.PALETTE[i % len(svg.PALETTE)] for i, st in enumerate(storages)}
    dashes = {"btree": "", "list": "6 4"}
    series = [
        svg.Series(f"{st} {v}", colours[st], dash=dashes.get(v, "2 3"))
        for st, v in sweep.columns
    ]
    out = []
    for title, cpu in (("commit wall time", False), ("commit CPU time", True)):
        marks = {}
        for p in sweep.points:
            iv = significance.interval(p.per_object_us(cpu), s)
            note = (
                f"{p.storage} {p.variant}, {p.objects:,} objects: {iv.estimate:.2f} "
                f"µs/object [{iv.low:.2f} - {iv.high:.2f}]"
            )
            marks[(p.objects, f"{p.storage} {p.variant}")] = svg.Mark(
                iv.estimate, iv.low, iv.high, note
            )
        chart = svg.line_chart(
            sweep.sizes,
            series,
            marks,
            "objects per transaction (log scale)",
            "µs per object",
            width=500,
            height=360,
        )
        caption = (
            f"{title} per object, {s.label} with its "
            f"{1 - significance.ALPHA:.0%} interval"
        )
        out.append((caption, chart))
    return out


def svg_file(sweep: SweepRun, stat: str | None = None) -> str:
    """The two charts side by side as one standalone SVG file (--plot)."""
    zodb = sweep.metadata.get("versions", {}).get("ZODB", "?")
    title = f"vfab-bench sweep: commit cost per object (ZODB {zodb})"
    return svg.side_by_side([c for _, c in charts(sweep, stat)], escape(title))


def sweep_section(sweep: SweepRun, stat: str) -> str:
    variants = "; ".join(
        f"{v.name}: {v.description}"
        for v in VARIANTS.values()
        if any(p.variant == v.name for p in sweep.points)
    )
    p = Page(sweep.metadata).section("Cost per object against objects per transaction")
    p.note(
        f"{variants}.  One commit per trial; solid: BTree, dashed: one flat "
        "PersistentList, whose commit cost per object grows with the transaction "
        "(the pickler memo trap: docs/sweep.md)."
    )
    p.charts(charts(sweep, stat)).tables(sweep_tables(sweep, stat), scroll=False)
    return p.html()


def page(sweep: SweepRun, stat: str | None = None) -> str:
    s = stat or significance.recorded(sweep.metadata)
    date = str(sweep.metadata.get("date", ""))
    p = Page(sweep.metadata).heading("vfab-loadtest sweep", date)
    p.machine().raw(sweep_section(sweep, s)).section("Metadata").metadata("sweep")
    return p.document(f"vfab-loadtest sweep {date}".strip())
