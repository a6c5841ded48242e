"""A trend across release directories: every part's trend (the 2000 table,
counts, the concurrency curve, the million run, consistency), each step
between neighbours by the comparison the verdict uses (docs/internals.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from scenarios.counts.compare import (
    CountComparison,
    compare_benchmarks,
    compare_counts,
)
from scenarios.release import model, verdict
from scenarios.release.measures import timing_not_comparable
from scenarios.release.model import Release
from scenarios.results.files import ResultsError
from scenarios.results.formatter import duration, plural
from scenarios.results.model import RunResult
from scenarios.results.table import Table, paragraph, wrapped
from scenarios.scale.compare import compare_scale
from scenarios.trend import table as run_trend
from scenarios.trend.runs import DEFAULT_BY, order, run_read

#: Marks after a value: moved up, moved down, no mark.
UP, DOWN, SAME = "▲", "▼", " "


@dataclasses.dataclass(frozen=True)
class ReleaseTrend:
    releases: tuple[Release, ...]
    labels: tuple[str, ...]
    table: run_trend.Trend | None
    #: (cell, [value per release], [mark per release])
    counts: tuple[tuple[str, list[str], list[str]], ...]
    count_cells: int
    curve: tuple[tuple[str, list[str], list[str]], ...]
    micro: tuple[tuple[str, list[str]], ...]
    million: tuple[tuple[str, list[str]], ...]
    consistency: tuple[tuple[str, list[str]], ...]
    notes: tuple[str, ...] = ()

    def heading(self) -> str:
        return (
            f"Trend of {len(self.releases)} releases, in the order of the "
            "versions they recorded, then their dates; a step is a change "
            f"from the previous release ({UP} up, {DOWN} down) that release "
            "--against would report."
        )

    def _runs(self) -> list[str]:
        width = max(len(label) for label in self.labels)
        return [
            f"{i:>3}  {label.ljust(width)}  {_date(r, label)}load {_load(r)}  "
            f"code {r.code}  {r.path}"
            for i, (label, r) in enumerate(
                zip(self.labels, self.releases, strict=True), 1
            )
        ]

    def _grid(self, title: str, rows: Sequence[tuple[str, list[str]]]) -> str:
        header = ["", *(str(i) for i in range(1, len(self.releases) + 1))]
        return Table(title, header, [[name, *cells] for name, cells in rows]).text()

    @staticmethod
    def marked(values: list[str], marks: list[str]) -> list[str]:
        return [v + m if v != "-" else v for v, m in zip(values, marks, strict=True)]

    def text(self) -> str:
        runs = "\n".join(map(wrapped, self._runs()))
        parts = [paragraph(self.heading()), runs, *map(paragraph, self.notes)]
        if self.table is not None:
            parts.append("The 2000 table (table.json of each release):")
            parts.append(self.table.text().rstrip("\n"))
        if self.counts:
            rows = [(n, self.marked(v, m)) for n, v, m in self.counts]
            parts.append(
                self._grid(
                    f"Counts: the {len(rows)} of {self.count_cells} cells that "
                    "moved between two releases (the others never did)",
                    rows,
                )
            )
        elif self.count_cells:
            parts.append(
                f"Counts: none of the {self.count_cells} cells moved between two "
                "consecutive releases."
            )
        if self.curve:
            rows = [(n, self.marked(v, m)) for n, v, m in self.curve]
            parts.append(self._grid("Concurrency curve: ops/s and p99 per point", rows))
        if self.micro:
            parts.append(
                self._grid("Micro-benchmarks: median per round (timed)", self.micro)
            )
        if self.million:
            parts.append(self._grid("Million run: per object built", self.million))
        if self.consistency:
            parts.append(self._grid("Consistency", self.consistency))
        return "\n\n".join(parts) + "\n"

    def to_json(self) -> dict[str, Any]:
        def grid(rows: Sequence[tuple[str, list[str], list[str]]]) -> list[Any]:
            return [{"cell": n, "values": v, "marks": m} for n, v, m in rows]

        return {
            "kind": "release-history",
            "releases": [
                {
                    "release": i,
                    "label": label,
                    "directory": str(r.path),
                    "date": r.date,
                    "load": r.load,
                    "code": r.code,
                }
                for i, (label, r) in enumerate(
                    zip(self.labels, self.releases, strict=True), 1
                )
            ],
            "table": None if self.table is None else self.table.to_json(),
            "counts": {"cells": self.count_cells, "moved": grid(self.counts)},
            "curve": grid(self.curve),
            "micro": [{"cell": n, "values": v} for n, v in self.micro],
            "million": [{"cell": n, "values": v} for n, v in self.million],
            "consistency": [{"storage": n, "states": v} for n, v in self.consistency],
            "notes": list(self.notes),
        }


def _date(release: Release, label: str) -> str:
    """The release's date and two spaces, or nothing when its label says it
    (the versions tie)."""
    date = release.date or "?"
    return "" if date[:10] in label else f"{date}  "


def _load(release: Release) -> str:
    return "?" if release.load is None else f"{release.load:.1f}"


def _keyed(release: Release) -> Any:
    """A release as trend's order() takes a run: its metadata alone."""
    return run_read(release.path, RunResult(metadata=release.metadata, results=()))


