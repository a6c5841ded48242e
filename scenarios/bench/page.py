"""The run's page: the 2000 table beside today's, a dot chart per group of
rows (the statistic, its interval, every trial), the sweep's and scale's
curves when given, every table and the metadata; inline SVG, no script.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Any, NamedTuple

from scenarios.bench import report
from scenarios.bench import rows as rows_model
from scenarios.bench.phases import PHASES_2000
from scenarios.bench.table2000 import COLUMNS_2000, TABLE_2000
from scenarios.results import formatter, htmlbase, significance, svg
from scenarios.results.htmlbase import Page
from scenarios.results.model import RunResult

COLD_WARM_HOT = (
    "CPU time and RSS exclude server processes.  Cold: new DB and client on "
    "the same data (the OS page cache is not dropped); warm: objects ghosted, "
    "lower caches warm; hot: objects in memory.  Cold minus hot is the time "
    "spent filling the cache."
)


def _seconds_note(iv: significance.Interval) -> str:
    d = formatter.duration
    if not iv.known:
        return f"{d(iv.estimate)} (one trial)"
    return (
        f"{iv.statistic} {d(iv.estimate)}, {iv.confidence:.0%} interval "
        f"{d(iv.low)} - {d(iv.high)}, {iv.n} trials"
    )


def _marks(
    run: RunResult, size: str, rows: Sequence[tuple[str, str]], stat: str
) -> dict[tuple[str, str], svg.Mark]:
    """(label, storage) -> mark, for (label, phase) *rows*."""
    marks = {}
    for label, phase in rows:
        for storage in run.storages:
            r = run.get(storage, phase, size)
            if r is None:
                continue
            values = r.wall_values
            iv = significance.interval(values, stat)
            note = f"{storage}, {phase}: {_seconds_note(iv)}"
            marks[(label, storage)] = svg.Mark(
                iv.estimate, iv.low, iv.high, note, tuple(values)
            )
    return marks


def chart_groups(run: RunResult) -> list[tuple[str, list[tuple[str, str]]]]:
    """(title, [(row label, phase)]) for each chart: the report model's
    groups of the run's rows (scenarios.bench.rows)."""
    return [
        (group, [(r.label, r.phase) for r in rows])
        for group, rows in rows_model.groups(run.phases)
    ]


def _then_and_now(run: RunResult, size: str, stat: str) -> str:
    s = significance.statistic(stat)
    storages = run.storages
    n = report.trial_counts(run, size, {p.name for p in PHASES_2000})
    out = [
        "<table><thead><tr><th></th>",
        f'<th class="group" colspan="{len(COLUMNS_2000)}">2000 (MEMS Exchange)</th>',
        f'<th class="group sep" colspan="{len(storages)}">today, size {escape(size)}'
        f" ({escape(s.label)} of {n})</th></tr><tr><th>task</th>",
    ]
    out += [f"<th>{escape(c)}</th>" for c in COLUMNS_2000]
    out += [
        f"<th{' class=sep' if i == 0 else ''}>{escape(st)}</th>"
        for i, st in enumerate(storages)
    ]
    out.append("</tr></thead><tbody>")
    for task, then in TABLE_2000.items():
        cells = [f"<td>{escape(task)}</td>"]
        cells += [f'<td class="then">{formatter.duration(v)}</td>' for v in then]
        for i, storage in enumerate(storages):
            r = run.get(storage, task, size)
            text = "-"
            if r is not None:
                values = [x.wall_s for x in r.samples]
                text = significance.cell_text(values, s, formatter.duration)
            cells.append(htmlbase.cell(text, ' class="sep"' if i == 0 else ""))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def figures(
    run: RunResult, size: str, stat: str, groups: int | None = None
) -> list[str]:
    """A chart per group of rows (the first *groups* groups; None: all):
    each storage a dot at the statistic, its interval a whisker."""
    s = significance.statistic(stat)
    out = Page(run.metadata)
    for title, rows in chart_groups(run)[:groups]:
        series = htmlbase.series(run.storages)
        marks = _marks(run, size, rows, s.name)
        caption = (
            f"Wall time: dot = {s.label} over the trials, whisker = its "
            f"{1 - significance.ALPHA:.0%} bootstrap interval, ticks = "
            "each trial; log scale."
        )
        if title == rows_model.GROUP_2000:
            series += _then(rows, marks)
            caption += (
                "  Grey hollow marks: the 2000 numbers (0.00 is not drawn on a "
                "log scale)."
            )
        chart = svg.dot_chart([label for label, _ in rows], series, marks)
        out.chart(title, chart, caption)
    return out.parts


