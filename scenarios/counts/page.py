"""A count run as one self-contained HTML page: the count tables, the
legend and the metadata, in the style of the time report's page."""

from __future__ import annotations

from scenarios.counts import report
from scenarios.counts.model import CountRun
from scenarios.results.htmlbase import Page


def page(run: CountRun) -> str:
    meta = run.metadata
    p = Page(meta)
    valgrind = str(meta.get("counts", {}).get("valgrind", ""))
    storages = "storages: " + ", ".join(run.storages)
    p.heading("vfab-loadtest counts", *p.about("ZODB"), valgrind, storages)
    p.note(report.legend(run)).machine().section("Tables")
    p.tables(report.tables(run), scroll=False).section("Metadata").metadata("run")
    return p.document(f"vfab-loadtest counts {meta.get('date', '')}".strip())
