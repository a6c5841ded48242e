"""A scale run's page: throughput and p99 against clients in SVG, and its
tables, in the style of every page; offline, no script."""

from __future__ import annotations

from html import escape

from scenarios.results import htmlbase
from scenarios.scale import report as scale_report
from scenarios.scale.model import ScaleRun


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
        + notes_list(scale_report.notes(run))
        + f'<p class="note">{escape(scale_report.LEGEND)}</p>'
    )


def notes_list(lines: list[str]) -> str:
    """The notes as a list that wraps in the page's width: a line indented
    in the text (a point's detail) nested under the line before it."""
    items: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("  ") and items:
            items[-1][1].append(line.strip())
        else:
            items.append((line.strip(), []))
    out = ['<ul class="notes">']
    for head, detail in items:
        sub = "".join(f"<li>{escape(d)}</li>" for d in detail)
        out.append(f"<li>{escape(head)}" + (f"<ul>{sub}</ul>" if sub else "") + "</li>")
    out.append("</ul>")
    return "".join(out) if items else ""


def page(run: ScaleRun) -> str:
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
