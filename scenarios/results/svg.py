"""Charts as inline SVG (no script, no plotting library, so a page opens
offline): the pieces every chart shares (frame, legend, axes, marks), a
dot chart (rows of intervals on a log scale), a line chart (a curve per
series), and side_by_side() for a standalone file (--plot).  A <title> on
every mark gives its numbers on hover.  Grouped bars are drawn in
bars.py, values across runs in trendchart.py, with the same pieces.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from html import escape

from scenarios.results import formatter

#: Tableau 10: distinct for the first few series, readable when printed.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
REFERENCE = "#8a8a8a"
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif"'


@dataclasses.dataclass(frozen=True)
class Mark:
    """A value with its interval (low == high: none), its hover text, and
    the raw values it summarises (each trial, drawn as a tick)."""

    value: float
    low: float
    high: float
    note: str = ""
    trials: tuple[float, ...] = ()


@dataclasses.dataclass(frozen=True)
class Series:
    name: str
    colour: str
    #: A reference series (the 2000 numbers): hollow *shape*, no interval.
    reference: bool = False
    dash: str = ""
    shape: str = "diamond"


#: A round axis tick (the formatter's; the name stays for callers).
time_tick = formatter.axis_seconds


def _f(x: float) -> str:
    return f"{x:.1f}"


def frame(
    width: int,
    height: int,
    plot: tuple[float, float, float, float] | None = None,
    css: str = "chart",
) -> list[str]:
    """A chart's opening: the <svg> element and, given *plot* (x0, x1, y0,
    y1), its plotting area's background."""
    out = [
        f'<svg class="{css}" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" {FONT}>'
    ]
    if plot is not None:
        x0, x1, y0, y1 = plot
        out.append(
            f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" '
            'fill="#f8f9fb"/>'
        )
    return out


def axis_label(text: str, x: float, y: float, vertical: bool = False) -> str:
    """An axis's name: centred at (x, y), turned up for a y axis."""
    turn = f' transform="rotate(-90 {x} {y})"' if vertical else ""
    return (
        f'<text x="{x}" y="{y}" font-size="12" text-anchor="middle" '
        f'fill="#555"{turn}>{escape(text)}</text>'
    )


def legend_marks(
    series: Sequence[Series], x: float, y: float, right: float
) -> tuple[list[str], float]:
    """The legend from (x, y), wrapping before *right*: its elements and
    its last line's y (every chart here draws its legend with it)."""
    out = []
    start = x
    for s in series:
        needed = 42 + 7 * len(s.name)
        if x > start and x + needed - 14 > right:
            x, y = start, y + 18
        if s.reference:
            out.append(_hollow(s.shape, x + 11, y, 5, s.colour))
        else:
            out.append(
                f'<line x1="{_f(x)}" y1="{_f(y)}" x2="{_f(x + 22)}" y2="{_f(y)}" '
                f'stroke="{s.colour}" stroke-width="2" '
                f'stroke-dasharray="{s.dash}"/>'
                f'<circle cx="{_f(x + 11)}" cy="{_f(y)}" r="3.5" fill="{s.colour}"/>'
            )
        out.append(
            f'<text x="{_f(x + 28)}" y="{_f(y + 4)}" font-size="12" '
            f'fill="#333">{escape(s.name)}</text>'
        )
        x += needed
    return out, y


def _hollow(shape: str, x: float, y: float, r: float, colour: str) -> str:
    """A hollow marker: "diamond", "square" or "triangle"."""
    corners = {
        "diamond": [(0, -r), (r, 0), (0, r), (-r, 0)],
        "square": [(-0.8 * r, -0.8 * r), (0.8 * r, -0.8 * r), (0.8 * r, 0.8 * r),
                   (-0.8 * r, 0.8 * r)],
        "triangle": [(0, -r), (r, 0.8 * r), (-r, 0.8 * r)],
    }[shape]  # fmt: skip
    points = " ".join(f"{_f(x + dx)},{_f(y + dy)}" for dx, dy in corners)
    return (
        f'<polygon points="{points}" fill="white" stroke="{colour}" '
        'stroke-width="1.5"/>'
    )


def _log_domain(values: list[float]) -> tuple[float, float]:
    positive = [v for v in values if v > 0]
    if not positive:
        return 1e-6, 1.0
    lo = 10 ** math.floor(math.log10(min(positive)))
    hi = 10 ** math.ceil(math.log10(max(positive)))
    return (lo, hi * 10) if hi <= lo else (lo, hi)


