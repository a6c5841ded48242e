"""The sweep as a result kind: what sweep and report show of a SweepRun
(its tables, Markdown, the page, the SVG plot), and compare."""

from __future__ import annotations

from typing import Any

from scenarios.results import compare_runs, files
from scenarios.results.kinds import Kind, View, report_text
from scenarios.sweep import page, report
from scenarios.sweep.model import SweepRun


def view(sweep: SweepRun, stat: str | None = None, text: str = "text") -> View:
    """*sweep*'s text ("text", "markdown" or "") and its files, cells by
    *stat* (None: the sweep's statistic)."""
    texts = {"text": report.text, "markdown": report.markdown}
    files = {
        "json": sweep.to_json,
        "html": lambda: page.page(sweep, stat),
        "plot": lambda: page.svg_file(sweep, stat),
    }
    return View(texts[text](sweep, stat) if text else "", files)


def _report(sweep: SweepRun, args: Any) -> View:
    return view(sweep, args.statistic, report_text(args))


KIND = Kind(
    files.SWEEP,
    "sweep file",
    load=lambda found: SweepRun.from_json(found.data),
    report=_report,
    report_options=frozenset({"all", "markdown", "statistic", "html"}),
    compare=compare_runs.view,
    compare_options=compare_runs.OPTIONS,
)
