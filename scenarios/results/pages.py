"""The HTML views of files other than a run, in the same page style and with
the same SVG charts (scenarios.results.svg): a scale run's curves and
tables, a sweep on its own, and a comparison of two files.  Offline: no
script, no external resource."""

from __future__ import annotations

from html import escape

from scenarios.results import compare as compare_mod
from scenarios.results import formatter, htmlbase, significance, svg
from scenarios.scale import report as scale_report
from scenarios.scale.results import ScaleRun
from scenarios.sweep.config import VARIANTS
from scenarios.sweep.report import tables as sweep_tables
from scenarios.sweep.results import SweepRun


def scale_section(run: ScaleRun) -> str:
    """Throughput and p99 latency against clients, a line per storage (the
    sub-windows' intervals as error bars), and the scale tables."""
    figures = [
        f"<figure>{chart}<figcaption>{escape(caption)}</figcaption></figure>"
        for caption, chart in scale_report.charts(run)
    ]
    points = list(run.points)
    tables = [
        scale_report.points_table(points, run.cores),
        scale_report.operations_table(points),
    ]
    return (
        "<h2>Concurrent clients (scale)</h2>"
        f'<div class="pair">{"".join(figures)}</div>'
        + "".join(
            f"<h3>{escape(t.title)}</h3>"
            f'<div class="scroll">{htmlbase.table(t.header, t.rows)}</div>'
            for t in tables
        )
        + f"<pre>{escape(chr(10).join(scale_report.notes(run)))}</pre>"
        + f'<p class="note">{escape(scale_report.LEGEND)}</p>'
    )


def scale_page(run: ScaleRun) -> str:
    date = str(run.metadata.get("date", ""))
    body = [
        "<h1>vfab-loadtest scale</h1>",
        f'<p class="lede">{escape(date)} · storages: '
        f"{escape(', '.join(run.storages()))}</p>",
        htmlbase.machine(run.metadata),
        scale_section(run),
        "<h2>Metadata</h2>",
        htmlbase.metadata("scale", run.metadata),
    ]
    return htmlbase.document(f"vfab-loadtest scale {date}".strip(), body)


def sweep_page(sweep: SweepRun, stat: str | None = None) -> str:
    s = stat or significance.recorded(sweep.metadata)
    date = str(sweep.metadata.get("date", ""))
    body = [
        "<h1>vfab-loadtest sweep</h1>",
        f'<p class="lede">{escape(date)}</p>',
        htmlbase.machine(sweep.metadata),
        sweep_section(sweep, s),
        "<h2>Metadata</h2>",
        htmlbase.metadata("sweep", sweep.metadata),
    ]
    return htmlbase.document(f"vfab-loadtest sweep {date}".strip(), body)


def compare_page(result: compare_mod.Comparison, changed: bool = False) -> str:
    """Per column, a chart of old against new (each trial a tick) and the
    table of verdicts."""
    body = [
        "<h1>vfab-loadtest compare</h1>",
        f'<p class="lede">{escape(result.heading())}</p>',
        *(f'<p class="note wide">{escape(w)}</p>' for w in result.warnings),
    ]
    old, new = svg.Series("old", svg.PALETTE[0]), svg.Series("new", svg.PALETTE[1])
    for column in result.columns:
        cells = [c for c in result.cells if c.column == column]
        shown = [c for c in cells if c.changed or not changed]
        if not shown:
            continue
        marks: dict[tuple[str, str], svg.Mark] = {}
        for c in shown:
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
        chart = svg.dot_chart([c.row for c in shown], [old, new], marks)
        rows = [
            [
                c.row,
                f"{c.trials[0]} vs {c.trials[1]}",
                formatter.duration(c.difference.old.estimate),
                formatter.duration(c.difference.new.estimate),
                c.words,
                c.pvalues(),
            ]
            for c in shown
        ]
        body.append(f"<h2>{escape(column)}</h2><figure>{chart}</figure>")
        body.append(
            htmlbase.table(["task", "trials", "old", "new", "change", "p, q"], rows)
        )
        body.append(f'<p class="note">{escape(result.column_summary(column))}</p>')
    return htmlbase.document(f"vfab-loadtest compare: {result.title}", body)


def sweep_section(sweep: SweepRun, stat: str) -> str:
    s = significance.statistic(stat)
    storages = list(dict.fromkeys(p.storage for p in sweep.points))
    colours = {st: svg.PALETTE[i % len(svg.PALETTE)] for i, st in enumerate(storages)}
    dashes = {"btree": "", "list": "6 4"}
    series = [
        svg.Series(f"{st} {v}", colours[st], dash=dashes.get(v, "2 3"))
        for st, v in sweep.columns
    ]
    figures = []
    for title, cpu in (("commit wall time", False), ("commit CPU time", True)):
        marks = {}
        for p in sweep.points:
            per_object = [
                (x.cpu_s if cpu else x.wall_s) * 1e6 / p.objects for x in p.samples
            ]
            iv = significance.interval(per_object, s)
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
        figures.append(
            f"<figure>{chart}<figcaption>{escape(title)} per object, "
            f"{escape(s.label)} with its {1 - significance.ALPHA:.0%} interval"
            "</figcaption></figure>"
        )
    variants = "; ".join(
        f"{v.name}: {v.description}"
        for v in VARIANTS.values()
        if any(p.variant == v.name for p in sweep.points)
    )
    tables = "".join(
        f"<h3>{escape(t.title)}</h3>{htmlbase.table(t.header, t.rows)}"
        for t in sweep_tables(sweep, stat)
    )
    return (
        "<h2>Cost per object against objects per transaction</h2>"
        f'<p class="note">{escape(variants)}.  One commit per trial; solid: '
        "BTree, dashed: one flat PersistentList, whose commit cost per object "
        "grows with the transaction (the pickler memo trap: docs/sweep.md).</p>"
        f'<div class="pair">{"".join(figures)}</div>{tables}'
    )
