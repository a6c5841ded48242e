"""index.html of a release directory: the verdict first, then every part with
the commands' own renderers, rendered from the directory itself (so the
page of a new release and compare's are one view); self-contained.
"""

from __future__ import annotations

from html import escape

from scenarios.bench import page as html
from scenarios.counts import report as counts_report
from scenarios.release.microbench import micro_rows
from scenarios.release.model import Release
from scenarios.release.trend import ReleaseTrend
from scenarios.release.verdict import CHANGE, GATE, Verdict
from scenarios.results import htmlbase
from scenarios.results.table import Table
from scenarios.scale import page as scale_page

CSS = """
main { max-width: 1220px; padding: 24px 20px 40px; }
#table + p + .scroll th, #table + p + .scroll td { padding: 3px 6px;
  font-size: 12.5px; }
#verdict { border: 2px solid #cfd6df; border-radius: 6px; padding: 4px 18px 8px;
  margin: 18px 0 8px; }
#verdict h2 { border: 0; margin-top: 12px; }
h2.bad, li.bad, span.bad { color: #b42318; }
h2.good, span.good { color: #176117; }
ul.verdict li { margin: 4px 0; }
li.quiet { color: #5a6170; }
table.parts td, #verdict td { white-space: normal; }
"""

BAD = ("failed", "violations", "not checked")


def _status(status: str, detail: str) -> str:
    css = "bad" if status in BAD else "good"
    text = escape(status) + (f": {escape(detail)}" if detail else "")
    return f'<span class="{css}">{text}</span>'


def _files(files: list[str]) -> str:
    return ", ".join(f'<a href="{escape(f)}">{escape(f)}</a>' for f in files)


def _table(t: Table) -> str:
    return f'<div class="scroll">{htmlbase.table(t.header, t.rows)}</div>'


def verdict_section(v: Verdict) -> str:
    """The verdict as the page's first section: its headline, a line per
    part (the gate's failures first), then the cells that moved."""
    css = "bad" if v.regression else "good"
    items = []
    for line in v.lines():
        cls = {GATE: "bad", CHANGE: "change"}.get(line.severity, "quiet")
        part, text = escape(line.part), escape(line.text)
        items.append(f'<li class="{cls}"><b>{part}</b>: {text}</li>')
    body = [
        '<section id="verdict">',
        f'<h2 class="{css}">{escape(v.headline())}</h2>',
        f'<ul class="verdict">{"".join(items)}</ul>',
    ]
    # A micro-benchmark's cell named as the text verdict names it.
    grew, fell = v.count_regressions(True), v.count_improvements(True)
    if grew or fell:
        rows = [[c.cell_name, *c.values(), c.verdict] for c in [*grew, *fell]]
        body.append("<h3>Count cells that moved</h3>")
        body.append(_rows_table(["cell", "last release", "now", "change"], rows))
    if v.wall is not None:
        moved = [*v.wall.slower(), *v.wall.faster()]
        if moved:
            body.append("<h3>Wall time: significant changes</h3>")
            body.append(
                _rows_table(
                    ["storage", "task", "change"],
                    [[c.column, c.row, c.line] for c in moved],
                )
            )
    if v.curve is not None:
        body.append("<h3>Concurrency curve</h3>")
        body.append(
            _rows_table(
                ["point", "ops/s", "p99"],
                [
                    [p.where, *(m.line.split(" ", 1)[1] for m in p.measures)]
                    for p in v.curve.points
                ],
            )
        )
    body.append("</section>")
    return "".join(body)


def _rows_table(header: list[str], rows: list[list[str]]) -> str:
    return f'<div class="scroll">{htmlbase.table(header, rows)}</div>'


def _part_body(release: Release, name: str) -> list[str]:
    out: list[str] = []
    if name == "table" and release.table is not None:
        table = release.table
        for size in table.sizes:
            out.append(html.then_and_now(table, size))
            stat = html.report.run_statistic(table)
            out += html.figures(table, size, stat, groups=1)
    elif name == "counts":
        if release.counts is not None:
            for t in counts_report.tables(release.counts)[:1]:
                out.append(f"<h3>{escape(t.title)}</h3>{_table(t)}")
        if release.micro_counts:
            rows = [
                [f"{test} [{storage}]", f"{cell.value:,}"]
                for (storage, test), cell in release.micro_counts.items()
            ]
            out.append("<h3>Micro-benchmarks, instructions per call</h3>")
            out.append(_table(Table("", ["benchmark", "instructions"], rows)))
    elif name == "micro" and release.micro is not None:
        names, rows = micro_rows(release.micro)
        out.append(_table(Table("", ["benchmark (median per round)", *names], rows)))
    elif name == "scale" and release.scale is not None:
        scale = release.scale
        out.append(
            scale_page.scale_section(scale)
            .replace("<h2>", "<h3>", 1)
            .replace("</h2>", "</h3>", 1)
        )
    elif name == "million" and release.million is not None:
        out += html.tables(release.million)[:1]
    return out


