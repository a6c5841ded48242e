"""The matrix as a result kind: what matrix and report show of a MatrixRun
(its tables and the claims, Markdown, the page, the SVG plot), and compare
(cell by cell, seconds per object)."""

from __future__ import annotations

from typing import Any

from scenarios.matrix import page, report
from scenarios.matrix.model import MatrixRun
from scenarios.results import compare_runs, files, table
from scenarios.results.kinds import Kind, View, report_text


def view(run: MatrixRun, stat: str | None = None, text: str = "text") -> View:
    """*run*'s text ("text", "markdown" or "") and its files."""
    texts = {"text": report.text, "markdown": report.markdown}
    outputs = {
        "json": run.to_json,
        "html": lambda: page.page(run, stat),
        "plot": lambda: page.svg_file(run, stat),
    }
    problems = [g for g in run.groups if not g.ok]
    note = ""
    if problems:
        # A line each (the first three), wrapped within the views' width.
        note = "\n".join(
            table.wrapped(
                f"vfab-bench matrix: {g.storage} {g.concurrency} {g.kind}: "
                + (g.error or (g.problems[0] if g.problems else "not checked"))
            )
            for g in problems[:3]
        )
    return View(texts[text](run, stat) if text else "", outputs, note)


def _report(run: MatrixRun, args: Any) -> View:
    return view(run, args.statistic, report_text(args))


def _compare(old: Any, new: Any, args: Any) -> View:
    from scenarios.errors import ConfigError

    if getattr(args, "cpu", False):
        raise ConfigError("--cpu: a matrix times wall clock only")
    return compare_runs.view(old, new, args)


KIND = Kind(
    files.MATRIX,
    "matrix file",
    load=lambda found: MatrixRun.from_json(found.data),
    report=_report,
    report_options=frozenset({"markdown", "statistic", "html"}),
    compare=_compare,
    compare_options=compare_runs.OPTIONS,
)
