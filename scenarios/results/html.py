"""The report as one self-contained HTML page: inline CSS, inline SVG charts
drawn in Python (scenarios.results.svg), no script and no external resource,
so it opens offline and can be mailed or attached to a CI run.

What it shows: the 2000 table beside today's; a chart per group of rows (the
2000 rows, each query brute-force and indexed in its three cache states,
the update and pack rows), each storage a dot at the statistic with its
interval as a whisker; the cost curve of a sweep when one is given; every
table of the text report; and the metadata (versions, host, configuration).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from scenarios.bench.phases import CACHE_STATES, PHASES_2000, QUERIES
from scenarios.results import report, significance, svg
from scenarios.results.model import RunResult
from scenarios.results.table2000 import COLUMNS_2000, TABLE_2000
from scenarios.sweep.config import VARIANTS
from scenarios.sweep.report import tables as sweep_tables
from scenarios.sweep.results import SweepRun

COLD_WARM_HOT = (
    "CPU time and RSS exclude server processes.  Cold: new DB and client on "
    "the same data (the OS page cache is not dropped); warm: objects ghosted, "
    "lower caches warm; hot: objects in memory.  Cold minus hot is the time "
    "spent filling the cache."
)

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
pre { background: #f4f6f9; padding: 10px 12px; overflow-x: auto;
  font-size: 12.5px; }
"""


def seconds_3(value: float) -> str:
    """Seconds to three significant digits, as the 2000 table's cells."""
    return f"{value:.0f}" if value >= 100 else f"{value:#.3g}"


def time_units(value: float) -> str:
    """Seconds in the unit that suits them: "231 µs", "11.8 ms", "1.20 s"."""
    units = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
    unit, scale = next(((u, s) for u, s in units if value >= s), units[-1])
    v = value / scale
    return f"{v:.0f} {unit}" if v >= 100 else f"{v:#.3g} {unit}"


