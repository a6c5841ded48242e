"""vfab-bench report: the tables of a saved --json file, or (--html) one
self-contained page with charts, optionally with a sweep's cost curve."""

from __future__ import annotations

import argparse

from scenarios import argtypes
from scenarios.cli.outputs import add_output_options, check_outputs, write_text
from scenarios.errors import EXIT_OK, ConfigError
from scenarios.results import report
from scenarios.results.model import RunResult


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("report", help="print the tables of a saved --json file")
    p.add_argument("file", type=argtypes.path)
    p.add_argument("--markdown", action="store_true", help="print Markdown")
    p.add_argument(
        "--sweep",
        type=argtypes.path,
        metavar="SWEEP.json",
        help="with --html: add the cost curve of a `sweep --json` file",
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
        p, html="also write a self-contained HTML page: tables, charts, metadata"
    )
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    if args.sweep is not None and args.html is None:
        raise ConfigError("--sweep needs --html")
    from scenarios.counts import commands as counts

    if args.cost_model is not None or counts.is_counts(args.file):
        if args.sweep is not None:
            raise ConfigError("--sweep goes with a time file alone")
        return counts.report_main(args)  # run --counts files, the cost model
    check_outputs(args)
    result = RunResult.load(args.file)
    sweep = None
    if args.sweep is not None:
        from scenarios.sweep.results import SweepRun

        sweep = SweepRun.load(args.sweep)
    print(report.markdown(result) if args.markdown else report.text(result), end="")
    if args.html is not None:
        from scenarios.results import html

        write_text(args.html, html.page(result, sweep), args.force)
    return EXIT_OK
