"""vfab-bench report: the tables of a saved --json file."""

from __future__ import annotations

import argparse

from scenarios import argtypes
from scenarios.errors import EXIT_OK
from scenarios.results import report
from scenarios.results.model import RunResult


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("report", help="print the tables of a saved --json file")
    p.add_argument("file", type=argtypes.path)
    p.add_argument("--markdown", action="store_true", help="print Markdown")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    result = RunResult.load(args.file)
    print(report.markdown(result) if args.markdown else report.text(result), end="")
    return EXIT_OK
