"""choose --json files as a result kind: its text and page from the file
(report); compare reads none (a verdict is read, not compared).  The
model and views are imported when a file is read: the registry, which
every command imports, stays light."""

from __future__ import annotations

from typing import Any

from scenarios.results.files import CHOOSE
from scenarios.results.kinds import Found, Kind, View


def view(run: Any) -> View:
    """*run*'s (a ChooseRun) text and its files."""
    from scenarios.choose import page, report

    files = {"json": run.to_json, "html": lambda: page.page(run)}
    return View(report.text(run), files)


def _load(found: Found) -> Any:
    from scenarios.choose.model import ChooseRun

    return ChooseRun.from_json(found.data)


def _report(run: Any, args: Any) -> View:
    return view(run)


KIND = Kind(
    CHOOSE,
    "choose file",
    load=_load,
    report=_report,
    report_options=frozenset({"html"}),
)
