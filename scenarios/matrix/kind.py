"""The matrix as a result kind: what matrix and report show of a MatrixRun
(its tables and the claims, Markdown, the page, the SVG plot), and compare
(cell by cell, seconds per object)."""

from __future__ import annotations

import dataclasses
from typing import Any

from scenarios.matrix import page, report
from scenarios.matrix.model import MatrixRun
from scenarios.results import compare_runs, table
from scenarios.results.kinds import View, shown, stored


def view(run: MatrixRun, stat: str | None = None, text: str = "text") -> View:
    """*run*'s text ("text", "markdown" or "") and its files."""
    outputs = {
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
    return dataclasses.replace(shown(run, report, text, outputs, stat), note=note)


def _compare(old: Any, new: Any, args: Any) -> View:
    from scenarios.errors import ConfigError

    if getattr(args, "cpu", False):
        raise ConfigError("--cpu: a matrix times wall clock only")
    return compare_runs.view(old, new, args)


KIND = stored(
    MatrixRun,
    "matrix file",
    view,
    frozenset({"markdown", "statistic", "html"}),
    _compare,
    compare_runs.OPTIONS,
)