def _cell(text: str, attributes: str = "") -> str:
    """A table cell; one whose interval is wide ("!") is marked."""
    body = escape(text.rstrip())
    if body.endswith("!"):
        body = f'<span class="wide">{body}</span>'
    return f"<td{attributes}>{body}</td>"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["<table><thead><tr>"]
    out += [f"<th>{escape(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(_cell(c) for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _seconds_note(iv: significance.Interval) -> str:
    if not iv.known:
        return f"{iv.estimate:.6g} s (one trial)"
    return (
        f"{iv.statistic} {iv.estimate:.6g} s, {iv.confidence:.0%} interval "
        f"{iv.low:.6g} - {iv.high:.6g} s, {iv.n} trials"
    )


def _series(names: Sequence[str]) -> list[svg.Series]:
    return [
        svg.Series(n, svg.PALETTE[i % len(svg.PALETTE)]) for i, n in enumerate(names)
    ]


def _marks(
    run: RunResult, size: str, rows: Sequence[tuple[str, str]], stat: str
) -> dict[tuple[str, str], svg.Mark]:
    """(label, storage) -> mark, for (label, phase) *rows*."""
    marks = {}
    for label, phase in rows:
        for storage in run.storages:
            r = run.get(storage, phase, size)
            if r is None:
                continue
            iv = significance.interval([s.wall_s for s in r.samples], stat)
            note = f"{storage}, {phase}: {_seconds_note(iv)}"
            marks[(label, storage)] = svg.Mark(iv.estimate, iv.low, iv.high, note)
    return marks


def chart_groups(run: RunResult) -> list[tuple[str, list[tuple[str, str]]]]:
    """(title, [(row label, phase)]) for each chart, from the phase table:
    the 2000 rows; per query, brute-force and indexed in each cache state;
    whatever rows remain."""
    present = set(run.phases)
    groups: list[tuple[str, list[tuple[str, str]]]] = []
    rows_2000 = [(p.name, p.name) for p in PHASES_2000 if p.name in present]
    if rows_2000:
        groups.append(("The 2000 rows", rows_2000))
    used = {p for _, p in rows_2000}
    for base, _, _ in QUERIES:
        rows = []
        for form, label in (("", "brute-force"), (", indexed", "indexed")):
            for state, _ in CACHE_STATES:
                phase = f"{base}{form} ({state})"
                if phase in present:
                    rows.append((f"{label}, {state}", phase))
        if rows:
            groups.append(
                (f"{base}: cold, warm and hot; indexed against brute-force", rows)
            )
            used |= {p for _, p in rows}
    rest = [(p, p) for p in run.phases if p not in used]
    if rest:
        groups.append(("Update and pack", rest))
    return groups


def _then_and_now(run: RunResult, size: str, stat: str) -> str:
    s = significance.statistic(stat)
    storages = run.storages
    n = report.trial_counts(run, size, {p.name for p in PHASES_2000})
    out = [
        "<table><thead><tr><th></th>",
        f'<th class="group" colspan="{len(COLUMNS_2000)}">2000 (MEMS Exchange)</th>',
        f'<th class="group sep" colspan="{len(storages)}">today, size {escape(size)}'
        f" ({escape(s.label)} of {n})</th></tr><tr><th>task</th>",
    ]
    out += [f"<th>{escape(c)}</th>" for c in COLUMNS_2000]
    out += [
        f"<th{' class=sep' if i == 0 else ''}>{escape(st)}</th>"
        for i, st in enumerate(storages)
    ]
    out.append("</tr></thead><tbody>")
    for task, then in TABLE_2000.items():
        cells = [f"<td>{escape(task)}</td>"]
        cells += [f'<td class="then">{v:.2f}</td>' for v in then]
        for i, storage in enumerate(storages):
            r = run.get(storage, task, size)
            text = "-"
            if r is not None:
                values = [x.wall_s for x in r.samples]
                text = significance.cell_text(values, s, seconds_3)
            cells.append(_cell(text, ' class="sep"' if i == 0 else ""))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _time_tables(run: RunResult, size: str, stat: str) -> str:
    s = significance.statistic(stat)
    out = []
    for title, cpu in (("wall time", False), ("CPU time of the client", True)):
        rows = []
        for phase in run.phases:
            row = [phase]
            for storage in run.storages:
                r = run.get(storage, phase, size)
                values = [x.cpu_s if cpu else x.wall_s for x in r.samples] if r else []
                cell = significance.cell_text(values, s, time_units) if values else "-"
                row.append(cell)
            rows.append(row)
        out.append(f"<h3>{escape(title)}, size {escape(size)}, {escape(s.label)}</h3>")
        out.append(_table(["task", *run.storages], rows))
    return "".join(out)


def _sweep_section(sweep: SweepRun, stat: str) -> str:
    s = significance.statistic(stat)
    storages = list(dict.fromkeys(p.storage for p in sweep.points))
    colours = {st: svg.PALETTE[i % len(svg.PALETTE)] for i, st in enumerate(storages)}
    dashes = {"btree": "", "list": "6 4"}
    series = [
        svg.Series(f"{st} {v}", colours[st], dash=dashes.get(v, "2 3"))
        for st, v in sweep.columns
    ]
    figures = []
    for title, cpu in (("commit wall time", False), ("commit CPU time", True)):
        marks = {}
        for p in sweep.points:
            per_object = [
                (x.cpu_s if cpu else x.wall_s) * 1e6 / p.objects for x in p.samples
            ]
            iv = significance.interval(per_object, s)
            note = (
                f"{p.storage} {p.variant}, {p.objects:,} objects: {iv.estimate:.2f} "
                f"us/object [{iv.low:.2f} - {iv.high:.2f}]"
            )
            marks[(p.objects, f"{p.storage} {p.variant}")] = svg.Mark(
                iv.estimate, iv.low, iv.high, note
            )
        chart = svg.line_chart(
            sweep.sizes,
            series,
            marks,
            "objects per transaction (log scale)",
            "µs per object",
            width=500,
            height=360,
        )
        figures.append(
            f"<figure>{chart}<figcaption>{escape(title)} per object, "
            f"{escape(s.label)} with its {1 - significance.ALPHA:.0%} interval"
            "</figcaption></figure>"
        )
    variants = "; ".join(
        f"{v.name}: {v.description}"
        for v in VARIANTS.values()
        if any(p.variant == v.name for p in sweep.points)
    )
    tables = "".join(
        f"<h3>{escape(t.title)}</h3>{_table(t.header, t.rows)}"
        for t in sweep_tables(sweep)
    )
    return (
        "<h2>Cost per object against objects per transaction</h2>"
        f'<p class="note">{escape(variants)}.  One commit per trial; solid: '
        "BTree, dashed: one flat PersistentList, whose commit cost per object "
        "grows with the transaction (the pickler memo trap: docs/sweep.md).</p>"
        f'<div class="pair">{"".join(figures)}</div>{tables}'
    )


def _metadata(title: str, meta: dict[str, Any]) -> str:
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
    dl = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in items)
    config = "".join(
        f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>"
        for k, v in _flatten(meta.get("config", {}))
    )
    return (
        f"<h3>{escape(title)}</h3><dl>{dl}</dl>"
        f"<h3>{escape(title)}: configuration</h3><dl>{config}</dl>"
    )


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """{"options": {"cache_size": None}} -> [("options.cache_size", "null")]."""
    if isinstance(value, dict) and value:
        out = []
        for k in sorted(value):
            out += _flatten(value[k], f"{prefix}.{k}" if prefix else str(k))
        return out
    return [(prefix, json.dumps(value))]


