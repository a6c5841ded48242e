"""Grouped bars, as inline SVG (scenarios.results.svg draws every other
chart; the legend, the scale's steps and the fonts are its): a group per
label along x, a bar per series in each, each bar's interval a black
whisker, as RelStorage's SQLite FAQ draws its zodbshootout matrix."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from scenarios.results import svg
from scenarios.results.svg import Mark, Series, y_grid

_f = svg._f  # coordinates as every chart writes them

#: Bars whose values span more than this factor are drawn on a log axis:
#: on a linear one the shortest would be a line or nothing.
LOG_SPAN = 10.0


def bar_chart(
    groups: Sequence[str],
    series: Sequence[Series],
    marks: dict[tuple[str, str], Mark],
    y_label: str,
    y_format: Callable[[float], str] = lambda v: f"{v:g}",
    width: int = 420,
    height: int = 300,
) -> str:
    """Grouped bars: a group per entry of *groups* along x, a bar per series
    in each (shorter is better where the value is a time), linear y from 0
    (log, said in the axis label, when the values span over LOG_SPAN),
    each bar's interval as a black whisker (as RelStorage's FAQ draws its
    matrix).  A missing (group, series) leaves its slot empty."""
    # The bars set the scale; a whisker reaching far above them (a noisy
    # cell) is cut at the top rather than flatten every bar.
    highest = max((m.value for m in marks.values()), default=1.0) or 1.0
    lowest = min((m.value for m in marks.values() if m.value > 0), default=highest)
    log = highest / lowest > LOG_SPAN
    left, right, bottom = 58, 12, 40 + 16 * log  # log: a line saying so
    key, legend_y = svg.legend_marks(series, left, 16, width - right)
    top = int(legend_y) + 20
    height += top - 36 + 16 * log
    x0, x1, y0, y1 = left, width - right, height - bottom, top
    top_value = min(max((m.high for m in marks.values()), default=1.0), highest * 1.5)
    step = svg._nice_step(top_value or highest)
    y_max = math.ceil(max(top_value, highest) / step) * step
    # A decade below the shortest bar's: it stands as a bar, not a line.
    lo = 10 ** math.floor(math.log10(lowest) - 1) if log else 0.0
    if log:
        y_max = 10 ** math.ceil(math.log10(max(top_value, highest)))
        span = f"log scale: the values span {highest / lowest:,.0f}x"

    def py(v: float) -> float:
        if log:
            share = math.log10(min(max(v, lo), y_max) / lo) / math.log10(y_max / lo)
            return y0 - (y0 - y1) * share
        return y0 - (y0 - y1) * min(v, y_max) / y_max

    out = svg.frame(width, height, (x0, x1, y0, y1)) + key
    if log:
        out += svg.y_ticks(x0, x1, py, svg._log_ticks(lo, y_max), y_format)
    else:
        out += y_grid(x0, x1, py, y_max, step, y_format)
    slot = (x1 - x0) / max(1, len(groups))
    bar = slot * 0.8 / max(1, len(series))
    for i, g in enumerate(groups):
        gx = x0 + slot * i + slot * 0.1
        out.append(
            f'<text x="{_f(x0 + slot * (i + 0.5))}" y="{y0 + 16}" font-size="11" '
            f'text-anchor="middle" fill="#444">{escape(g)}</text>'
        )
        for j, s in enumerate(series):
            m = marks.get((g, s.name))
            if m is None:
                continue
            bx = gx + bar * j
            out.append(
                f'<g class="mark"><title>{escape(m.note)}</title>'
                f'<rect x="{_f(bx)}" y="{_f(py(m.value))}" width="{_f(bar * 0.92)}" '
                f'height="{_f(y0 - py(m.value))}" fill="{s.colour}"/>'
            )
            if m.high > m.low:
                cx = bx + bar * 0.46
                out.append(
                    f'<line x1="{_f(cx)}" y1="{_f(py(m.low))}" x2="{_f(cx)}" '
                    f'y2="{_f(py(m.high))}" stroke="#111" stroke-width="1.2"/>'
                )
            out.append("</g>")
    out.append(svg.axis_label(y_label, 14, (y0 + y1) / 2, vertical=True))
    if log:
        out.append(svg.axis_label(span, (x0 + x1) / 2, height - 8))
    out.append("</svg>")
    return "".join(out)