def page(release: Release, verdict: Verdict | None) -> str:
    """The whole index.html of *release*, *verdict* against the last one
    (None: no --against)."""
    meta = release.metadata
    versions = meta.get("versions", {})
    cpus = meta.get("cpu_count") or (meta.get("host") or {}).get("cpu_count", "?")
    lede = " · ".join(
        [
            str(meta.get("date", "")),
            f"ZODB {versions.get('ZODB', '?')}",
            f"ZEO {versions.get('ZEO', '?')}",
            f"{cpus} CPUs",
            "load " + ("?" if release.load is None else f"{release.load:.1f}"),
            f"code {release.code}",
            "storages: " + ", ".join(release.storages),
        ]
    )
    body = [
        "<h1>vfab-loadtest release check</h1>",
        f'<p class="lede">{escape(lede)}</p>',
    ]
    if verdict is not None:
        body.append(verdict_section(verdict))
    else:
        status = int(release.summary.get("exit_status") or 0)
        own = [str(v) for v in release.summary.get("verdicts") or ()]
        items = "".join(f"<li>{escape(v)}</li>" for v in own)
        body.append(
            '<section id="verdict"><h2>Verdict: no last release named (release '
            "--against DIR compares with one)</h2>"
            f"<p>{_status('ok' if status == 0 else 'failed', f'exit status {status}')}"
            "</p>" + (f"<ul>{items}</ul>" if items else "") + "</section>"
        )
    body.append(htmlbase.machine(meta))
    shortened = [str(x) for x in release.summary.get("shortened") or ()]
    body.append("<h2>Shortened to fit</h2>")
    if shortened:
        body.append("<ul>" + "".join(f"<li>{escape(x)}</li>" for x in shortened))
        body.append("</ul>")
    else:
        body.append("<p>Nothing: every part ran as its command's defaults run it.</p>")
    parts = [p for p in release.summary.get("parts", []) if isinstance(p, dict)]
    rows = [
        [
            f'<a href="#{escape(str(p.get("name")))}">'
            f"{escape(str(p.get('title')))}</a>",
            _status(str(p.get("status")), str(p.get("detail") or "")),
            _files(list(p.get("files") or [])),
        ]
        for p in parts
    ]
    body.append(
        '<table class="parts"><thead><tr><th>part</th><th>status</th>'
        "<th>files</th></tr></thead>"
        "<tbody>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        + "</tbody></table>"
    )
    for p in parts:
        name = str(p.get("name"))
        body.append(f'<h2 id="{escape(name)}">{escape(str(p.get("title")))}</h2>')
        files = list(p.get("files") or [])
        body.append(
            f"<p>{_status(str(p.get('status')), str(p.get('detail') or ''))}. "
            f"Files: {_files(files) or 'none'}</p>"
        )
        body += _part_body(release, name)
    body.append("<h2>Metadata</h2>")
    body.append(htmlbase.metadata("release", meta))
    return htmlbase.document("vfab-loadtest release check", body, CSS)


def history_page(h: ReleaseTrend) -> str:
    """The history of releases as one page: the releases in order, then
    each part's trend (the 2000 table's with history's own charts)."""
    from scenarios.trend import page as history_html

    body = ["<h1>vfab-loadtest: history of releases</h1>"]
    body.append(f'<p class="lede">{escape(h.heading())}</p>')
    rows = [
        [
            str(i),
            label,
            r.date or "?",
            "?" if r.load is None else f"{r.load:.1f}",
            r.code,
            str(r.path),
        ]
        for i, (label, r) in enumerate(zip(h.labels, h.releases, strict=True), 1)
    ]
    header = ["", "release", "date", "load", "code", "directory"]
    body.append(_table(Table("", header, rows)))
    from scenarios.results import environment

    for i, r in enumerate(h.releases, 1):
        busy = environment.busy_summary(r.metadata)
        if busy:
            body.append(f'<p class="note wide">{escape(f"Release {i}: {busy}")}</p>')
    body += [f'<p class="note">{escape(n)}</p>' for n in h.notes]
    header = ["", *(str(i) for i in range(1, len(h.releases) + 1))]

    def grid(title: str, grid_rows: list[list[str]]) -> None:
        body.append(f"<h2>{escape(title)}</h2>")
        body.append(_table(Table("", header, grid_rows)))

    if h.counts:
        grid(
            f"Counts: cells that moved ({len(h.counts)} of {h.count_cells})",
            [[n, *h.marked(v, m)] for n, v, m in h.counts],
        )
    elif h.count_cells:
        body.append("<h2>Counts</h2>")
        body.append(
            f"<p>None of the {h.count_cells} cells moved between two "
            "consecutive releases.</p>"
        )
    if h.curve:
        grid(
            "Concurrency curve: ops/s and p99 per point",
            [[n, *h.marked(v, m)] for n, v, m in h.curve],
        )
    if h.micro:
        grid("Micro-benchmarks: median per round", [[n, *v] for n, v in h.micro])
    if h.million:
        grid("Million run: per object built", [[n, *v] for n, v in h.million])
    if h.consistency:
        grid("Consistency", [[n, *v] for n, v in h.consistency])
    if h.table is not None:
        body.append("<h2>The 2000 table</h2>")
        body.append(history_html.section(h.table))
    return htmlbase.document(
        "vfab-loadtest: history of releases", body, CSS + history_html.CSS
    )
