"""index.html of a release directory: every part on one page.

Each part is shown with its command's own renderer: each run's own HTML
page (table.html and million.html, scenarios.results.html, framed in the
page) with its text tables, the micro-benchmarks' medians as a table, the
scale curve (scale.svg, inlined) with scale's text report, and the
consistency verdict of every point.  The page is self-contained (no
script, no remote resource) and says first what was shortened to fit.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from scenarios.release.parts import PartResult, micro_rows, verdicts

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em;
       padding: 0 1em; color: #222; }
pre { background: #f6f6f4; padding: .8em; overflow-x: auto; font-size: 13px; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border-bottom: 1px solid #ddd; padding: .25em .7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.ok { color: #176117; } .bad { color: #a61b1b; font-weight: bold; }
.note { color: #555; } svg { max-width: 100%; height: auto; }
"""

BAD = ("failed", "violations", "not checked")


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _status(part: PartResult) -> str:
    css = "bad" if part.status in BAD else "ok"
    text = escape(part.status) + (f": {escape(part.detail)}" if part.detail else "")
    return f'<span class="{css}">{text}</span>'


def _files(part: PartResult) -> str:
    return ", ".join(f'<a href="{escape(f)}">{escape(f)}</a>' for f in part.files)


def _section(part: PartResult, out: Path) -> list[str]:
    html = [f'<h2 id="{escape(part.name)}">{escape(part.title)}</h2>']
    html.append(f"<p>{_status(part)}. Files: {_files(part) or 'none'}</p>")
    if part.name == "micro" and part.data is not None:
        names, rows = micro_rows(part.data)
        html.append(
            _table(
                ["benchmark (median per round)", *names],
                [[escape(c) for c in row] for row in rows],
            )
        )
        return html
    if part.name == "scale":
        svg = out / "scale.svg"
        if "scale.svg" in part.files and svg.is_file():
            text = svg.read_text(encoding="utf-8")
            html.append(text[text.find("<svg") :])
        lines = verdicts(part)
        if lines:
            html.append("<h3>Consistency verdicts</h3><ul>")
            html += [f"<li>{escape(line)}</li>" for line in lines]
            html.append("</ul>")
    page = f"{part.name}.html"
    if page in part.files:
        # The run's own page (scenarios.results.html), as `run --html` writes it.
        html.append(
            f'<iframe src="{escape(page)}" title="{escape(part.title)}" '
            'style="width: 100%; height: 60em; border: 1px solid #ddd"></iframe>'
        )
        if part.text:
            html.append(
                f"<details><summary>The tables as run prints them</summary>"
                f"<pre>{escape(part.text)}</pre></details>"
            )
    elif part.text:
        html.append(f"<pre>{escape(part.text)}</pre>")
    return html


def page(
    parts: list[PartResult],
    shortened: list[str],
    metadata: dict[str, Any],
    out: Path,
) -> str:
    """The whole index.html."""
    versions = metadata.get("versions", {})
    lede = " · ".join(
        [
            escape(str(metadata.get("date", ""))),
            f"ZODB {escape(str(versions.get('ZODB', '?')))}",
            f"ZEO {escape(str(versions.get('ZEO', '?')))}",
            f"{escape(str(metadata.get('cpu_count', '?')))} CPUs",
            "storages: " + escape(", ".join(metadata.get("storages", []))),
        ]
    )
    body = [
        "<h1>vfab-loadtest release check</h1>",
        f"<p>{lede}</p>",
        "<h2>Shortened to fit</h2><ul>",
        *(f"<li>{escape(line)}</li>" for line in shortened),
        "</ul>",
        _table(
            ["part", "status", "files"],
            [
                [
                    f'<a href="#{escape(p.name)}">{escape(p.title)}</a>',
                    _status(p),
                    _files(p),
                ]
                for p in parts
            ],
        ),
    ]
    for part in parts:
        body += _section(part, out)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>vfab-loadtest release check</title>"
        f"<style>{STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