def ordered(releases: Sequence[Release], by: str = DEFAULT_BY) -> list[Release]:
    """*releases* in version (then date) order."""
    if len(releases) < 2:
        raise ResultsError(
            f"a trend needs two or more releases; found one ({releases[0].path})"
        )
    keys = [_keyed(r) for r in releases]
    by_path = {r.path: r for r in releases}
    return [by_path[p.path] for p in order(keys, by)]


def _count_steps(
    releases: list[Release], fail_above: float
) -> tuple[tuple[tuple[str, list[str], list[str]], ...], int]:
    """Cells that moved between neighbours, and how many cells there are."""
    n = len(releases)
    values: dict[str, list[str]] = {}
    marks: dict[str, list[str]] = {}
    moved: set[str] = set()

    def note(comp: CountComparison, i: int) -> None:
        for c in comp.cells:
            if c.timing:
                continue
            name = c.cell_name
            row = values.setdefault(name, ["-"] * n)
            marks.setdefault(name, [SAME] * n)
            row[i - 1], row[i] = c.values()
            if c.differs:
                moved.add(name)
                marks[name][i] = UP if (c.change is None or c.change > 0) else DOWN

    for i in range(1, n):
        a, b = releases[i - 1], releases[i]
        if a.counts is not None and b.counts is not None:
            note(compare_counts(a.counts, b.counts, exact_threshold=fail_above), i)
        if a.micro_counts and b.micro_counts:
            try:
                note(compare_benchmarks(a.micro_counts, b.micro_counts,
                                        exact_threshold=fail_above), i)  # fmt: skip
            except ResultsError:
                pass  # no benchmark in common: nothing to show
    rows = tuple((name, values[name], marks[name]) for name in values if name in moved)
    return rows, len(values)


def _curve(releases: list[Release]) -> tuple[tuple[str, list[str], list[str]], ...]:
    n = len(releases)
    values: dict[str, list[str]] = {}
    marks: dict[str, list[str]] = {}
    for i, r in enumerate(releases):
        if r.scale is None:
            continue
        for p in r.scale.points:
            s = p.summary(r.scale.cores)
            where = f"{p.storage}, {plural(p.clients, 'client')}"
            for key, value in (
                (f"{where}: ops/s", f"{float(s['ops_per_s'] or 0):.1f}"),
                (f"{where}: p99", duration(float(s["p99_ms"] or 0) / 1000)),
            ):
                values.setdefault(key, ["-"] * n)[i] = value
                marks.setdefault(key, [SAME] * n)
    for i in range(1, n):
        a, b = releases[i - 1].scale, releases[i].scale
        if a is None or b is None:
            continue
        if timing_not_comparable(releases[i - 1], releases[i]):
            continue  # what the verdict calls not comparable is no step
        try:
            comp = compare_scale(a, b)
        except ResultsError:
            continue  # another load: no steps between these two
        for pc in comp.points:
            for m in pc.measures:
                if m.significant and m.ratio is not None:
                    marks[f"{pc.where}: {m.name}"][i] = UP if m.ratio > 1 else DOWN
    return tuple((k, values[k], marks[k]) for k in values)


