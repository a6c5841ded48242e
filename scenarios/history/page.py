"""The history (scenarios.history.trend) as one self-contained HTML page:
inline CSS and SVG, no script and no external resource, so it opens
offline.

What it shows: the runs in order (version, date, file, trials, what else
changed), the steps (significant changes between consecutive runs, as
compare words them), a trend chart per row with a line per storage over
the runs (the versions on the x axis, each point the statistic with its
bootstrap interval, steps ringed and marked), and the table of values.
section() is the body alone, for a page that embeds the history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from scenarios.history.trend import (
    BY_DATE,
    FASTER,
    MISSING,
    SLOWER,
    UNDECIDED,
    Cell,
    History,
    Step,
)
from scenarios.results import environment, htmlbase, significance, svg
from scenarios.results.formatter import duration as format_time

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
td.text { white-space: normal; text-align: left; }
.slower { color: #b42318; font-weight: 600; }
.faster { color: #067647; font-weight: 600; }
.undecided { color: #8a8a8a; }
"""

_CLASS = {SLOWER: "slower", FASTER: "faster", UNDECIDED: "undecided"}


def _f(x: float) -> str:
    return f"{x:.1f}"


def _log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks from lo to hi (decades only over a wide range)."""
    out = []
    decade = 10 ** math.floor(math.log10(lo))
    wide = hi / lo > 1000
    while decade <= hi:
        for k in (1,) if wide else (1, 2, 5):
            v = decade * k
            if lo <= v <= hi:
                out.append(v)
        decade *= 10
    return out


def trend_chart(
    labels: Sequence[str],
    series: Sequence[svg.Series],
    marks: dict[tuple[int, str], svg.Mark],
    steps: dict[tuple[int, str], str],
    width: int = 520,
    height: int = 250,
) -> str:
    """A line per series over the runs (*labels*, evenly spaced on the x
    axis), log y; each point the value with its interval as an error bar;
    a point *steps* marks as a step (SLOWER, FASTER) is ringed in the
    mark's colour with the mark beside it; UNDECIDED gets the mark alone."""
    left, right = 62, 16
    key, legend_y = svg.legend_marks(series, left, 16, width - right)
    top = int(legend_y) + 16
    slanted = len(labels) > 4 or max(len(x) for x in labels) > 14
    bottom = 74 if slanted else 36
    height += top - 14 + (bottom - 36)
    x0, x1, y0, y1 = left, width - right, height - bottom, top
    values = [v for m in marks.values() for v in (m.low, m.high, m.value) if v > 0]
    lo, hi = (min(values), max(values)) if values else (1e-3, 1.0)
    lo, hi = lo / 1.15, hi * 1.15
    if hi / lo < 10:  # at least a decade, centred on the values
        middle = math.sqrt(lo * hi)
        lo, hi = middle / math.sqrt(10), middle * math.sqrt(10)

    # A slanted first label reaches left of its point: keep it on the chart.
    inset = max(16.0, 0.87 * 6 * len(labels[0]) - left + 8) if slanted else 16.0

    def px(i: int) -> float:
        if len(labels) == 1:
            return (x0 + x1) / 2
        return x0 + inset + (x1 - x0 - inset - 16) * i / (len(labels) - 1)

    def py(v: float) -> float:
        v = min(max(v, lo), hi)
        return y0 - (y0 - y1) * math.log10(v / lo) / math.log10(hi / lo)

    out = [
        f'<svg class="chart trend" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" {svg.FONT}>',
        f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" '
        'fill="#f8f9fb"/>',
    ]
    out += key
    for v in _log_ticks(lo, hi):
        out.append(
            f'<line x1="{x0}" y1="{_f(py(v))}" x2="{x1}" y2="{_f(py(v))}" '
            'stroke="#dde1e7"/>'
            f'<text x="{x0 - 6}" y="{_f(py(v) + 4)}" font-size="11" '
            f'text-anchor="end" fill="#444">{svg.time_tick(v)}</text>'
        )
    for i, label in enumerate(labels):
        x = px(i)
        out.append(
            f'<line x1="{_f(x)}" y1="{y1}" x2="{_f(x)}" y2="{y0}" stroke="#e6e9ee"/>'
        )
        if slanted:
            out.append(
                f'<text class="version" x="{_f(x)}" y="{y0 + 14}" font-size="11" '
                f'text-anchor="end" fill="#333" transform="rotate(-30 {_f(x)} '
                f'{y0 + 14})">{escape(label)}</text>'
            )
        else:
            out.append(
                f'<text class="version" x="{_f(x)}" y="{y0 + 16}" font-size="11" '
                f'text-anchor="middle" fill="#333">{escape(label)}</text>'
            )
    for s in series:
        points = [
            (i, marks[(i, s.name)]) for i in range(len(labels)) if (i, s.name) in marks
        ]
        if not points:
            continue
        path = " ".join(f"{_f(px(i))},{_f(py(m.value))}" for i, m in points)
        out.append(
            f'<polyline class="trend" points="{path}" fill="none" '
            f'stroke="{s.colour}" stroke-width="2"/>'
        )
        for i, m in points:
            cx, cy = px(i), py(m.value)
            parts = [f"<title>{escape(m.note)}</title>" if m.note else ""]
            if m.high > m.low:
                parts.append(
                    f'<path d="M{_f(cx)},{_f(py(m.low))} V{_f(py(m.high))}" '
                    f'stroke="{s.colour}" stroke-width="1.5" fill="none"/>'
                )
            parts.append(
                f'<circle cx="{_f(cx)}" cy="{_f(cy)}" r="4" fill="{s.colour}" '
                'stroke="white" stroke-width="1"/>'
            )
            mark = steps.get((i, s.name))
            if mark is not None:
                colour = STEP_COLOURS[mark]
                if mark != UNDECIDED:  # a step is ringed; a doubt only noted
                    parts.append(
                        f'<circle class="step {_CLASS[mark]}" cx="{_f(cx)}" '
                        f'cy="{_f(cy)}" r="8" fill="none" stroke="{colour}" '
                        'stroke-width="2"/>'
                    )
                parts.append(
                    f'<text class="{_CLASS[mark]}" x="{_f(cx + 9)}" y="{_f(cy - 6)}" '
                    f'font-size="12" fill="{colour}">{mark}</text>'
                )
            out.append(f'<g class="mark">{"".join(parts)}</g>')
    out.append("</svg>")
    return "".join(out)


