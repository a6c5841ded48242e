"""compare's view of two run or sweep files (or one against a baseline):
the text, Markdown and JSON of the Comparison, its page (per column, old
against new drawn trial by trial), and the --fail-above gate."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from scenarios.results import formatter, htmlbase, svg
from scenarios.results.compare import (
    Compared,
    Comparison,
    compare_baseline,
    compare_files,
)
from scenarios.results.formatter import plural
from scenarios.results.kinds import View
from scenarios.results.table import WIDTH


def page(result: Comparison, changed: bool = False) -> str:
    """Per column, a chart of old against new (each trial a tick) and the
    table of verdicts."""
    body = [
        "<h1>vfab-loadtest compare</h1>",
        f'<p class="lede">{escape(result.heading())}</p>',
        *(f'<p class="note wide">{escape(w)}</p>' for w in result.warnings),
    ]
    old, new = svg.Series("old", svg.PALETTE[0]), svg.Series("new", svg.PALETTE[1])
    for column in result.columns:
        cells = [c for c in result.cells if c.column == column]
        shown = [c for c in cells if c.changed or not changed]
        if not shown:
            continue
        marks: dict[tuple[str, str], svg.Mark] = {}
        for c in shown:
            d = c.difference
            for series, iv, values in (
                (old, d.old, c.samples[0]),
                (new, d.new, c.samples[1]),
            ):
                note = f"{column}, {c.row}, {series.name}: " + formatter.duration(
                    iv.estimate
                )
                marks[(c.row, series.name)] = svg.Mark(
                    iv.estimate, iv.low, iv.high, note, values
                )
        chart = svg.dot_chart([c.row for c in shown], [old, new], marks)
        rows = [
            [
                c.row,
                f"{c.trials[0]} vs {c.trials[1]}",
                formatter.duration(c.difference.old.estimate),
                formatter.duration(c.difference.new.estimate),
                c.words,
                c.pvalues(),
            ]
            for c in shown
        ]
        body.append(f"<h2>{escape(column)}</h2><figure>{chart}</figure>")
        body.append(
            htmlbase.table(["task", "trials", "old", "new", "change", "p, q"], rows)
        )
        body.append(f'<p class="note">{escape(result.column_summary(column))}</p>')
    return htmlbase.document(f"vfab-loadtest compare: {result.title}", body)


#: compare's options that apply to run and sweep files: every one.
OPTIONS = frozenset(
    {"baseline", "cpu", "statistic", "pvalues", "changed", "fail_above"}
    | {"json", "markdown", "html"}
)
#: compare's exit status when a significant slowdown exceeds --fail-above.
EXIT_SLOWER = 1


def view(old: Compared, new: Compared | None, args: Any) -> View:
    """compare's view of two run or sweep files (*new* None: the storages
    of *old* against args.baseline); exit EXIT_SLOWER on a significant
    slowdown above args.fail_above."""
    if new is not None:
        result = compare_files(
            old, new, str(args.old), str(args.new), args.cpu, args.statistic
        )
    else:
        result = compare_baseline(
            old, args.baseline, str(args.old), args.cpu, args.statistic
        )
    shown = (args.pvalues, args.changed)
    note, status = "", 0
    failed = [] if args.fail_above is None else result.slowdowns_above(args.fail_above)
    if failed:
        # Short: the view on stdout has each cell's whole line.
        cells = [
            f"{c.column} {c.row}: {c.difference.ratio or 0:.2f}x slower "
            f"({c.difference.change or 0:+.0%})"
            for c in failed
        ]
        slowdowns = plural(len(failed), "significant slowdown")
        above = f"{slowdowns} above {args.fail_above:.0%}"
        head = f"vfab-bench compare: {above}: "
        note = head + listed(cells, 5, WIDTH - len(head))
        status = EXIT_SLOWER
    return View(
        result.text(*shown),
        {
            "json": result.to_json,
            "markdown": lambda: result.markdown(*shown),
            "html": lambda: page(result, args.changed),
        },
        note,
        status,
    )


def listed(items: Sequence[str], most: int, room: int | None = None) -> str:
    """The first *most* of *items*, "; " between them, and how many more;
    with *room*, only as many as fit in that many columns (one at least):
    a gate's line stays one line a CI log can grep, within the width of
    every view, and the view on stdout names every cell."""
    shown = 1
    while shown < min(most, len(items)):
        rest = len(items) - shown - 1
        more = f"; and {rest} more" if rest else ""
        if room is not None and len("; ".join(items[: shown + 1]) + more) > room:
            break
        shown += 1
    out = "; ".join(items[:shown]) if items else ""
    if len(items) > shown:
        out += f"; and {len(items) - shown} more"
    return out