def _micro(releases: list[Release]) -> tuple[tuple[str, list[str]], ...]:
    """Each micro-benchmark's median per round in each release (timed: no
    steps, the machine moves them; the counts part has the gate)."""
    from scenarios.release.microbench import micro_rows

    n = len(releases)
    rows: dict[str, list[str]] = {}
    for i, r in enumerate(releases):
        if r.micro is None:
            continue
        names, table = micro_rows(r.micro)
        for row in table:
            for storage, cell in zip(names, row[1:], strict=True):
                if cell != "-":
                    rows.setdefault(f"{row[0]} [{storage}]", ["-"] * n)[i] = cell
    return tuple(rows.items())


def _million(releases: list[Release]) -> tuple[tuple[str, list[str]], ...]:
    from scenarios.bench.report import cost_per_object

    n = len(releases)
    rows: dict[str, list[str]] = {}
    for i, r in enumerate(releases):
        run = r.million
        if run is None:
            continue
        size = run.sizes[0]
        for storage in run.storages:
            t = cost_per_object(run, storage, size)
            trials = run.trials_of(storage, size)
            objects = trials[0].objects if trials else 0
            on_disk = trials[0].size_bytes if trials else None
            rows.setdefault(f"{storage}: time", ["-"] * n)[i] = (
                "-" if t is None else duration(t)
            )
            rows.setdefault(f"{storage}: bytes", ["-"] * n)[i] = (
                f"{on_disk / objects:.0f} B" if objects and on_disk else "-"
            )
    return tuple(rows.items())


def _consistency(releases: list[Release]) -> tuple[tuple[str, list[str]], ...]:
    n = len(releases)
    rows: dict[str, list[str]] = {}
    for i, r in enumerate(releases):
        for storage, (state, _) in verdict.states(r.scale).items():
            rows.setdefault(storage, ["-"] * n)[i] = state
    return tuple(rows.items())


def build(
    loaded: Sequence[Release],
    by: str = DEFAULT_BY,
    stat: str | None = None,
    cpu: bool = False,
    fail_above: float = verdict.DEFAULT_FAIL_ABOVE,
) -> ReleaseTrend:
    """The trends of the releases *loaded* (model.load), part by part."""
    releases = ordered(loaded, by)
    labels = order([_keyed(r) for r in releases], by)
    notes = []
    tables = [(r.path / model.TABLE, r.table) for r in releases if r.table]
    table = None
    if len(tables) >= 2:
        runs = [run_read(p, t) for p, t in tables if t]
        table = run_trend.build([p for p, *_ in runs], by, stat, cpu, (runs, []))
    else:
        notes.append("The 2000 table: fewer than two releases hold one.")
    counts, cells = _count_steps(releases, fail_above)
    for i in range(1, len(releases)):
        why = timing_not_comparable(releases[i - 1], releases[i])
        if why is not None and releases[i - 1].scale and releases[i].scale:
            notes.append(f"Concurrency curve: no step marked at {i + 1}: {why}.")
    return ReleaseTrend(
        releases=tuple(releases),
        labels=tuple(p.label for p in labels),
        table=table,
        counts=counts,
        count_cells=cells,
        curve=_curve(releases),
        micro=_micro(releases),
        million=_million(releases),
        consistency=_consistency(releases),
        notes=tuple(notes),
    )
