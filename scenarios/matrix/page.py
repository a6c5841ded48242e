"""A matrix's page: a chart per benchmark grouped as RelStorage's SQLite FAQ
groups its matrix (a panel per transaction size, a group of bars per
concurrency and kind, a bar per storage, the interval as a whisker; shorter
is better), the claims answered, the tables; offline, no script
(scenarios.results.svg)."""

from __future__ import annotations

from html import escape

from scenarios.matrix import claims
from scenarios.matrix.config import BENCHMARKS
from scenarios.matrix.model import MatrixRun, objects
from scenarios.matrix.report import cold_lines, tables
from scenarios.results import bars, formatter, htmlbase, significance, svg


def _axis(kind: str, n: int) -> str:
    short = {"threads": "thr", "processes": "proc", "greenlets": "gr"}
    return f"{n} {short.get(kind, kind)}"


def charts(run: MatrixRun, stat: str | None = None) -> list[tuple[str, list[str]]]:
    """(benchmark, [an SVG panel per transaction size]) for each benchmark."""
    s = run.statistic(stat)
    storages = run.storages
    series = [
        svg.Series(st, svg.PALETTE[i % len(svg.PALETTE)])
        for i, st in enumerate(storages)
    ]
    groups = [_axis(k, n) for k, n in run.axes]
    out = []
    for bench in run.benchmarks:
        panels = []
        for size in run.sizes:
            marks = {}
            for c in run.results:
                if c.benchmark != bench or c.objects != size:
                    continue
                iv = significance.interval(c.per_object_s, s)
                note = (
                    f"{c.storage}, {c.axis} x {objects(size)}: "
                    f"{formatter.duration(iv.estimate)} per object "
                    f"[{formatter.duration(iv.low)} - {formatter.duration(iv.high)}]"
                )
                marks[(_axis(c.kind, c.concurrency), c.storage)] = svg.Mark(
                    iv.estimate, iv.low, iv.high, note
                )
            if marks:
                panels.append(
                    bars.bar_chart(
                        groups,
                        series,
                        marks,
                        "time per object",
                        title=f"{bench}, {objects(size)} a transaction",
                        y_format=svg.time_tick,
                    )
                )
        out.append((bench, panels))
    return out


def svg_file(run: MatrixRun, stat: str | None = None) -> str:
    """Every panel of every benchmark side by side, benchmark after
    benchmark, as one standalone SVG file (--plot)."""
    panels = [p for _, ps in charts(run, stat) for p in ps]
    zodb = run.metadata.get("versions", {}).get("ZODB", "?")
    return svg.side_by_side(panels, escape(f"vfab-bench matrix (ZODB {zodb})"))


def page(run: MatrixRun, stat: str | None = None) -> str:
    s = stat or significance.recorded(run.metadata)
    date = str(run.metadata.get("date", ""))
    body = [
        "<h1>vfab-loadtest matrix</h1>",
        f'<p class="lede">{escape(date)}</p>',
        htmlbase.machine(run.metadata),
        "<h2>RelStorage's SQLite FAQ, checked</h2><ul>",
    ]
    for a in claims.answers(run, s):
        body.append(
            f"<li><b>{escape(a.claim)}</b>: the FAQ: “{escape(a.published)}”. "
            f"Here: {escape(a.sentence())}</li>"
        )
    body.append(f'</ul><p class="note">{escape(claims.versions_line(run))}</p>')
    for bench, panels in charts(run, s):
        b = BENCHMARKS.get(bench)
        body.append(f"<h2>{escape(bench)}</h2>")
        if b is not None:
            body.append(
                f'<p class="note">{escape(b.description)} (zodbshootout: '
                f"{escape(b.shootout)}); time per object, shorter is better; "
                "the black line is the interval.</p>"
            )
        body.append(f'<div class="pair">{"".join(panels)}</div>')
    body.append(
        "".join(f'<p class="note">{escape(line)}</p>' for line in cold_lines(run))
    )
    body += [
        f"<h3>{escape(t.title)}</h3>{htmlbase.table(t.header, t.rows)}"
        for t in tables(run, s)
    ]
    body += ["<h2>Metadata</h2>", htmlbase.metadata("matrix", run.metadata)]
    return htmlbase.document(f"vfab-loadtest matrix {date}".strip(), body)
