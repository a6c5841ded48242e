"""The pages people look at (issue 44, item 5), on the checked-in result
files: every chart has its title and the load note; a run's label on a
trend chart is whole and inside the chart; bars whose values span decades
are all visible."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from scenarios.matrix import page as matrix_page
from scenarios.matrix.model import MatrixRun
from scenarios.results import bars, trendchart
from scenarios.results.svg import Mark, Series
from tests.conftest import DATA, checked_in
from tests.support.cli_helpers import run_quietly

#: (file, report's extra arguments) -> a page drawn by report.
PAGES = {
    "run": ("run-3.json", ()),
    "sweep": ("sweep.json", ()),
    "scale": ("scale.json", ()),
    "matrix": ("matrix.json", ()),
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("pages")
    out = {}
    for name, (data, extra) in PAGES.items():
        page = d / f"{name}.html"
        run_quietly("report", str(checked_in(data, d)), "--html", str(page), *extra)
        out[name] = page.read_text()
    history = d / "history.html"
    runs = [str(checked_in(f, d)) for f in ("run-3.json", "run-16.json")]
    run_quietly("history", *runs, "--html", str(history))
    out["history"] = history.read_text()
    return out


@pytest.mark.parametrize("name", [*PAGES, "history"])
def test_every_chart_has_a_title_and_the_load_note(
    pages: dict[str, str], name: str
) -> None:
    text = pages[name]
    figures = re.findall(r"<figure[^>]*>(.*?)</figure>", text, re.S)
    charts = [f for f in figures if '<svg class="chart' in f]
    assert len(charts) == text.count('<svg class="chart'), "a chart outside a figure"
    for figure in charts:
        title = re.match(r"<h3>([^<]+)</h3><svg", figure)
        assert title is not None and title.group(1).strip(), figure[:200]
        note = re.search(r'<p class="note load">([^<]+)</p>$', figure)
        assert note is not None and "Load average" in note.group(1), figure[-300:]


def test_the_load_note_is_the_one_the_result_recorded(pages: dict[str, str]) -> None:
    # scale.json recorded 2.45 at the start and 2.41 at the end
    assert pages["scale"].count(
        '<p class="note load">Load average (1 min) 2.45 at the start and 2.41 at '
        "the end, on 2 CPUs.</p>"
    ) == pages["scale"].count('<svg class="chart')


def _label_box(text: str, height: float) -> tuple[float, float, float, float]:
    """The box (left, right, top, bottom) a trend chart's label *text*
    element covers, each character CHAR wide, at most."""
    x = float(re.search(r' x="([\d.]+)"', text)[1])  # type: ignore[index]
    y = float(re.search(r' y="([\d.]+)"', text)[1])  # type: ignore[index]
    lines = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", text) or [
        re.sub(r"<[^>]+>", "", text)
    ]
    width = max(len(line) for line in lines) * 0.6 * 11
    if "rotate(-30" in text:
        return x - width * math.cos(math.pi / 6), x, y, y + width / 2
    return x - width / 2, x + width / 2, y - 11, y + 13 * (len(lines) - 1) + 3


@pytest.mark.parametrize("count", [2, 3, 8])
def test_a_runs_label_is_whole_and_inside_the_chart(count: int) -> None:
    """Long labels ("ZODB 6.4 (2026-12-02 02:51:34)") are never cut at the
    chart's edge into ". (2026-12-02 02:51:34)": level on two lines when
    they fit, else slanted with the room they need."""
    labels = [f"ZODB 6.4.{i}rc1 (2026-12-02 02:51:{i:02})" for i in range(count)]
    marks = {(i, "file"): Mark(0.01 * (i + 1), 0.01, 0.02) for i in range(count)}
    chart = trendchart.trend_chart(labels, [Series("file", "#000")], marks)
    width, height = map(float, re.search(r'viewBox="0 0 (\S+) (\S+)"', chart).groups())  # type: ignore[union-attr]
    drawn = re.findall(r'<text class="version".*?</text>', chart)
    assert len(drawn) == count
    for label, text in zip(labels, drawn, strict=True):
        words = re.sub(r"<[^>]+>", " ", text).split()
        assert words == label.replace("(", "").replace(")", "").split()
        left, right, top, bottom = _label_box(text, height)
        assert left >= 0 and right <= width and bottom <= height, (label, text)


def test_bars_that_span_decades_are_all_visible() -> None:
    """The matrix's 1-client bars beside its many-client ones: on a log
    axis, said on the chart, every bar at least a tenth of the plot."""
    marks = {
        ("1 thr", "file"): Mark(2e-6, 1.8e-6, 2.2e-6),
        ("8 thr", "file"): Mark(4e-3, 3e-3, 5e-3),
        ("8 thr", "zeo"): Mark(2e-4, 1e-4, 3e-4),
    }
    series = [Series("file", "#111111"), Series("zeo", "#222222")]
    chart = bars.bar_chart(["1 thr", "8 thr"], series, marks, "time per object")
    plot = float(
        re.search(
            r'<rect x="\S+" y="\S+" width="\S+" height="(\S+)" fill="#f8f9fb"', chart
        )[1]
    )  # type: ignore[index]
    heights = [
        float(h)
        for h in re.findall(r'height="([\d.]+)" fill="#(?:111111|222222)"', chart)
    ]
    assert len(heights) == 3
    assert min(heights) >= plot / 10, (heights, plot)
    assert "log scale: the values span 2,000x" in chart
    # the ordering survives: longer is slower
    assert heights[0] < heights[2] < heights[1]


def test_bars_close_together_stay_on_a_linear_axis() -> None:
    marks = {("1", "a"): Mark(1.0, 1.0, 1.0), ("2", "a"): Mark(3.0, 3.0, 3.0)}
    chart = bars.bar_chart(["1", "2"], [Series("a", "#111111")], marks, "s")
    assert "log scale" not in chart and ">0<" in chart  # the axis starts at 0


def test_the_matrix_page_draws_every_bar(tmp_path: Path) -> None:
    run = MatrixRun.load(checked_in("matrix.json", tmp_path))
    for _, panels in matrix_page.charts(run):
        for title, chart in panels:
            plot = float(re.search(r'height="(\S+)" fill="#f8f9fb"', chart)[1])  # type: ignore[index]
            heights = [
                float(h)
                for h in re.findall(r'height="([\d.]+)" fill="#[0-9a-f]{6}"/>', chart)
            ]
            assert heights and min(heights) >= plot / 25, (title, heights)
    assert DATA.is_dir()
