"""vfab-bench history: many saved run files (a directory of --json files,
from several ZODB versions, storage versions or commits) as one table of
each cell's trend, ordered by the versions the runs recorded, with the
steps marked; --html writes the same as one offline page with charts."""

from __future__ import annotations

import argparse

from scenarios import argtypes
from scenarios.cli.outputs import (
    add_output_options,
    check_outputs,
    write_json,
    write_text,
)
from scenarios.errors import EXIT_OK
from scenarios.results import history, significance


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "history",
        help="trends of many saved run files across versions, steps marked",
        description="Read run files (vfab-bench run --json; a directory gives "
        "its *.json, other kinds left out), put them in order by the version "
        "of a package each run recorded (PEP 440 order, then date), and show "
        "each cell's (task x storage) value across them.  A step is a change "
        "from the previous run that compare would call significant: the same "
        "statistic, permutation test and false discovery rate over the "
        "cells of the pair.  Runs must share the data set's scale and seed.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        type=argtypes.path,
        metavar="DIR_OR_FILE",
        help="run files, or directories of them",
    )
    p.add_argument(
        "--by",
        default=history.DEFAULT_BY,
        metavar="PACKAGE",
        help="order by the version of this package as the runs recorded it "
        f"(default: {history.DEFAULT_BY}); 'python' for Python's, 'date' for "
        "the runs' dates alone",
    )
    p.add_argument("--cpu", action="store_true", help="CPU time instead of wall")
    p.add_argument(
        "--statistic",
        choices=list(significance.STATISTICS),
        default=None,
        help="what each value is over a run's trials, and what the test "
        "compares (default: the statistic the runs recorded when they agree, "
        f"else {significance.DEFAULT_STATISTIC})",
    )
    add_output_options(
        p,
        html="also write a self-contained HTML page with a trend chart per task",
        json="also write the history as JSON: the runs in order, each cell's "
        "value, interval and samples per run, and each step with compare's "
        "numbers (p, q, ratio)",
    )
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    # Check the outputs against the files read, not their directories: a
    # page may be written beside the runs it shows.
    read = history.read_runs(args.inputs)
    named = args.inputs
    args.inputs = [path for path, _ in read[0]] or named
    check_outputs(args)
    result = history.build(named, args.by, args.statistic, args.cpu, read)
    print(result.text(), end="")
    if args.html is not None:
        from scenarios.results import history_html

        write_text(args.html, history_html.page(result), args.force)
    if args.json is not None:
        write_json(args.json, result.to_json(), args.force)
    return EXIT_OK