def _note(history: History, cell: Cell, i: int) -> str:
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


def _chart(history: History, row: str) -> str:
    storages = [s for s in history.storages if (s, row) in history.samples]
    series = [
        svg.Series(s, svg.PALETTE[history.storages.index(s) % len(svg.PALETTE)])
        for s in storages
    ]
    marks: dict[tuple[int, str], svg.Mark] = {}
    steps: dict[tuple[int, str], str] = {}
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
                steps[(i, storage)] = step.mark
    labels = [p.label for p in history.points]
    return trend_chart(labels, series, marks, steps)


def _runs_table(history: History) -> str:
    by_date = history.by == BY_DATE  # the label is the date
    names = ["#", "date (UTC)" if by_date else history.ordered_by()]
    names += [] if by_date else ["date (UTC)"]
    names += ["file", "trials", "also changed"]
    head = "".join(f"<th>{escape(h)}</th>" for h in names)
    rows = []
    for i, p in enumerate(history.points, 1):
        texts = [p.label, *([] if by_date else [p.when]), str(p.path)]
        rows.append(
            f"<tr><td>{i}</td>"
            + "".join(f'<td class="text">{escape(t)}</td>' for t in texts)
            + f'<td>{p.trials}</td><td class="text">{escape(", ".join(p.changed))}'
            "</td></tr>"
        )
    return _table("runs", head, rows)


def _steps_table(history: History, steps: list[Step]) -> str:
    head = "".join(
        f"<th>{h}</th>" for h in ("storage", "task", "from", "to", "values", "change",
                                  "p", "q")
    )  # fmt: skip
    rows = []
    for s in steps:
        d = s.difference
        a, b = history.points[s.before], history.points[s.after]
        cls = _CLASS.get(s.mark, "")
        q = "" if d.q_value is None else f"{d.q_value:.3g}"
        rows.append(
            f'<tr class="step"><td>{escape(s.cell[0])}</td><td class="text">'
            f'{escape(s.cell[1])}</td><td class="text">{escape(a.label)}</td>'
            f'<td class="text">{escape(b.label)}</td><td>'
            f"{escape(format_time(d.old.estimate))} → "
            f"{escape(format_time(d.new.estimate))}</td>"
            f'<td class="{cls}">{escape(s.verdict)}</td><td>{d.p_value:.3g}</td>'
            f"<td>{q}</td></tr>"
        )
    return _table("steps", head, rows)


