"""The census as a result kind: written (census --json), read by no
command; its view is the table and the JSON."""

from __future__ import annotations

from scenarios.census import report
from scenarios.census.model import Census
from scenarios.results import files
from scenarios.results.kinds import Kind, View


def view(census: Census) -> View:
    return View(report.text(census), {"json": census.to_json})


KIND = Kind(files.CENSUS, "census file")
