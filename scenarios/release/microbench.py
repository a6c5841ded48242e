"""pytest-benchmark's JSON of the micro-benchmarks as a table: one row per
benchmark, a column per storage (the release's text, page and history)."""

from __future__ import annotations

from typing import Any

from scenarios.results.formatter import duration
from scenarios.results.table import Table


def micro_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(storages, rows): one row per benchmark, the median seconds per
    round on each storage ("-" where it did not run), as pytest-benchmark's
    JSON has them."""
    cells: dict[str, dict[str, float]] = {}
    names: list[str] = []
    for b in data.get("benchmarks", []):
        test = str(b.get("name", "?")).split("[", 1)[0].removeprefix("test_")
        storage = str((b.get("params") or {}).get("storage", "?"))
        median = (b.get("stats") or {}).get("median")
        if isinstance(median, (int, float)):
            cells.setdefault(test, {})[storage] = float(median)
        if storage not in names:
            names.append(storage)
    rows = [
        [test] + [duration(row[s]) if s in row else "-" for s in names]
        for test, row in cells.items()
    ]
    return names, rows


def micro_text(data: dict[str, Any]) -> str:
    names, rows = micro_rows(data)
    if not rows:
        return "no benchmark ran\n"
    table = Table("", ["benchmark (median per round)", *names], rows)
    return "\n".join(table.lines()) + "\n"
