"""The history as one self-contained HTML page: the runs in order, the steps,
a trend chart per row (scenarios.results.svg) and the table of values;
section() is the body alone, for a page that embeds it.
"""

from __future__ import annotations

from html import escape

from scenarios.results import environment, significance, svg, trendchart
from scenarios.results.formatter import duration as format_time
from scenarios.results.htmlbase import Markup, Page, table
from scenarios.trend.table import (
    BY_DATE,
    FASTER,
    MISSING,
    SLOWER,
    UNDECIDED,
    Cell,
    Step,
    Trend,
)

#: Colours of the step marks: slower, faster, undecided.
STEP_COLOURS = {SLOWER: "#b42318", FASTER: "#067647", UNDECIDED: "#8a8a8a"}

#: The history page's own rules, after the style sheet every view shares.
CSS = """
main { max-width: 1100px; }
h3 { font-size: 14px; margin: 4px 0; }
.trends { display: flex; flex-wrap: wrap; gap: 10px 18px; }
.trends figure { flex: 1 1 500px; margin: 6px 0; }
table { font-size: 13px; }
th, td { padding: 3px 9px; }
th { text-align: left; }
table.runs td, table.steps td:nth-child(-n+4) { white-space: normal;
  text-align: left; }
.slower { color: #b42318; font-weight: 600; }
.faster { color: #067647; font-weight: 600; }
.undecided { color: #8a8a8a; }
"""

_CLASS = {SLOWER: "slower", FASTER: "faster", UNDECIDED: "undecided"}


def _note(history: Trend, cell: Cell, i: int) -> str:
    iv = history.interval(cell, i)
    assert iv is not None
    storage, row = cell
    text = (
        f"{storage}, {row}, {history.points[i].label}: {iv.statistic} "
        f"{format_time(iv.estimate)}"
    )
    if iv.known:
        text += f" ({format_time(iv.low)} - {format_time(iv.high)}), {iv.n} trials"
    step = history.step(cell, i)
    if step is not None:
        text += f"; from the previous run: {step.verdict}"
    return text


def _chart(history: Trend, row: str) -> str:
    storages = [s for s in history.storages if (s, row) in history.samples]
    series = [
        svg.Series(s, svg.PALETTE[history.storages.index(s) % len(svg.PALETTE)])
        for s in storages
    ]
    marks: dict[tuple[int, str], svg.Mark] = {}
    badges: dict[tuple[int, str], trendchart.Badge] = {}
    for storage in storages:
        cell = (storage, row)
        for i in history.samples[cell]:
            iv = history.interval(cell, i)
            assert iv is not None
            marks[(i, storage)] = svg.Mark(
                iv.estimate, iv.low, iv.high, _note(history, cell, i)
            )
            step = history.step(cell, i)
            if step is not None and step.mark in STEP_COLOURS:
                # A step is ringed; a doubt only noted.
                badges[(i, storage)] = trendchart.Badge(
                    step.mark,
                    STEP_COLOURS[step.mark],
                    _CLASS[step.mark],
                    ring=step.mark != UNDECIDED,
                )
    labels = [p.label for p in history.points]
    return trendchart.trend_chart(labels, series, marks, badges)


def _runs_table(history: Trend) -> str:
    by_date = history.by == BY_DATE  # the label is the date
    names = ["#", "date (UTC)" if by_date else history.ordered_by()]
    names += [] if by_date else ["date (UTC)"]
    rows = [
        [str(i), p.label, *([] if by_date else [p.when]), str(p.path), str(p.trials),
         ", ".join(p.changed)]
        for i, p in enumerate(history.points, 1)
    ]  # fmt: skip
    return table([*names, "file", "trials", "also changed"], rows, "runs")


