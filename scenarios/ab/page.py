"""`vfab-bench ab --html`, and the command's view (view()): the verdict
first, the two environments and what differs, then per cell source a
chart of every cell's paired ratio B/A with its interval (largest change
first, the line at 1: no change) and the table beside it; offline, no
script (scenarios.results.htmlbase)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from scenarios.ab import report
from scenarios.ab.cells import SOURCES
from scenarios.ab.judge import Judged, judge, verdict
from scenarios.ab.model import ABRun
from scenarios.results import htmlbase
from scenarios.results.kinds import View

#: The chart's geometry (px): the label column, the plot, a row.
LABEL_W, PLOT_W, ROW_H = 300, 420, 18
#: The narrowest half-span of the chart's axis (a ratio of 1.05).
MIN_SPAN = math.log(1.05)
#: A cell's colour by its verdict.
SLOWER, FASTER, SAME = "#b42318", "#1a7f37", "#6b7280"


def colour(j: Judged) -> str:
    if not j.significant or j.ratio is None:
        return SAME
    return SLOWER if j.ratio > 1 else FASTER


def chart(judged: Sequence[Judged]) -> str:
    """One row per cell: its interval as a line, its ratio as a dot, on a
    log axis centred on 1."""
    shown = [j for j in judged if j.ratio is not None]
    if not shown:
        return ""
    ends = [abs(math.log(v)) for j in shown for v in (j.low, j.high, j.ratio) if v]
    span = max([MIN_SPAN, *ends]) * 1.1

    def x(v: float) -> float:
        return LABEL_W + PLOT_W / 2 * (1 + math.log(v) / span)

    height = ROW_H * (len(shown) + 1) + 8
    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {LABEL_W + PLOT_W + 10} {height}" '
        f'width="{LABEL_W + PLOT_W + 10}" height="{height}" font-size="12" '
        'font-family="system-ui, sans-serif">',
        f'<line x1="{x(1):.1f}" y1="0" x2="{x(1):.1f}" y2="{height - ROW_H}" '
        'stroke="#9aa3ad" stroke-dasharray="3 3"/>',
    ]
    for i, j in enumerate(shown):
        assert j.ratio is not None
        y = ROW_H * (i + 0.5) + 4
        low, high = j.low or j.ratio, j.high or j.ratio
        c = colour(j)
        note = f"{j.name}: B/A {j.ratio:.3f} [{low:.3f} - {high:.3f}], {j.words}"
        out += [
            f'<text x="{LABEL_W - 8}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(j.name)}</text>",
            f'<line x1="{x(low):.1f}" y1="{y:.1f}" x2="{x(high):.1f}" y2="{y:.1f}" '
            f'stroke="{c}" stroke-width="2"/>',
            f'<circle cx="{x(j.ratio):.1f}" cy="{y:.1f}" r="3.5" fill="{c}">'
            f"<title>{escape(note)}</title></circle>",
        ]
    base = height - ROW_H + 12
    for v in (math.exp(-span / 1.1), 1.0, math.exp(span / 1.1)):
        out.append(
            f'<text x="{x(v):.1f}" y="{base:.1f}" text-anchor="middle" '
            f'fill="#5a6170">{v:.3f}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def rows(judged: Sequence[Judged]) -> list[list[str]]:
    """report's rows with the interval's ends after the half-width."""
    out = []
    for j, row in zip(judged, report.cell_rows(list(judged)), strict=True):
        ends = "-" if j.low is None or j.high is None else f"{j.low:.3f}-{j.high:.3f}"
        out.append([*row[:5], ends, row[5]])
    return out


def page(run: ABRun) -> str:
    judged = judge(run.cells)
    date = str(run.metadata.get("date", ""))
    body = [
        "<h1>vfab-loadtest ab</h1>",
        f'<p class="lede">{escape(date)}</p>',
        f"<h2>Verdict: {escape(verdict(judged))}</h2>",
        '<ul class="notes">',
        *(f"<li>{escape(line)}</li>" for line in report.about(run, judged)),
        "</ul>",
    ]
    header = ["cell", "A median", "B median", "B/A", "95%", "interval", "verdict"]
    for source in dict.fromkeys(j.cell.source for j in judged):
        mine = [j for j in judged if j.cell.source == source]
        body += [
            f"<h2>{escape(SOURCES.get(source, source))}</h2>",
            '<p class="note">Each cell\'s ratio B/A (the geometric mean of its '
            "pairs' ratios) and its 95% bootstrap interval over pairs, largest "
            "change first; right of the dashed line B is slower.  Red: "
            "significantly slower, green: significantly faster.</p>",
            f"<figure>{chart(mine)}</figure>",
            f'<div class="scroll">{htmlbase.table(header, rows(mine))}</div>',
        ]
    body += ["<h2>Metadata</h2>", htmlbase.metadata("ab", run.metadata)]
    return htmlbase.document(f"vfab-loadtest ab {date}".strip(), body)


def view(run: ABRun) -> View:
    """What `ab` shows: the text, the JSON, this page."""
    return View(
        text=report.text(run),
        files={"json": lambda: report.document(run), "html": lambda: page(run)},
    )