def dot_chart(
    rows: Sequence[str],
    series: Sequence[Series],
    marks: dict[tuple[str, str], Mark],
    x_label: str = "seconds (log scale)",
    width: int = 960,
    label_width: int = 230,
) -> str:
    """One band per row, one lane per series: a dot at the value and a
    whisker over its interval, on a log x axis (values <= 0 are not drawn)."""
    lane = 13
    band = max(24, 8 + lane * len(series))
    bottom, right = 42, 24
    x0, x1 = label_width, width - right
    key, legend_y = legend_marks(series, x0, 14, x1)
    top = int(legend_y) + 20
    height = top + band * len(rows) + bottom
    lo, hi = _log_domain(
        [v for m in marks.values() for v in (m.low, m.high, *m.trials)]
    )

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return x0 + (x1 - x0) * math.log10(v / lo) / math.log10(hi / lo)

    out = frame(width, height) + key
    for i, row in enumerate(rows):
        y = top + i * band
        if i % 2 == 0:
            out.append(
                f'<rect x="0" y="{y}" width="{width}" height="{band}" fill="#f4f6f9"/>'
            )
        out.append(
            f'<text x="{x0 - 10}" y="{_f(y + band / 2 + 4)}" font-size="12.5" '
            f'text-anchor="end" fill="#222">{escape(row)}</text>'
        )
    # decades and their 2s and 5s
    decade = lo
    plot_bottom = top + band * len(rows)
    while decade <= hi * 1.0001:
        for k in (1, 2, 5):
            v = decade * k
            if v > hi * 1.0001:
                break
            major = k == 1
            out.append(
                f'<line x1="{_f(x(v))}" y1="{top}" x2="{_f(x(v))}" '
                f'y2="{plot_bottom}" stroke="{"#c9ced6" if major else "#e6e9ee"}"/>'
            )
            if major or (hi / lo <= 1000):
                out.append(
                    f'<text x="{_f(x(v))}" y="{plot_bottom + 16}" font-size="11" '
                    f'text-anchor="middle" fill="{"#444" if major else "#888"}">'
                    f"{time_tick(v)}</text>"
                )
        decade *= 10
    out.append(axis_label(x_label, (x0 + x1) / 2, height - 6))
    for i, row in enumerate(rows):
        for j, s in enumerate(series):
            m = marks.get((row, s.name))
            if m is None or m.value <= 0:
                continue
            cy = top + i * band + (band - lane * len(series)) / 2 + lane * (j + 0.5)
            title = f"<title>{escape(m.note)}</title>" if m.note else ""
            if s.reference:
                marker = _hollow(s.shape, x(m.value), cy, 5, s.colour)
                out.append(f'<g class="reference">{title}{marker}</g>')
                continue
            parts = [title]
            for t in m.trials:
                if t > 0:
                    parts.append(
                        f'<line class="trial" x1="{_f(x(t))}" y1="{_f(cy - 5)}" '
                        f'x2="{_f(x(t))}" y2="{_f(cy + 5)}" stroke="{s.colour}" '
                        'stroke-width="1" stroke-opacity="0.55"/>'
                    )
            if m.high > m.low:
                parts.append(
                    f'<line x1="{_f(x(m.low))}" y1="{_f(cy)}" x2="{_f(x(m.high))}" '
                    f'y2="{_f(cy)}" stroke="{s.colour}" stroke-width="2.5" '
                    'stroke-linecap="round"/>'
                )
            parts.append(
                f'<circle cx="{_f(x(m.value))}" cy="{_f(cy)}" r="4.5" '
                f'fill="{s.colour}" stroke="white" stroke-width="1"/>'
            )
            out.append(f'<g class="mark">{"".join(parts)}</g>')
    out.append("</svg>")
    return "".join(out)


def _nice_step(span: float) -> float:
    raw = span / 5 if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(k * power for k in (1, 2, 2.5, 5, 10) if k * power >= raw)


def line_chart(
    xs: Sequence[int],
    series: Sequence[Series],
    marks: dict[tuple[int, str], Mark],
    x_label: str,
    y_label: str,
    y_format: Callable[[float], str] = lambda v: f"{v:g}",
    width: int = 620,
    height: int = 380,
) -> str:
    """A line per series over log-scaled x, linear y from 0, with the
    interval of each point as an error bar."""
    left, right, bottom = 64, 20, 48
    key, legend_y = legend_marks(series, left, 16, width - right)
    top = int(legend_y) + 28
    height += top - 44
    x0, x1, y0, y1 = left, width - right, height - bottom, top
    lo, hi = float(min(xs)), float(max(xs))
    if hi <= lo:
        lo, hi = lo / 2, hi * 2
    top_value = max((m.high for m in marks.values()), default=1.0) or 1.0
    step = _nice_step(top_value)
    y_max = math.ceil(top_value / step) * step

    def px(v: float) -> float:
        return x0 + (x1 - x0) * math.log10(v / lo) / math.log10(hi / lo)

    def py(v: float) -> float:
        return y0 - (y0 - y1) * v / y_max

    out = frame(width, height, (x0, x1, y0, y1)) + key
    out += y_grid(x0, x1, py, y_max, step, y_format)
    for n in xs:
        out.append(
            f'<line x1="{_f(px(n))}" y1="{y1}" x2="{_f(px(n))}" y2="{y0}" '
            'stroke="#e6e9ee"/>'
            f'<text x="{_f(px(n))}" y="{y0 + 16}" font-size="11" '
            f'text-anchor="middle" fill="#444">{n:,}</text>'
        )
    out.append(axis_label(x_label, (x0 + x1) / 2, height - 8))
    out.append(axis_label(y_label, 14, (y0 + y1) / 2, vertical=True))
    out += curves(series, xs, marks, px, py)
    out.append("</svg>")
    return "".join(out)


