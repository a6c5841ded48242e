"""vfab-bench report: the tables of any file the suite saves (run, sweep,
scale, counts), or (--html) one self-contained page with charts; a run's page
can add a sweep's cost curve and a scale run's curves.  --pyperf writes a
run file in pyperf's format."""

from __future__ import annotations

import argparse
from pathlib import Path

from scenarios import argtypes
from scenarios.cli.outputs import (
    add_output_options,
    check_outputs,
    write_pyperf,
    write_text,
)
from scenarios.errors import EXIT_OK, ConfigError
from scenarios.results import significance
from scenarios.results.files import ResultsError, read_json

#: "kind" -> what the file is, for the kinds report reads.
KINDS = {None: "run", "sweep": "sweep", "scale": "scale", "counts": "counts"}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "report",
        help="print the tables of a saved --json file (run, sweep, scale, counts)",
    )
    p.add_argument("file", type=argtypes.path)
    p.add_argument(
        "--all",
        action="store_true",
        help="a run file: every table (default: the 2000 rows and what else "
        "was measured)",
    )
    p.add_argument(
        "--markdown", action="store_true", help="print every table as Markdown"
    )
    p.add_argument(
        "--statistic",
        choices=list(significance.STATISTICS),
        help="what a time cell shows (default: the statistic the file records, "
        f"run --statistic; {significance.DEFAULT_STATISTIC} for files that "
        "record none)",
    )
    p.add_argument(
        "--sweep",
        type=argtypes.path,
        metavar="SWEEP.json",
        help="with --html and a run file: add the cost curve of a `sweep --json` file",
    )
    p.add_argument(
        "--scale",
        type=argtypes.path,
        metavar="SCALE.json",
        help="with --html and a run file: add the curves of a `scale --json` file",
    )
    p.add_argument(
        "--cost-model",
        type=argtypes.path,
        metavar="OTHER.json",
        help="a count file (run --counts --json) for a time file, or a time "
        "file for a count file: print nanoseconds per instruction per phase, "
        "which phases compute and which wait for I/O or the network",
    )
    add_output_options(
        p,
        html="also write a self-contained HTML page: tables, charts, metadata",
        pyperf="a run file: also write its trials as a pyperf JSON suite",
    )
    p.set_defaults(handler=main)


def kind_of(path: Path) -> str:
    """ "run", "sweep", "scale" or "counts"; a ResultsError line for any
    other file."""
    data = read_json(path)
    found = data.get("kind") if isinstance(data, dict) else "?"
    if found not in KINDS:
        raise ResultsError(
            f"{path}: not a file report reads (kind {found!r}); it reads run, "
            "sweep, scale and counts files"
        )
    return KINDS[found]


def main(args: argparse.Namespace) -> int:
    extras = [o for o in ("sweep", "scale") if getattr(args, o) is not None]
    if extras and args.html is None:
        raise ConfigError(f"--{extras[0]} needs --html")
    kind = "run" if args.cost_model is not None else kind_of(args.file)
    if kind != "run" and extras:
        raise ConfigError(f"--{extras[0]} goes with a run file")
    if kind != "run" and args.pyperf is not None:
        raise ConfigError("--pyperf writes the trials of a run file")
    if kind == "counts" or args.cost_model is not None:
        from scenarios.counts import commands as counts

        return counts.report_main(args)  # run --counts files, the cost model
    check_outputs(args)
    if kind == "scale":
        return _scale(args)
    if kind == "sweep":
        return _sweep(args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    from scenarios.results import report
    from scenarios.results.model import RunResult

    result = RunResult.load(args.file)
    sweep = scale = None
    if args.sweep is not None:
        from scenarios.sweep.results import SweepRun

        sweep = SweepRun.load(args.sweep)
    if args.scale is not None:
        from scenarios.scale.results import ScaleRun

        scale = ScaleRun.read(args.scale)
    stat = args.statistic
    if args.html is not None:
        from scenarios.results import html

        write_text(args.html, html.page(result, sweep, stat, scale), args.force)
    if args.pyperf is not None:
        from scenarios.results import pyperf_suite

        write_pyperf(args.pyperf, pyperf_suite.text(result), args.force)
    if args.markdown:
        print(report.markdown(result, stat), end="")
    elif args.all:
        print(report.text(result, stat), end="")
    elif args.html is None and args.pyperf is None:
        # A page or a pyperf file asked for: that is the output.
        from scenarios.results import short

        rest = f"Every table: vfab-bench report {args.file} --all."
        print(short.text(result, stat, rest), end="")
    return EXIT_OK


def _scale(args: argparse.Namespace) -> int:
    from scenarios.results import table
    from scenarios.scale import report
    from scenarios.scale.results import ScaleRun

    run = ScaleRun.read(args.file)
    if args.html is not None:
        from scenarios.results import pages

        write_text(args.html, pages.scale_page(run), args.force)
        if not args.markdown:
            return EXIT_OK
    if args.markdown:
        points = list(run.points)
        tables = [
            report.points_table(points, run.cores),
            report.operations_table(points),
        ]
        print(table.markdown(tables, ["# vfab-loadtest scale"], report.LEGEND), end="")
    else:
        print(report.text(run), end="")
    return EXIT_OK


def _sweep(args: argparse.Namespace) -> int:
    from scenarios.results import table
    from scenarios.sweep import report
    from scenarios.sweep.results import SweepRun

    run = SweepRun.load(args.file)
    if args.html is not None:
        from scenarios.results import pages

        write_text(args.html, pages.sweep_page(run, args.statistic), args.force)
        if not args.markdown:
            return EXIT_OK
    if args.markdown:
        tables = report.tables(run, args.statistic)
        print(table.markdown(tables, ["# vfab-loadtest sweep"]), end="")
    else:
        print(report.text(run, args.statistic), end="")
    return EXIT_OK