def page(
    run: RunResult,
    sweep: SweepRun | None = None,
    stat: str = significance.DEFAULT_STATISTIC,
) -> str:
    """The whole report as one HTML document."""
    s = significance.statistic(stat)
    meta = run.metadata
    versions = meta.get("versions", {})
    body = [
        "<h1>vfab-loadtest results</h1>",
        f'<p class="lede">{escape(str(meta.get("date", "")))} · Python '
        f"{escape(str(meta.get('python', {}).get('version', '?')))} · ZODB "
        f"{escape(str(versions.get('ZODB', '?')))} · ZEO "
        f"{escape(str(versions.get('ZEO', '?')))} · "
        f"{escape(str(meta.get('host', {}).get('cpu_count', '?')))} CPUs · "
        f"storages: {escape(', '.join(run.storages))}</p>",
        f'<p class="note">{escape(significance.legend(s))} Times are wall '
        "seconds unless said otherwise.  Noise on a shared machine only slows "
        "a trial down, so the low end of the trials is the best estimate of "
        "what the code costs.</p>",
    ]
    for size in run.sizes:
        body.append(f"<h2>The 2000 table beside today's (size {escape(size)})</h2>")
        body.append(_then_and_now(run, size, s.name))
        note = (
            "2000: seconds on the MEMS Exchange's machine, small data set, "
            "in-memory / FileStorage / ZEO.  Today: this run's storages."
        )
        if size != "small":
            note += f"  Today's data set is {size}; 2000's was small."
        body.append(f'<p class="note">{escape(note)}</p>')
        body.append(f"<h2>Phases by storage (size {escape(size)})</h2>")
        for title, rows in chart_groups(run):
            series = _series(run.storages)
            marks = _marks(run, size, rows, s.name)
            labels = [label for label, _ in rows]
            if title == "The 2000 rows":
                shapes = ("diamond", "square", "triangle")
                for j, column in enumerate(COLUMNS_2000):
                    ref = svg.Series(
                        f"2000 {column}", svg.REFERENCE, reference=True, shape=shapes[j]
                    )
                    series.append(ref)
                    for label, phase in rows:
                        value = TABLE_2000.get(phase, (0, 0, 0))[j]
                        marks[(label, ref.name)] = svg.Mark(
                            value, value, value, f"2000, {column}, {phase}: {value} s"
                        )
            chart = svg.dot_chart(labels, series, marks)
            caption = (
                f"Wall time: dot = {s.label} over the trials, whisker = its "
                f"{1 - significance.ALPHA:.0%} bootstrap interval; log scale."
            )
            if title == "The 2000 rows":
                caption += (
                    "  Grey hollow marks: the 2000 numbers (0.00 is not drawn on a "
                    "log scale)."
                )
            body.append(
                f"<figure><h3>{escape(title)}</h3>{chart}"
                f"<figcaption>{escape(caption)}</figcaption></figure>"
            )
    if sweep is not None:
        body.append(_sweep_section(sweep, s.name))
    body.append("<h2>Tables</h2>")
    for size in run.sizes:
        body.append(_time_tables(run, size, s.name))
    for table in report.tables(run):
        if table.title.startswith(("wall time", "CPU time")):
            continue  # shown above with intervals
        body.append(f"<h3>{escape(table.title)}</h3>{_table(table.header, table.rows)}")
    body.append(f'<p class="note">{escape(COLD_WARM_HOT)}</p>')
    body.append("<h2>Metadata</h2>")
    body.append(_metadata("run", meta))
    if sweep is not None:
        body.append(_metadata("sweep", sweep.metadata))
    title = f"vfab-loadtest results {meta.get('date', '')}".strip()
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