def _steps_table(history: Trend, steps: list[Step]) -> str:
    rows = []
    for s in steps:
        d = s.difference
        a, b = history.points[s.before], history.points[s.after]
        change = Markup(
            f'<span class="{_CLASS.get(s.mark, "")}">{escape(s.verdict)}</span>'
        )
        values = f"{format_time(d.old.estimate)} → {format_time(d.new.estimate)}"
        q = "" if d.q_value is None else f"{d.q_value:.3g}"
        rows.append([*s.cell, a.label, b.label, values, change, f"{d.p_value:.3g}", q])
    header = ["storage", "task", "from", "to", "values", "change", "p", "q"]
    return table(header, rows, "steps")


def _values_table(history: Trend) -> str:
    labels = [p.label for p in history.points]
    rows = []
    for row in history.rows:
        cells = [row]
        for storage in history.storages:
            cell = (storage, row)
            if cell not in history.samples:
                cells.append(MISSING)
                continue
            parts = []
            for label, value in zip(labels, history.cell_values(cell), strict=True):
                cls = _CLASS.get(value[-1] if value != MISSING else "")
                text = escape(value)
                if cls:
                    text = f'<span class="{cls}">{text}</span>'
                parts.append(f'<span title="{escape(label)}">{text}</span>')
            cells.append(Markup("  ".join(parts)))
        rows.append(cells)
    return table(["task", *history.storages], rows, "values")


def load_note(history: Trend) -> str:
    """The load each run recorded at its start, as a chart's load note."""
    loads = []
    for i, p in enumerate(history.points, 1):
        start = environment.of(p.run.metadata).get("load_average_start")
        loads.append(f"run {i} {start[0]:.2f}" if start else f"run {i} ?")
    return "Load average (1 min) at the start: " + ", ".join(loads) + "."


def section(history: Trend) -> str:
    """The history's body: runs, steps, trend charts, values."""
    s = history.statistic
    marked = history.marked()
    undecided = history.undecided()
    p = Page().note(history.heading(), *history.notes).section("Runs, in order")
    p.raw(_runs_table(history))
    if history.skipped:
        p.note(f"Left out (not run files): {'; '.join(history.skipped)}")
    p.section(f"Steps ({len(marked)})")
    if marked:
        p.raw(_steps_table(history, marked))
    else:
        p.note("None: no change between consecutive runs was significant.")
    if undecided:
        p.note(
            f"{len(undecided)} changes could not be decided: too few trials "
            f"({history.trials_needed()} a side needed; run more trials with "
            "--repeat).",
            css="note undecided",
        )
    p.section(f"Trends ({history.metric} time, {s.label})")
    figures = Page()
    for row in history.rows:
        figures.chart(row, _chart(history, row), load=load_note(history))
    p.raw(
        f'<div class="trends">{figures.html()}</div>'.replace(
            "<figure>", '<figure class="cell-trend">'
        )
    )
    p.note(
        f"Each point: the {s.label} over the run's trials; bar: its "
        f"{1 - significance.ALPHA:.0%} bootstrap interval; log scale.  Ringed "
        f"{SLOWER} (red): significantly slower than the previous run; {FASTER} "
        f"(green): faster.  {UNDECIDED} (grey): too few trials to tell."
    )
    return p.section("Values").raw(_values_table(history)).html()


def page(history: Trend) -> str:
    """The history as one HTML document."""
    first, last = history.points[0], history.points[-1]
    title = f"vfab-loadtest history: {first.label} to {last.label}"
    p = Page().heading(
        title,
        f"{len(history.points)} runs",
        f"storages: {', '.join(history.storages)}",
        f"{len(history.rows)} tasks",
    )
    for i, point in enumerate(history.points, 1):
        # Each run's machine: the one a step may owe to.
        lines = environment.lines(point.run.metadata)
        if lines:
            busy = any(x.startswith("Warning") for x in lines)
            text = f"Run {i} ({point.label}): " + " ".join(lines)
            p.note(text, css="note wide" if busy else "note")
    return p.raw(section(history)).document(title, CSS)
