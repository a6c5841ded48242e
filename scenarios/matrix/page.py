"""A matrix's page: a chart per benchmark grouped as RelStorage's SQLite FAQ
groups its matrix (a panel per transaction size, a group of bars per
concurrency and kind, a bar per storage, the interval as a whisker; shorter
is better), the claims answered, the tables; offline, no script
(scenarios.results.svg)."""

from __future__ import annotations

from html import escape

from scenarios.matrix import claims
from scenarios.matrix.config import BENCHMARKS
from scenarios.matrix.model import MatrixRun, objects
from scenarios.matrix.report import cold_lines, tables
from scenarios.results import bars, formatter, htmlbase, significance, svg
from scenarios.results.htmlbase import Page, tag


def _axis(kind: str, n: int) -> str:
    short = {"threads": "thr", "processes": "proc", "greenlets": "gr"}
    return f"{n} {short.get(kind, kind)}"


def charts(
    run: MatrixRun, stat: str | None = None
) -> list[tuple[str, list[tuple[str, str]]]]:
    """(benchmark, [(title, an SVG panel) per transaction size]) for each
    benchmark."""
    s = run.statistic(stat)
    storages = run.storages
    series = htmlbase.series(storages)
    groups = [_axis(k, n) for k, n in run.axes]
    out = []
    for bench in run.benchmarks:
        panels = []
        for size in run.sizes:
            marks = {}
            for c in run.results:
                if c.benchmark != bench or c.objects != size:
                    continue
                iv = significance.interval(c.per_object_s, s)
                note = (
                    f"{c.storage}, {c.axis} x {objects(size)}: "
                    f"{formatter.duration(iv.estimate)} per object "
                    f"[{formatter.duration(iv.low)} - {formatter.duration(iv.high)}]"
                )
                marks[(_axis(c.kind, c.concurrency), c.storage)] = svg.Mark(
                    iv.estimate, iv.low, iv.high, note
                )
            if marks:
                title = f"{bench}, {objects(size)} a transaction"
                chart = bars.bar_chart(
                    groups, series, marks, "time per object", y_format=svg.time_tick
                )
                panels.append((title, chart))
        out.append((bench, panels))
    return out


def svg_file(run: MatrixRun, stat: str | None = None) -> str:
    """Every panel of every benchmark side by side, benchmark after
    benchmark, as one standalone SVG file (--plot)."""
    panels = [svg.titled(c, t) for _, ps in charts(run, stat) for t, c in ps]
    zodb = run.metadata.get("versions", {}).get("ZODB", "?")
    return svg.side_by_side(panels, escape(f"vfab-bench matrix (ZODB {zodb})"))


def page(run: MatrixRun, stat: str | None = None) -> str:
    s = stat or significance.recorded(run.metadata)
    date = str(run.metadata.get("date", ""))
    p = Page(run.metadata).heading("vfab-loadtest matrix", date)
    p.machine().section("RelStorage's SQLite FAQ, checked").raw("<ul>")
    for a in claims.answers(run, s):
        p.raw(f"<li>{tag('b', a.claim)}: ")
        p.raw(escape(f"the FAQ: “{a.published}”. Here: {a.sentence()}"), "</li>")
    p.raw("</ul>").note(claims.versions_line(run))
    for bench, panels in charts(run, s):
        b = BENCHMARKS.get(bench)
        p.section(bench)
        if b is not None:
            p.note(
                f"{b.description} (zodbshootout: {b.shootout}); time per object, "
                "shorter is better; the black line is the interval."
            )
        p.charts(panels)
    p.note(*cold_lines(run)).tables(tables(run, s), scroll=False)
    p.section("Metadata").metadata("matrix")
    return p.document(f"vfab-loadtest matrix {date}".strip())
