"""The scale run as a result kind: what scale and report show of a ScaleRun
(its tables, Markdown, the page, the SVG plot), and compare (throughput and
p99 per point, sub-window against sub-window)."""

from __future__ import annotations

from typing import Any

from scenarios.results.kinds import View, shown, stored
from scenarios.scale import page, report
from scenarios.scale.compare import compare_scale
from scenarios.scale.model import ScaleRun


def view(run: ScaleRun, text: str = "text") -> View:
    """*run*'s text ("text", "markdown" or "") and its files."""
    files = {"html": lambda: page.page(run), "plot": lambda: report.svg_file(run)}
    return shown(run, report, text, files)


def _compare(old: ScaleRun, new: ScaleRun, args: Any) -> View:
    return compare_scale(old, new, str(args.old), str(args.new)).view()


KIND = stored(
    ScaleRun,
    "scale file",
    view,
    frozenset({"all", "markdown", "html"}),
    _compare,
    frozenset({"json", "markdown"}),
)