def curves(
    series: Sequence[Series],
    xs: Sequence[int],
    marks: Mapping[tuple[int, str], Mark],
    px: Callable[[int], float],
    py: Callable[[float], float],
    css: str = "",
    beside: Callable[[int, str, float, float], list[str]] = lambda *_: [],
) -> list[str]:
    """A line per series through its marks at *xs* (*px*, *py*: the
    coordinates), each point drawn by _point() with what *beside* adds
    given (x, series name, cx, cy)."""
    out = []
    cls = f' class="{css}"' if css else ""
    for s in series:
        points = [(n, marks[(n, s.name)]) for n in xs if (n, s.name) in marks]
        if not points:
            continue
        path = " ".join(f"{_f(px(n))},{_f(py(m.value))}" for n, m in points)
        out.append(
            f'<polyline{cls} points="{path}" fill="none" stroke="{s.colour}" '
            f'stroke-width="2" stroke-dasharray="{s.dash}"/>'
        )
        for n, m in points:
            cx = px(n)
            parts = _point(m, cx, py, s.colour) + beside(n, s.name, cx, py(m.value))
            out.append(f'<g class="mark">{"".join(parts)}</g>')
    return out


def _point(m: Mark, cx: float, py: Callable[[float], float], colour: str) -> list[str]:
    """A point of a line or trend chart: its hover text, its interval as a
    capped error bar, a dot at its value."""
    parts = [f"<title>{escape(m.note)}</title>" if m.note else ""]
    if m.high > m.low:
        low, high = _f(py(m.low)), _f(py(m.high))
        parts.append(
            f'<path d="M{_f(cx)},{low} V{high} M{_f(cx - 4)},{low} H{_f(cx + 4)} '
            f'M{_f(cx - 4)},{high} H{_f(cx + 4)}" stroke="{colour}" '
            'stroke-width="1.5" fill="none"/>'
        )
    parts.append(
        f'<circle cx="{_f(cx)}" cy="{_f(py(m.value))}" r="4" fill="{colour}" '
        'stroke="white" stroke-width="1"/>'
    )
    return parts


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


def titled(chart: str, title: str) -> str:
    """*chart* under *title*, as one chart: a standalone file's panels carry
    their titles, as a page's figures do above them."""
    found = re.search(r'viewBox="0 0 (\d+) (\d+)"', chart)
    w, h = (int(found.group(1)), int(found.group(2)) + 24) if found else (600, 424)
    return "".join(
        frame(w, h)
        + [f'<text x="{w / 2}" y="16" font-size="13" text-anchor="middle" '
           f'fill="#222">{escape(title)}</text>',
           chart.replace("<svg ", '<svg x="0" y="24" ', 1), "</svg>"]
    )  # fmt: skip


def side_by_side(charts: Sequence[str], title: str = "", gap: int = 16) -> str:
    """Charts drawn here, left to right, as one standalone SVG document (a
    file: the namespace declared, a <title> for viewers)."""
    placed = []
    x = 0
    height = 0
    for chart in charts:
        found = re.search(r'viewBox="0 0 (\d+) (\d+)"', chart)
        w, h = (int(found.group(1)), int(found.group(2))) if found else (600, 400)
        placed.append(chart.replace("<svg ", f'<svg x="{x}" y="0" ', 1))
        x += w + gap
        height = max(height, h)
    width = max(x - gap, 1)
    head = f"<title>{title}</title>" if title else ""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" {FONT}>'
        f'{head}<rect width="{width}" height="{height}" fill="white"/>'
        + "".join(placed)
        + "</svg>\n"
    )


def y_grid(
    x0: float,
    x1: float,
    py: Callable[[float], float],
    y_max: float,
    step: float,
    y_format: Callable[[float], str],
) -> list[str]:
    """The horizontal grid lines and their labels, every *step* up to
    *y_max* (*py*: a value's y coordinate): every linear y axis."""
    ticks = [i * step for i in range(int(y_max / step + 1.001))]
    return y_ticks(x0, x1, py, ticks, y_format)


def y_ticks(
    x0: float,
    x1: float,
    py: Callable[[float], float],
    ticks: Sequence[float],
    y_format: Callable[[float], str],
) -> list[str]:
    """A grid line and its label at each of *ticks*: every chart's y axis."""
    return [
        f'<line x1="{x0}" y1="{_f(py(v))}" x2="{x1}" y2="{_f(py(v))}" '
        'stroke="#dde1e7"/>'
        f'<text x="{x0 - 6}" y="{_f(py(v) + 4)}" font-size="11" '
        f'text-anchor="end" fill="#444">{escape(y_format(v))}</text>'
        for v in ticks
    ]
