"""index.html of a release directory: the verdict first, then every part with
the commands' own renderers, rendered from the directory itself (so the
page of a new release and compare's are one view); self-contained.
"""

from __future__ import annotations

from html import escape

from scenarios.bench import page as html
from scenarios.bench import report as bench_report
from scenarios.counts import report as counts_report
from scenarios.release.microbench import micro_rows
from scenarios.release.model import Release
from scenarios.release.trend import ReleaseTrend
from scenarios.release.verdict import CHANGE, GATE, Verdict
from scenarios.results.htmlbase import Markup, Page, table, tag
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


def _status(status: str, detail: str) -> Markup:
    css = "bad" if status in BAD else "good"
    return Markup(tag("span", status + (f": {detail}" if detail else ""), css))


def _files(files: list[str]) -> Markup:
    return Markup(", ".join(f'<a href="{escape(f)}">{escape(f)}</a>' for f in files))


def verdict_section(v: Verdict) -> str:
    """The verdict as the page's first section: its headline, a line per
    part (the gate's failures first), then the cells that moved."""
    items = []
    for line in v.lines():
        cls = {GATE: "bad", CHANGE: "change"}.get(line.severity, "quiet")
        items.append(
            f'<li class="{cls}">{tag("b", line.part)}: {escape(line.text)}</li>'
        )
    p = Page(level=2).raw('<section id="verdict">')
    p.section(v.headline(), "bad" if v.regression else "good")
    p.raw(f'<ul class="verdict">{"".join(items)}</ul>')
    # A micro-benchmark's cell named as the text verdict names it.
    grew, fell = v.count_regressions(True), v.count_improvements(True)
    if grew or fell:
        rows = [[c.cell_name, *c.values(), c.verdict] for c in [*grew, *fell]]
        header = ["cell", "last release", "now", "change"]
        p.table(Table("Count cells that moved", header, rows))
    moved = [] if v.wall is None else [*v.wall.slower(), *v.wall.faster()]
    if moved:
        rows = [[c.column, c.row, c.line] for c in moved]
        p.table(
            Table("Wall time: significant changes", ["storage", "task", "change"], rows)
        )
    if v.curve is not None:
        rows = [
            [pt.where, *(m.line.split(" ", 1)[1] for m in pt.measures)]
            for pt in v.curve.points
        ]
        p.table(Table("Concurrency curve", ["point", "ops/s", "p99"], rows))
    return p.raw("</section>").html()


def _part_body(release: Release, name: str) -> list[str]:
    p = Page(level=2)
    if name == "table" and release.table is not None:
        table = release.table
        for size in table.sizes:
            p.raw(html.then_and_now(table, size))
            stat = html.report.run_statistic(table)
            p.raw(*html.figures(table, size, stat, groups=1))
    elif name == "counts":
        if release.counts is not None:
            p.tables(counts_report.tables(release.counts)[:1])
        if release.micro_counts:
            rows = [
                [f"{test} [{storage}]", f"{cell.value:,}"]
                for (storage, test), cell in release.micro_counts.items()
            ]
            title = "Micro-benchmarks, instructions per call"
            p.table(Table(title, ["benchmark", "instructions"], rows))
    elif name == "micro" and release.micro is not None:
        names, rows = micro_rows(release.micro)
        p.table(Table("", ["benchmark (median per round)", *names], rows))
    elif name == "scale" and release.scale is not None:
        p.raw(scale_page.scale_section(release.scale, level=3))
    elif name == "million" and release.million is not None:
        p.tables(bench_report.tables(release.million)[:1])
    return p.parts


def page(release: Release, verdict: Verdict | None) -> str:
    """The whole index.html of *release*, *verdict* against the last one
    (None: no --against)."""
    meta = release.metadata
    cpus = meta.get("cpu_count") or (meta.get("host") or {}).get("cpu_count", "?")
    p = Page(meta)
    p.heading(
        "vfab-loadtest release check",
        *p.about("ZODB", "ZEO", python=False),
        f"{cpus} CPUs",
        "load " + ("?" if release.load is None else f"{release.load:.1f}"),
        f"code {release.code}",
        "storages: " + ", ".join(release.storages),
    )
    if verdict is not None:
        p.raw(verdict_section(verdict))
    else:
        status = int(release.summary.get("exit_status") or 0)
        own = [str(v) for v in release.summary.get("verdicts") or ()]
        p.raw('<section id="verdict">').section(
            "Verdict: no last release named (release --against DIR compares with one)"
        )
        shown = _status("ok" if status == 0 else "failed", f"exit status {status}")
        p.raw(f"<p>{shown}</p>")
        if own:
            p.items(own)
        p.raw("</section>")
    p.machine().section("Shortened to fit")
    shortened = [str(x) for x in release.summary.get("shortened") or ()]
    if shortened:
        p.items(shortened)
    else:
        p.add("p", "Nothing: every part ran as its command's defaults run it.")
    parts = [p for p in release.summary.get("parts", []) if isinstance(p, dict)]
    rows = [
        [
            Markup(
                f'<a href="#{escape(str(part.get("name")))}">'
                f"{escape(str(part.get('title')))}</a>"
            ),
            _status(str(part.get("status")), str(part.get("detail") or "")),
            _files(list(part.get("files") or [])),
        ]
        for part in parts
    ]
    p.raw(table(["part", "status", "files"], rows, "parts"))
    for part in parts:
        name = str(part.get("name"))
        p.section(str(part.get("title")), id=name)
        files = list(part.get("files") or [])
        p.raw(
            f"<p>{_status(str(part.get('status')), str(part.get('detail') or ''))}. "
            f"Files: {_files(files) or 'none'}</p>"
        )
        p.raw(*_part_body(release, name))
    p.section("Metadata").metadata("release")
    return p.document("vfab-loadtest release check", CSS)


def history_page(h: ReleaseTrend) -> str:
    """The history of releases as one page: the releases in order, then
    each part's trend (the 2000 table's with history's own charts)."""
    from scenarios.results import environment
    from scenarios.trend import page as history_html

    p = Page().heading("vfab-loadtest: history of releases", h.heading())
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
    p.table(Table("", ["", "release", "date", "load", "code", "directory"], rows))
    for i, r in enumerate(h.releases, 1):
        busy = environment.busy_summary(r.metadata)
        if busy:
            p.note(f"Release {i}: {busy}", css="note wide")
    p.note(*h.notes)
    header = ["", *(str(i) for i in range(1, len(h.releases) + 1))]

    def grid(title: str, grid_rows: list[list[str]]) -> None:
        p.section(title).table(Table("", header, grid_rows))

    if h.counts:
        grid(
            f"Counts: cells that moved ({len(h.counts)} of {h.count_cells})",
            [[n, *h.marked(v, m)] for n, v, m in h.counts],
        )
    elif h.count_cells:
        p.section("Counts").add(
            "p",
            f"None of the {h.count_cells} cells moved between two consecutive "
            "releases.",
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
        p.section("The 2000 table").raw(history_html.section(h.table))
    return p.document("vfab-loadtest: history of releases", CSS + history_html.CSS)
