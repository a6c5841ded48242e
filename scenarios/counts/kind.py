"""The count run as a result kind: what run --counts and report show of a
CountRun (its tables, Markdown, the page), compare by cells (exit 1 on a
cell grown above --fail-above), and report --cost-model."""

from __future__ import annotations

from typing import Any

from scenarios.counts import costmodel, page, report
from scenarios.counts.compare import compare_counts
from scenarios.counts.model import CountRun
from scenarios.errors import ConfigError
from scenarios.results import table
from scenarios.results.formatter import plural
from scenarios.results.kinds import View, shown, stored
from scenarios.results.model import RunResult


def view(run: CountRun, text: str = "text") -> View:
    """*run*'s text ("text", "markdown" or "") and its files."""
    files = {"markdown": lambda: report.markdown(run), "html": lambda: page.page(run)}
    return shown(run, report, text, files)


def _compare(old: CountRun, new: CountRun, args: Any) -> View:
    result = compare_counts(old, new, str(args.old), str(args.new))
    failed = [] if args.fail_above is None else result.above(args.fail_above)
    cells = [c.gate_name for c in result.biggest(failed)]
    grew = f"{plural(len(failed), 'cell')} grew above {args.fail_above or 0:.0%}"
    return result.view(cells, grew, 8, unchecked=result.unchecked)


def cost_model(first: Any, second: Any, markdown: bool) -> View:
    """report --cost-model: nanoseconds per instruction per phase, from a
    run file and a count file (in either order)."""
    times, counts = (first, second) if isinstance(first, RunResult) else (second, first)
    if not (isinstance(times, RunResult) and isinstance(counts, CountRun)):
        got = {type(first), type(second)}
        both = {frozenset({RunResult}): "time", frozenset({CountRun}): "count"}
        what = both.get(frozenset(got))
        given = f"both are {what} files" if what else "in either order"
        raise ConfigError(
            "--cost-model needs a time file (run --json) and a count file "
            f"(run --counts --json); {given}"
        )
    tables = costmodel.cost_tables(times, counts)
    if markdown:
        return View(table.markdown(tables, ["# vfab-loadtest cost model"]))
    summary = (costmodel.__doc__ or "").split("\n\n")[0].replace("\n", " ")
    return View(table.text(tables, summary))


KIND = stored(
    CountRun,
    "count file",
    view,
    frozenset({"all", "markdown", "html"}),
    _compare,
    frozenset({"fail_above", "json", "markdown"}),
)
