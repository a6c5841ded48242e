"""vfab-bench trend (once `history`, still accepted): many saved run files
(or release directories) as one table of each cell's trend in version
order, steps marked; --html the same as a page.
"""

from __future__ import annotations

import argparse

from scenarios import argtypes
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.errors import ConfigError
from scenarios.results import significance
from scenarios.results.kinds import Found, View, sniff
from scenarios.trend import table as trend


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "trend",
        aliases=["history"],
        help="trends of many saved run files or release directories across "
        "versions, steps marked",
        description="Read run files (vfab-bench run --json; a directory gives "
        "its *.json, files of other kinds left out with a note) or release "
        "directories (every part: the 2000 table, counts, the curve, the "
        "million run, consistency), put them in order by the version "
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
        help="run files, directories of them, or release directories",
    )
    p.add_argument(
        "--by",
        default=trend.DEFAULT_BY,
        metavar="PACKAGE",
        help="order by the version of this package as the runs recorded it "
        f"(default: {trend.DEFAULT_BY}); 'python' for Python's, 'date' for "
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
        json="also write the trend as JSON: the runs in order, each cell's "
        "value, interval and samples per run, and each step with compare's "
        "numbers (p, q, ratio)",
    )
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:

    found = [sniff(p) for p in args.inputs]
    if any(f.kind == "release" for f in found):
        return _releases(args, found)
    # Check the outputs against the files read, not their directories: a
    # page may be written beside the runs it shows.
    from scenarios.registry import AS_RUN

    read = trend.read_runs(found, AS_RUN)
    named = args.inputs
    args.inputs = [path for path, *_ in read[0]] or named
    check_outputs(args)
    result = trend.build(named, args.by, args.statistic, args.cpu, read)
    from scenarios.trend import page

    files = {"json": result.to_json, "html": lambda: page.page(result)}
    return emit(args, View(result.text(), files))


def _releases(args: argparse.Namespace, found: list[Found]) -> int:
    from scenarios.release import page
    from scenarios.release import trend as release_trend
    from scenarios.release.kind import load

    others = [str(f.path) for f in found if f.kind != "release"]
    if others:
        raise ConfigError(
            f"{', '.join(others)}: not release directories; give release "
            "directories or run files, not both"
        )
    check_outputs(args)
    releases = [load(f) for f in found]
    result = release_trend.build(releases, args.by, args.statistic, args.cpu)
    files = {"json": result.to_json, "html": lambda: page.history_page(result)}
    return emit(args, View(result.text(), files))