def _values_table(history: History) -> str:
    labels = [p.label for p in history.points]
    head = "<th>task</th>" + "".join(f"<th>{escape(s)}</th>" for s in history.storages)
    rows = []
    for row in history.rows:
        cells = [f"<td>{escape(row)}</td>"]
        for storage in history.storages:
            cell = (storage, row)
            if cell not in history.samples:
                cells.append(f"<td>{MISSING}</td>")
                continue
            parts = []
            for label, value in zip(labels, history.cell_values(cell), strict=True):
                mark = value[-1] if value != MISSING else ""
                cls = _CLASS.get(mark)
                text = escape(value)
                if cls:
                    text = f'<span class="{cls}">{text}</span>'
                parts.append(f'<span title="{escape(label)}">{text}</span>')
            cells.append(f"<td>{'  '.join(parts)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return _table("values", head, rows)


def _table(name: str, head: str, rows: list[str]) -> str:
    return (
        f'<table class="{name}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def section(history: History) -> str:
    """The history's body: runs, steps, trend charts, values."""
    s = history.statistic
    marked = history.marked()
    undecided = history.undecided()
    body = [
        f'<p class="note">{escape(history.heading())}</p>',
        *(f'<p class="note">{escape(n)}</p>' for n in history.notes),
        "<h2>Runs, in order</h2>",
        _runs_table(history),
    ]
    if history.skipped:
        left_out = escape("; ".join(history.skipped))
        body.append(f'<p class="note">Left out (not run files): {left_out}</p>')
    body.append(f"<h2>Steps ({len(marked)})</h2>")
    if marked:
        body.append(_steps_table(history, marked))
    else:
        body.append(
            '<p class="note">None: no change between consecutive runs was '
            "significant.</p>"
        )
    if undecided:
        body.append(
            f'<p class="note undecided">{len(undecided)} changes could not be '
            f"decided: too few trials ({history.trials_needed()} a side "
            "needed; run more trials with --repeat).</p>"
        )
    body.append(f"<h2>Trends ({history.metric} time, {escape(s.label)})</h2>")
    figures = [
        f'<figure class="cell-trend"><h3>{escape(row)}</h3>'
        f"{_chart(history, row)}</figure>"
        for row in history.rows
    ]
    body.append(f'<div class="trends">{"".join(figures)}</div>')
    body.append(
        '<p class="note">Each point: the '
        f"{escape(s.label)} over the run's trials; bar: its "
        f"{1 - significance.ALPHA:.0%} bootstrap interval; log scale.  Ringed "
        f"{SLOWER} (red): significantly slower than the previous run; {FASTER} "
        f"(green): faster.  {UNDECIDED} (grey): too few trials to tell.</p>"
    )
    body.append("<h2>Values</h2>")
    body.append(_values_table(history))
    return "".join(body)


def page(history: History) -> str:
    """The history as one HTML document."""
    first, last = history.points[0], history.points[-1]
    title = f"vfab-loadtest history: {first.label} to {last.label}"
    lede = (
        f"{len(history.points)} runs · storages: {', '.join(history.storages)} · "
        f"{len(history.rows)} tasks"
    )
    body = [f"<h1>{escape(title)}</h1>", f'<p class="lede">{escape(lede)}</p>']
    body += machines(history)
    return htmlbase.document(title, [*body, section(history)], CSS)


def machines(history: History) -> list[str]:
    """Each run's load average, speed probe and busy warnings, a line per
    run (the machine a step may owe to)."""
    out = []
    for i, p in enumerate(history.points, 1):
        lines = environment.lines(p.run.metadata)
        if lines:
            css = "note wide" if any(x.startswith("Warning") for x in lines) else "note"
            text = escape(f"Run {i} ({p.label}): " + " ".join(lines))
            out.append(f'<p class="{css}">{text}</p>')
    return out
