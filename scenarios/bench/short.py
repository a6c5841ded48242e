"""The run's short view, what `run` and `report FILE` print by default: the
2000 rows, one paragraph of what else was measured, the machine, and where
the rest is; at most SHORT_LINES lines.
"""

from __future__ import annotations

import textwrap

from scenarios.bench import report
from scenarios.bench.phases import PHASES_2000
from scenarios.results import significance
from scenarios.results.model import RunResult
from scenarios.results.significance import SHORT_S
from scenarios.results.table import Table

#: The most lines the short view of a one-size run prints.
SHORT_LINES = 60
WIDTH = 79


def _2000_table(run: RunResult, size: str, stat: str) -> Table | None:
    """The wall-time table cut to the 2000 rows."""
    wall = report.phase_tables(run, size, stat)[0]
    names = {p.name for p in PHASES_2000}
    rows = [row for row in wall.rows if row[0] in names]
    if not rows:
        return None
    title = wall.title.replace("wall time", "wall time of the 2000 rows", 1)
    return Table(title, wall.header, rows)


def _wrap(text: str) -> str:
    return textwrap.fill(text, WIDTH, break_on_hyphens=False)


def _phrase(title: str) -> str:
    """A table's title as a phrase of the "Also measured" sentence: the
    titles that are not noun phrases on their own made so."""
    if title.startswith("of the wall time: "):
        return "the share of the wall time spent in " + title.split(": ", 1)[1]
    if title == "after the run":
        return "each storage after the run (its trials, size on disk, peak RSS)"
    return title


def _series(parts: list[str]) -> str:
    """ "a", "a and b", "a; b; and c" (parts may hold commas)."""
    if len(parts) < 3:
        return " and ".join(parts)
    return "; ".join(parts[:-1]) + "; and " + parts[-1]


def also_measured(run: RunResult, stat: str) -> str:
    """One paragraph: the other rows and tables, and those not shown."""
    names = {p.name for p in PHASES_2000}
    others = [p for p in run.phases if p not in names]
    kept = [t.title.split(", size")[0] for t in report.tables(run, stat)]
    # The first kept table is the wall time, shown here in part.
    tables = [t for t in dict.fromkeys(kept) if not t.startswith("wall time")]
    parts = []
    if others:
        parts.append(
            f"the wall time of {len(others)} more rows (each query cold, warm "
            "and hot, brute-force and indexed; update and pack)"
        )
    parts += [_phrase(t) for t in tables]
    text = f"Also measured: {_series(parts)}." if parts else ""
    left_out = report.omitted(run, stat)
    if left_out:
        text += " Not shown anywhere, every cell equal or empty: "
        text += "; ".join(left_out) + "."
    return text.strip()


def legend(run: RunResult, stat: str) -> str:
    s = significance.statistic(stat)
    return (
        f"A cell is the {s.label} of the trials; ± half the width of its "
        f"{1 - significance.ALPHA:.0%} bootstrap interval; ! an interval wider "
        f"than ±{significance.WIDE:.0%}; ~ under {SHORT_S * 1000:g} ms, too "
        "short to compare between runs."
    )


def text(run: RunResult, stat: str | None = None, rest: str = "") -> str:
    """The short view; *rest*: where the whole report is (a sentence)."""
    name = report.run_statistic(run, stat)
    parts: list[str] = []
    for size in run.sizes:
        t = _2000_table(run, size, name)
        if t is not None:
            parts.append(t.text())
    for paragraph in (
        also_measured(run, name),
        legend(run, name),
        " ".join(report.machine_lines(run.metadata)),
    ):
        if paragraph:
            parts.append(_wrap(paragraph))
    if rest:
        parts.append(rest)  # a command line: not broken across lines
    return "\n\n".join(parts) + "\n"


def rest_of(json_path: object | None, html_path: object | None) -> str:
    """Where the rest of a run's report is, given the files it wrote: each
    command on a line of its own, never broken."""
    if json_path is not None:
        where = f"The whole report: vfab-bench report {json_path} --all"
        if html_path is not None:
            return where + f";\nthe page with charts: {html_path}."
        return where + "\n(--html FILE for the page with charts)."
    if html_path is not None:
        return (
            f"The page with every table and chart: {html_path};\n--all prints "
            "every table here."
        )
    return (
        "Every table: run with --all, or with --json FILE, then vfab-bench "
        "report FILE --all\n(--html FILE: the page with charts)."
    )
