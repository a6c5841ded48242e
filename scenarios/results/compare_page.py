"""The page of a comparison of two run or sweep files: per column, old
against new drawn trial by trial, and the verdicts."""

from __future__ import annotations

from html import escape

from scenarios.results import formatter, htmlbase, svg
from scenarios.results.compare import Comparison


def page(result: Comparison, changed: bool = False) -> str:
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
