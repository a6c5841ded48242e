"""The one builder of pages: a Page takes sections, notes, tables and
charts in order and escapes every text it is given (raw() alone takes
markup); the style sheet, series colours and the metadata list every view
shares; and the page around them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from scenarios.results import environment, svg
from scenarios.results.table import Table

CSS = """
:root { color-scheme: light; }
body { margin: 0; background: #eef1f5; color: #1d2330;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 28px 32px 48px;
  background: white; box-shadow: 0 0 24px rgba(30, 40, 60, .08); }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 10px; padding-bottom: 4px;
  border-bottom: 2px solid #dfe4ea; }
h3 { font-size: 15px; margin: 22px 0 6px; }
p.lede { color: #556; margin: 0 0 8px; }
p.note, figcaption { color: #5a6170; font-size: 13px; }
figure { margin: 14px 0 22px; }
svg.chart { display: block; max-width: 100%; height: auto; }
.pair { display: flex; flex-wrap: wrap; gap: 12px; }
.pair figure { flex: 1 1 480px; margin: 8px 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0 18px; font-size: 13.5px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e3e7ec; }
th { background: #f1f4f8; text-align: right; font-weight: 600; }
th:first-child, td:first-child { text-align: left; }
td { text-align: right; font-variant-numeric: tabular-nums; white-space: pre; }
td:first-child { white-space: normal; }
tr:nth-child(even) td { background: #fafbfc; }
th.group { text-align: center; border-bottom: 2px solid #cfd6df; }
td.then { color: #6b7280; }
td.sep, th.sep { border-left: 2px solid #cfd6df; }
.wide { color: #b42318; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px;
  font-size: 13.5px; }
dt { color: #5a6170; }
dd { margin: 0; }
pre { background: #f4f6f9; padding: 10px 12px; font-size: 12.5px;
  white-space: pre-wrap; overflow-wrap: anywhere; }
ul.notes { font-size: 13.5px; padding-left: 20px; overflow-wrap: anywhere; }
ul.notes ul { padding-left: 18px; color: #5a6170; }
figure h3 { margin: 4px 0; }
p.load { margin: 2px 0 0; }
"""


class Markup(str):
    """Text that is HTML already: a table cell taken as it is."""


def cell(text: str, attributes: str = "") -> str:
    """A table cell; one whose interval is wide ("!") is marked."""
    if isinstance(text, Markup):
        return f"<td{attributes}>{text}</td>"
    body = escape(text.rstrip())
    if body.endswith("!"):
        body = f'<span class="wide">{body}</span>'
    return f"<td{attributes}>{body}</td>"


#: A header's last word that is a unit ("s", "ms", "(µs)"): kept on the line
#: of the word before it, so that a narrow column never wraps it alone.
UNIT = re.compile(r" (\S{1,2}|\([^()]{1,6}\))$")


def header_cell(text: str) -> str:
    """A header's text escaped, its unit bound to the word before it."""
    return UNIT.sub(lambda m: "&nbsp;" + escape(m.group(1)), escape(text))


def table(header: Sequence[str], rows: Sequence[Sequence[str]], css: str = "") -> str:
    """*rows* under *header*, each cell escaped but a Markup one."""
    out = [f'<table class="{css}"><thead><tr>' if css else "<table><thead><tr>"]
    out += [f"<th>{header_cell(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(cell(c) for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def series(names: Sequence[str]) -> list[svg.Series]:
    return [
        svg.Series(n, svg.PALETTE[i % len(svg.PALETTE)]) for i, n in enumerate(names)
    ]


def metadata(title: str, meta: dict[str, Any]) -> str:
    python = meta.get("python", {})
    host = meta.get("host", {})
    versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items() if v)
    items = [
        ("date", meta.get("date", "?")),
        ("command", " ".join(meta.get("command", []) or [])),
        (
            "Python",
            f"{python.get('version', '?')} ({python.get('implementation', '?')})",
        ),
        ("versions", versions),
        (
            "host",
            f"{host.get('hostname', '?')}, {host.get('platform', '?')}, "
            f"{host.get('cpu_count', '?')} CPUs",
        ),
    ]
    items += [("machine", line) for line in environment.lines(meta)]
    dl = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in items)
    config = "".join(
        f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>"
        for k, v in flatten(meta.get("config", {}))
        if meta.get("config")
    )
    out = f"<h3>{escape(title)}</h3><dl>{dl}</dl>"
    if config:  # no empty section: a result without a configuration says none
        out += f"<h3>{escape(title)}: configuration</h3><dl>{config}</dl>"
    return out


def flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """{"options": {"cache_size": None}} -> [("options.cache_size", "null")]."""
    if isinstance(value, dict) and value:
        out = []
        for k in sorted(value):
            out += flatten(value[k], f"{prefix}.{k}" if prefix else str(k))
        return out
    return [(prefix, json.dumps(value))]


def load_note(meta: dict[str, Any]) -> str:
    """The machine's load while a result's figures were taken, as its file
    recorded it: the note under each of its charts."""
    line = environment.load_line(environment.of(meta))
    return line or "Load average: not recorded."


def tag(name: str, text: str, css: str = "", id: str = "") -> str:
    """<name> around *text* escaped, with its class and id when given."""
    attributes = (f' id="{escape(id)}"' if id else "") + (
        f' class="{escape(css)}"' if css else ""
    )
    return f"<{name}{attributes}>{escape(text, quote=False)}</{name}>"


class Page:
    """A page (or a section of one) as it is built, part after part; each
    method escapes the text it takes and returns the page, so that a view
    reads as the page it makes.  *meta*: the result's metadata, whose load
    note every chart carries unless given its own."""

    def __init__(self, meta: dict[str, Any] | None = None, level: int = 2) -> None:
        self.parts: list[str] = []
        self.meta = meta or {}
        #: The heading level of section(): 3 for a section inside another.
        self.level = level

    def heading(self, title: str, *lede: str) -> Page:
        """The page's title and its lede, *lede*'s parts " · " apart."""
        return self.add("h1", title).add("p", " · ".join(lede), "lede")

    def about(self, *names: str, python: bool = True) -> list[str]:
        """The metadata's date, Python (when *python*) and the versions of
        *names*, as a lede's first parts."""
        versions = self.meta.get("versions", {})
        version = self.meta.get("python", {}).get("version", "?")
        return [str(self.meta.get("date", "")), *[f"Python {version}"] * python] + [
            f"{n} {versions.get(n, '?')}" for n in names
        ]

    def raw(self, *html: str) -> Page:
        self.parts += html
        return self

    def add(self, name: str, text: str, css: str = "", id: str = "") -> Page:
        return self.raw(tag(name, text, css, id))

    def section(self, title: str, css: str = "", id: str = "") -> Page:
        return self.add(f"h{self.level}", title, css, id)

    def h3(self, title: str) -> Page:
        return self.add(f"h{self.level + 1}", title)

    def note(self, *lines: str, css: str = "note") -> Page:
        return self.raw(*(tag("p", line, css) for line in lines))

    def items(self, lines: Iterable[str], name: str = "ul", css: str = "") -> Page:
        inner = "".join(tag("li", line) for line in lines)
        return self.raw(tag(name, "", css).replace("><", f">{inner}<"))

    def notes(self, lines: Sequence[str]) -> Page:
        """The notes as a list that wraps in the page's width: a line
        indented in the text (a point's detail) nested under the one before."""
        items: list[tuple[str, list[str]]] = []
        for line in lines:
            if line.startswith("  ") and items:
                items[-1][1].append(line.strip())
            else:
                items.append((line.strip(), []))
        if not items:
            return self
        out = ['<ul class="notes">']
        for head, detail in items:
            sub = "".join(tag("li", d) for d in detail)
            out.append(f"<li>{escape(head)}{f'<ul>{sub}</ul>' if sub else ''}</li>")
        return self.raw(*out, "</ul>")

    def table(self, t: Table, titled: bool = True, scroll: bool = True) -> Page:
        """*t* under its title (when *titled* and it has one), in a box that
        scrolls on its own when wider than the page (*scroll*)."""
        if titled and t.title:
            self.h3(t.title)
        drawn = table(t.header, t.rows)
        return self.raw(f'<div class="scroll">{drawn}</div>' if scroll else drawn)

    def tables(self, tables: Iterable[Table], scroll: bool = True) -> Page:
        for t in tables:
            self.table(t, scroll=scroll)
        return self

    def chart(
        self, title: str, chart: str, caption: str = "", load: str | None = None
    ) -> Page:
        """A chart in its figure: its title above, its caption and the load
        note (the metadata's unless *load* is given) below."""
        note = load_note(self.meta) if load is None else load
        below = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
        return self.raw(
            f"<figure>{tag('h3', title)}{chart}{below}{tag('p', note, 'note load')}"
            "</figure>"
        )

    def charts(
        self, charts: Iterable[tuple[str, str]], caption: str = "", css: str = "pair"
    ) -> Page:
        """(title, chart) pairs side by side, each with *caption*."""
        inner = Page(self.meta)
        for title, chart in charts:
            inner.chart(title, chart, caption)
        return self.raw(f'<div class="{css}">{inner.html()}</div>')

    def machine(self, meta: dict[str, Any] | None = None) -> Page:
        """The machine a result was measured on, as every page shows it near
        its top: load average, speed probe, and each busy warning marked."""
        for line in environment.lines(self.meta if meta is None else meta):
            self.note(line, css="note wide" if line.startswith("Warning:") else "note")
        return self

    def metadata(self, title: str, meta: dict[str, Any] | None = None) -> Page:
        return self.raw(metadata(title, self.meta if meta is None else meta))

    def html(self) -> str:
        return "".join(self.parts)

    def document(self, title: str, css: str = "") -> str:
        return document(title, self.parts, css)


def document(title: str, body: list[str], css: str = "") -> str:
    """A whole HTML page around *body*; *css*: a view's own rules, after
    the shared ones."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}{css}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
