"""The scale run as a result kind: what scale and report show of a ScaleRun
(its tables, Markdown, the page, the SVG plot), and compare (throughput and
p99 per point, sub-window against sub-window)."""

from __future__ import annotations

from typing import Any

from scenarios.results import files
from scenarios.results.kinds import Kind, View, report_text
from scenarios.scale import page, report
from scenarios.scale.compare import compare_scale
from scenarios.scale.model import ScaleRun


def view(run: ScaleRun, text: str = "text") -> View:
    """*run*'s text ("text", "markdown" or "") and its files."""
    texts = {"text": report.text, "markdown": report.markdown}
    files = {
        "json": run.to_json,
        "html": lambda: page.page(run),
        "plot": lambda: report.svg_file(run),
    }
    return View(texts[text](run) if text else "", files)


def _report(run: ScaleRun, args: Any) -> View:
    return view(run, report_text(args))


def _compare(old: ScaleRun, new: ScaleRun, args: Any) -> View:
    return compare_scale(old, new, str(args.old), str(args.new)).view()


KIND = Kind(
    files.SCALE,
    "scale file",
    load=lambda found: ScaleRun.from_json(found.data),
    report=_report,
    report_options=frozenset({"all", "markdown", "html"}),
    compare=_compare,
    compare_options=frozenset({"json", "markdown"}),
)
