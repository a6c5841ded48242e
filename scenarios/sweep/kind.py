"""The sweep as a result kind: what sweep and report show of a SweepRun
(its tables, Markdown, the page, the SVG plot), and compare."""

from __future__ import annotations

from scenarios.results import compare_runs
from scenarios.results.kinds import View, shown, stored
from scenarios.sweep import page, report
from scenarios.sweep.model import SweepRun


def view(sweep: SweepRun, stat: str | None = None, text: str = "text") -> View:
    """*sweep*'s text ("text", "markdown" or "") and its files, cells by
    *stat* (None: the sweep's statistic)."""
    files = {
        "html": lambda: page.page(sweep, stat),
        "plot": lambda: page.svg_file(sweep, stat),
    }
    return shown(sweep, report, text, files, stat)


KIND = stored(
    SweepRun,
    "sweep file",
    view,
    frozenset({"all", "markdown", "statistic", "html"}),
    compare_runs.view,
    compare_runs.OPTIONS,
)
