"""choose --json files as a result kind: its text and page from the file
(report); compare reads none (a verdict is read, not compared)."""

from __future__ import annotations

from typing import Any

from scenarios.choose import page, report
from scenarios.choose.model import ChooseRun
from scenarios.results.files import CHOOSE
from scenarios.results.kinds import Kind, View


def view(run: ChooseRun) -> View:
    """*run*'s text and its files."""
    files = {"json": run.to_json, "html": lambda: page.page(run)}
    return View(report.text(run), files)


def _report(run: ChooseRun, args: Any) -> View:
    return view(run)


KIND = Kind(
    CHOOSE,
    "choose file",
    load=lambda found: ChooseRun.from_json(found.data),
    report=_report,
    report_options=frozenset({"html"}),
)
