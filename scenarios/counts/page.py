"""A count run as one self-contained HTML page: the count tables, the
legend and the metadata, in the style of the time report's page."""

from __future__ import annotations

from html import escape

from scenarios.counts import report
from scenarios.counts.model import CountRun
from scenarios.results import htmlbase


def page(run: CountRun) -> str:
    meta = run.metadata
    versions = meta.get("versions", {})
    body = [
        "<h1>vfab-loadtest counts</h1>",
        f'<p class="lede">{escape(str(meta.get("date", "")))} · Python '
        f"{escape(str(meta.get('python', {}).get('version', '?')))} · ZODB "
        f"{escape(str(versions.get('ZODB', '?')))} · "
        f"{escape(str(meta.get('counts', {}).get('valgrind', '')))} · storages: "
        f"{escape(', '.join(run.storages))}</p>",
        f'<p class="note">{escape(report.legend(run))}</p>',
        htmlbase.machine(meta),
        "<h2>Tables</h2>",
    ]
    for t in report.tables(run):
        body.append(f"<h3>{escape(t.title)}</h3>{htmlbase.table(t.header, t.rows)}")
    body.append("<h2>Metadata</h2>")
    body.append(htmlbase.metadata("run", meta))
    title = f"vfab-loadtest counts {meta.get('date', '')}".strip()
    return htmlbase.document(title, body)
