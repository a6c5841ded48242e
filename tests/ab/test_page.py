"""ab's page (--html) on a checked-in result: tests/ab/data/zeo-delay.json,
written by `vfab-bench ab .venv B --cells rows,matrix --quick --pairs 6`
where B was made by `tools/ab_patched_env.py .venv B --store-slower 3
--zeo-reply-delay 1` (on a busy machine: its figures are noise, the view's
input is what matters)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from scenarios.ab import page, report
from scenarios.ab.judge import judge
from scenarios.ab.model import ABRun

DATA = Path(__file__).resolve().parent / "data" / "zeo-delay.json"


def run() -> ABRun:
    return ABRun.from_json(json.loads(DATA.read_text()))


def test_the_verdict_first_then_each_source_largest_change_first() -> None:
    r = run()
    html = page.page(r)
    judged = judge(r.cells)
    verdict = html.index("<h2>Verdict: no significant difference on 24 cells")
    assert verdict < html.index("<svg") < html.index("<table")
    assert "vfab-ab-patch absent -&gt; 0+storeslower0p03" in html
    assert "<script" not in html
    # One chart and one table per source, in the order judge() gives.
    assert html.count("<svg") == html.count("<table") == 2
    for source in ("the matrix's cells", "the 2000 rows"):
        assert f"<h2>{source}" in html.replace("&#x27;", "'")
    names = [j.name for j in judged if j.cell.source == "rows"]
    table = html[html.index("<h2>the 2000 rows") :]
    rows = re.findall(r"<tr><td>([^<]+)</td>", table)
    assert rows[: len(names)] == names
    # Each cell's interval: its ends in the table, its line in the chart.
    for j in judged:
        assert j.low is not None and j.high is not None
        assert f"{j.low:.3f}-{j.high:.3f}" in html
    assert html.count("<circle") == len(judged)


def test_a_change_is_coloured_by_its_direction() -> None:
    r = run()
    judged = judge(r.cells)
    assert {page.colour(j) for j in judged} == {page.SAME}
    # The same cells with B's trials halved: every timed cell faster.
    faster = [
        j.cell.__class__(j.cell.source, j.cell.column, j.cell.row, j.cell.a,
                         tuple(v / 2 for v in j.cell.a))
        for j in judged
    ]  # fmt: skip
    colours = {page.colour(j) for j in judge(faster) if not j.short}
    assert colours == {page.FASTER}


def test_the_text_and_the_page_say_the_same_lines() -> None:
    r = run()
    text = report.text(r)
    for line in report.about(r, judge(r.cells)):
        assert line.split(":")[0] in text
