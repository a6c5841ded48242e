"""vfab-bench: the command line, one module per subcommand.

Each subcommand module has register(subparsers), which adds its parser and
sets `handler`.  Arguments become one frozen configuration; bad input of
any kind (ConfigError, StorageError, ResultsError, or an argparse error)
becomes one line on stderr and exit status 2 (EXIT_BAD_INPUT; every
exit status is named in scenarios.errors) here, at the edge, and nowhere
else; nothing is written before the input has been checked.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import storages
from scenarios.cli import (
    census,
    list_storages,
    populate,
    report,
    run,
    scale,
    serve,
    status,
    sweep,
    zeoloop,
)
from scenarios.cli.args import Parser
from scenarios.cli.interrupts import defer_interrupts
from scenarios.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ConfigError
from scenarios.results.files import ResultsError
from storages import StorageError

#: Subcommand modules, in the order --help lists them.
COMMANDS = (
    run,
    report,
    list_storages,
    populate,
    census,
    sweep,
    serve,
    zeoloop,
    scale,
    status,
)


def build_parser() -> Parser:
    parser = Parser(
        prog="vfab-bench",
        description="Time a virtual-fab workload (create, commit, query) on "
        "ZODB storages; print the MEMS Exchange 2000 table for today's stack.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    defer_interrupts()
    try:
        return int(args.handler(args))
    except (ConfigError, StorageError, ResultsError, *storages.user_errors()) as e:
        print(f"vfab-bench: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("vfab-bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
