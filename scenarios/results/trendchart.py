"""The trend chart, as inline SVG with svg.py's pieces: a line per series
over runs evenly spaced on x, log y, each point's interval an error bar
and a badge beside a step; a run's label written whole."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from html import escape

from scenarios.results.svg import (
    Mark,
    Series,
    _f,
    _log_ticks,
    curves,
    frame,
    legend_marks,
    time_tick,
    y_ticks,
)

#: The widest a character of an axis label (11 px) is drawn, as a bound.
CHAR = 6.6


def _label_lines(label: str) -> list[str]:
    """A run's label as the lines of its axis label: "ZODB 6.4 (2026-11-26
    11:52:29)" -> ["ZODB 6.4", "2026-11-26 11:52:29"]."""
    found = re.fullmatch(r"(.+) \((.+)\)", label)
    return [found.group(1), found.group(2)] if found else [label]


@dataclasses.dataclass(frozen=True)
class Badge:
    """A sign beside a point of a trend chart: *text* in *colour* (CSS class
    *css*), the point ringed when *ring*."""

    text: str
    colour: str
    css: str
    ring: bool = True


def trend_chart(
    labels: Sequence[str],
    series: Sequence[Series],
    marks: dict[tuple[int, str], Mark],
    badges: Mapping[tuple[int, str], Badge] = {},
    width: int = 520,
    height: int = 250,
) -> str:
    """A line per series over *labels* (runs, evenly spaced on the x axis),
    log y; each point the value with its interval as an error bar, and
    its badge beside it (a history's steps)."""
    left, right = 62, 16
    key, legend_y = legend_marks(series, left, 16, width - right)
    top = int(legend_y) + 16
    lines = [_label_lines(x) for x in labels]
    longest = max(len(line) for x in lines for line in x) * CHAR
    # A label whose lines fit its slot is written level, a line under the
    # other; else slanted whole, the margins sized to hold it all.
    level = longest <= (width - left - right) / len(labels)
    slant = max(len(" ".join(x)) for x in lines) * CHAR
    bottom = 20 + 13 * max(map(len, lines)) if level else int(14 + slant / 2 + 12)
    height += top - 14 + (bottom - 36)
    x0, x1, y0, y1 = left, width - right, height - bottom, top
    values = [v for m in marks.values() for v in (m.low, m.high, m.value) if v > 0]
    lo, hi = (min(values), max(values)) if values else (1e-3, 1.0)
    lo, hi = lo / 1.15, hi * 1.15
    if hi / lo < 10:  # at least a decade, centred on the values
        middle = math.sqrt(lo * hi)
        lo, hi = middle / math.sqrt(10), middle * math.sqrt(10)

    # The first label reaches left of its point: keep it on the chart.
    reach = longest / 2 if level else 0.87 * slant
    inset = max(16.0, reach - left + 8)
    end = max(16.0, longest / 2 - right + 8) if level else 16.0

    def px(i: int) -> float:
        if len(labels) == 1:
            return (x0 + x1) / 2
        return x0 + inset + (x1 - x0 - inset - end) * i / (len(labels) - 1)

    def py(v: float) -> float:
        v = min(max(v, lo), hi)
        return y0 - (y0 - y1) * math.log10(v / lo) / math.log10(hi / lo)

    out = frame(width, height, (x0, x1, y0, y1), "chart trend") + key
    out += y_ticks(x0, x1, py, _log_ticks(lo, hi), time_tick)
    for i in range(len(labels)):
        x = px(i)
        out.append(
            f'<line x1="{_f(x)}" y1="{y1}" x2="{_f(x)}" y2="{y0}" stroke="#e6e9ee"/>'
        )
        if level:
            spans = "".join(
                f'<tspan x="{_f(x)}" dy="{13 if j else 0}">{escape(t)}</tspan>'
                for j, t in enumerate(lines[i])
            )
            out.append(
                f'<text class="version" x="{_f(x)}" y="{y0 + 16}" font-size="11" '
                f'text-anchor="middle" fill="#333">{spans}</text>'
            )
        else:
            out.append(
                f'<text class="version" x="{_f(x)}" y="{y0 + 14}" font-size="11" '
                f'text-anchor="end" fill="#333" transform="rotate(-30 {_f(x)} '
                f'{y0 + 14})">{escape(" ".join(lines[i]))}</text>'
            )

    def beside(i: int, name: str, cx: float, cy: float) -> list[str]:
        badge = badges.get((i, name))
        if badge is None:
            return []
        ring = (
            f'<circle class="step {badge.css}" cx="{_f(cx)}" cy="{_f(cy)}" r="8" '
            f'fill="none" stroke="{badge.colour}" stroke-width="2"/>'
        )
        return [ring] * badge.ring + [
            f'<text class="{badge.css}" x="{_f(cx + 9)}" y="{_f(cy - 6)}" '
            f'font-size="12" fill="{badge.colour}">{escape(badge.text)}</text>'
        ]

    out += curves(series, range(len(labels)), marks, px, py, "trend", beside)
    out.append("</svg>")
    return "".join(out)
