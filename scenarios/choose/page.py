"""choose's page: the verdict first, then the curves (scale's charts of
throughput and p99 against clients), each with a title and the load
note, then the tables; offline, no script."""

from __future__ import annotations

from scenarios.choose import report
from scenarios.choose.model import ChooseRun
from scenarios.choose.verdict import lines
from scenarios.results.htmlbase import Page
from scenarios.scale import report as scale_report


def page(run: ChooseRun) -> str:
    date = str(run.metadata.get("date", ""))
    verdict = lines(run)
    load = [line for line in verdict if line.startswith(("warning:", "note:"))]
    cut = verdict.index("when it changes:") if "when it changes:" in verdict else 1
    p = Page(run.metadata).heading("vfab-loadtest choose", verdict[0])
    p.items((line.strip() for line in verdict[1:cut]), "ol", "notes")
    p.notes(verdict[cut:]).machine()
    scale = run.as_scale()
    if scale.points:
        p.section("Curves")
        p.charts(scale_report.charts(scale), "; ".join(load))
    p.tables(report.tables(run)).section("Metadata").metadata("choose")
    return p.document(f"vfab-loadtest choose {date}".strip())
