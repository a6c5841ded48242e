"""The count files in `compare` and `report`: told apart from time files by
their "kind", a mixed pair refused in one line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scenarios.counts.model import CountRun
from scenarios.errors import EXIT_OK, ConfigError
from scenarios.results.files import ResultsError, read_json
from scenarios.results.formatter import plural

#: compare's exit status when a cell grew above --fail-above.
EXIT_MORE = 1


def is_counts(path: Path) -> bool:
    """Whether *path* is a count file (kind "counts"); read errors are left
    to the reader that follows."""
    try:
        data = read_json(path)
    except ResultsError:
        return False
    return isinstance(data, dict) and data.get("kind") == "counts"


def compare_main(args: argparse.Namespace) -> int:
    """`vfab-bench compare OLD NEW` where either is a count file."""
    from scenarios.cli.outputs import check_outputs
    from scenarios.counts.compare import compare_counts
    from scenarios.outputs import write_text

    if args.new is None:
        raise ConfigError("--baseline compares time files; give two count files")
    if not (is_counts(args.old) and is_counts(args.new)):
        counts, other = (
            (args.old, args.new)
            if is_counts(args.old)
            else (
                args.new,
                args.old,
            )
        )
        raise ResultsError(
            f"{counts} is a count file and {other} is not: compare counts with "
            "counts, times with times (report --cost-model links the two)"
        )
    if args.cpu:
        raise ConfigError("--cpu compares time files; count files have no CPU time")
    check_outputs(args)
    old, new = CountRun.load(args.old), CountRun.load(args.new)
    result = compare_counts(old, new, str(args.old), str(args.new))
    print(result.text(), end="")
    if args.json is not None:
        write_text(args.json, json.dumps(result.to_json(), indent=1) + "\n", args.force)
    if args.markdown is not None:
        write_text(args.markdown, result.markdown(), args.force)
    if args.fail_above is not None:
        failed = result.above(args.fail_above)
        if failed:
            cells = "; ".join(f"{c.column} {c.row}: {c.line}" for c in failed[:8])
            if len(failed) > 8:
                cells += f"; and {len(failed) - 8} more"
            print(
                f"vfab-bench compare: {plural(len(failed), 'cell')} grew above "
                f"{args.fail_above:.0%}: {cells}",
                file=sys.stderr,
            )
            return EXIT_MORE
    return EXIT_OK


def report_main(args: argparse.Namespace) -> int:
    """`vfab-bench report FILE` where FILE is a count file, or with
    --cost-model where FILE or the other one is."""
    from scenarios.cli.outputs import check_outputs
    from scenarios.counts import costmodel, html, report
    from scenarios.outputs import write_text
    from scenarios.results import table
    from scenarios.results.model import RunResult

    check_outputs(args)
    other = getattr(args, "cost_model", None)
    if other is not None:
        first, second = is_counts(args.file), is_counts(other)
        if first == second:
            kind = "count" if first else "time"
            raise ConfigError(
                f"--cost-model needs a time file and a count file; both are "
                f"{kind} files"
            )
        counts_path, times_path = (args.file, other) if first else (other, args.file)
        counts = CountRun.load(counts_path)
        times = RunResult.load(times_path)
        tables = costmodel.cost_tables(times, counts)
        print(
            table.markdown(tables, ["# vfab-loadtest cost model"])
            if args.markdown
            else table.text(
                tables, costmodel.__doc__.split("\n\n")[0].replace("\n", " ")
            ),
            end="",
        )
        return EXIT_OK
    run = CountRun.load(args.file)
    if args.html is not None:
        write_text(args.html, html.page(run), args.force)
        if not args.markdown:
            return EXIT_OK  # the page is the output asked for
    print(report.markdown(run) if args.markdown else report.text(run), end="")
    return EXIT_OK
