"""A scale run's page: throughput and p99 against clients in SVG, and its
tables, in the style of every page; offline, no script."""

from __future__ import annotations

from scenarios.results.htmlbase import Page
from scenarios.scale import report as scale_report
from scenarios.scale.model import ScaleRun


def scale_section(run: ScaleRun, level: int = 2) -> str:
    """Throughput and p99 latency against clients, a line per storage (the
    sub-windows' intervals as error bars), and the scale tables."""
    points = list(run.points)
    p = Page(run.metadata, level).section("Concurrent clients (scale)")
    p.charts(scale_report.charts(run)).tables(
        [scale_report.points_table(points, run.cores),
         scale_report.operations_table(points)]
    )  # fmt: skip
    return p.notes(scale_report.notes(run)).note(scale_report.LEGEND).html()


def page(run: ScaleRun) -> str:
    date = str(run.metadata.get("date", ""))
    p = Page(run.metadata)
    p.heading("vfab-loadtest scale", date, f"storages: {', '.join(run.storages())}")
    p.machine()
    p.raw(scale_section(run)).section("Metadata").metadata("scale")
    return p.document(f"vfab-loadtest scale {date}".strip())
