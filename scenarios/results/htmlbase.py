"""The pieces every HTML view shares: the style sheet, tables, series
colours, the metadata list and the page around them."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from html import escape
from typing import Any

from scenarios.results import environment, svg

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
"""


def cell(text: str, attributes: str = "") -> str:
    """A table cell; one whose interval is wide ("!") is marked."""
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


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["<table><thead><tr>"]
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


def machine(meta: dict[str, Any]) -> str:
    """The machine a result was measured on, as every page shows it near
    its top: load average, speed probe, and each busy warning marked."""
    lines = environment.lines(meta)
    if not lines:
        return ""
    out = []
    for line in lines:
        css = "note wide" if line.startswith("Warning:") else "note"
        out.append(f'<p class="{css}">{escape(line)}</p>')
    return "".join(out)


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


def document(title: str, body: list[str], css: str = "") -> str:
    """A whole HTML page around *body*; *css*: a view's own rules, after
    the shared ones."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}{css}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
