"""choose's page: the verdict first, then the curves (scale's charts of
throughput and p99 against clients), each with a title and the load
note, then the tables; offline, no script."""

from __future__ import annotations

from html import escape

from scenarios.choose import report
from scenarios.choose.model import ChooseRun
from scenarios.choose.verdict import lines
from scenarios.results import htmlbase
from scenarios.scale import report as scale_report
from scenarios.scale.page import notes_list


def page(run: ChooseRun) -> str:
    date = str(run.metadata.get("date", ""))
    verdict = lines(run)
    load = [line for line in verdict if line.startswith(("warning:", "note:"))]
    cut = verdict.index("when it changes:") if "when it changes:" in verdict else 1
    ranked = "".join(f"<li>{escape(line.strip())}</li>" for line in verdict[1:cut])
    body = [
        "<h1>vfab-loadtest choose</h1>",
        f'<p class="lede">{escape(verdict[0])}</p>',
        f'<ol class="notes">{ranked}</ol>',
        notes_list(verdict[cut:]),
        htmlbase.machine(run.metadata),
    ]
    scale = run.as_scale()
    if scale.points:
        body.append("<h2>Curves</h2>")
        figures = [
            f"<figure><h3>{escape(caption)}</h3>{chart}"
            f"<figcaption>{escape('; '.join(load))}</figcaption></figure>"
            for caption, chart in scale_report.charts(scale)
        ]
        body.append(f'<div class="pair">{"".join(figures)}</div>')
    for t in report.tables(run):
        body.append(f"<h3>{escape(t.title)}</h3>")
        body.append(f'<div class="scroll">{htmlbase.table(t.header, t.rows)}</div>')
    body += ["<h2>Metadata</h2>", htmlbase.metadata("choose", run.metadata)]
    return htmlbase.document(f"vfab-loadtest choose {date}".strip(), body)