def _then(
    rows: list[tuple[str, str]], marks: dict[tuple[str, str], svg.Mark]
) -> list[svg.Series]:
    """The 2000 numbers as reference series, their marks added to *marks*."""
    out = []
    for j, column in enumerate(COLUMNS_2000):
        shape = ("diamond", "square", "triangle")[j]
        ref = svg.Series(f"2000 {column}", svg.REFERENCE, reference=True, shape=shape)
        out.append(ref)
        for label, phase in rows:
            value = TABLE_2000.get(phase, (0, 0, 0))[j]
            marks[(label, ref.name)] = svg.Mark(
                value, value, value, f"2000, {column}, {phase}: {value} s"
            )
    return out


def then_and_now(run: RunResult, size: str, stat: str | None = None) -> str:
    """The 2000 table beside today's, in a box that scrolls on its own when
    wider than the page."""
    name = report.run_statistic(run, stat)
    return f'<div class="scroll">{_then_and_now(run, size, name)}</div>'


class Section(NamedTuple):
    """Another kind's section of a run's page: *render* given the
    statistic's name; *name* and *metadata* for the page's metadata."""

    name: str
    render: Callable[[str], str]
    metadata: dict[str, Any]


def page(
    run: RunResult,
    stat: str | None = None,
    sections: Sequence[Section] = (),
) -> str:
    """The whole report as one HTML document, time cells and charts by
    *stat* (None: the statistic the run records, as the text report);
    *sections*, given the statistic's name, render other kinds' sections
    after the run's figures (report --sweep, --scale: scenarios.registry
    supplies them, so bench imports no other command)."""
    s = significance.statistic(report.run_statistic(run, stat))
    meta = run.metadata
    p = Page(meta)
    cpus = f"{meta.get('host', {}).get('cpu_count', '?')} CPUs"
    storages = "storages: " + ", ".join(run.storages)
    p.heading("vfab-loadtest results", *p.about("ZODB", "ZEO"), cpus, storages)
    p.note(
        f"{significance.legend(s)} Times are wall time unless said otherwise.  "
        "Noise on a shared machine only slows a trial down, so the low end of "
        "the trials is the best estimate of what the code costs."
    ).machine()
    for size in run.sizes:
        p.section(f"The 2000 table beside today's (size {size})")
        p.raw(then_and_now(run, size, s.name))
        note = (
            "2000: seconds on the MEMS Exchange's machine, small data set, "
            "in-memory / FileStorage / ZEO.  Today: this run's storages."
        )
        if size != "small":
            note += f"  Today's data set is {size}; 2000's was small."
        p.note(note).section(f"Phases by storage (size {size})")
        p.raw(*figures(run, size, s.name))
    p.raw(*(section.render(s.name) for section in sections))
    p.section("Tables").tables(report.tables(run, s.name))
    left_out = report.omitted(run, s.name)
    if left_out:
        p.note(f"Not shown (every cell equal or empty): {'; '.join(left_out)}.")
    p.note(COLD_WARM_HOT).section("Metadata").metadata("run")
    for section in sections:
        p.metadata(section.name, section.metadata)
    return p.document(f"vfab-loadtest results {meta.get('date', '')}".strip())
