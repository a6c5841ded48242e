"""vfab-bench: the command line, one module per subcommand.

Each subcommand module has register(subparsers), which adds its parser and
sets `handler`.  Arguments become one frozen configuration; bad input of
any kind (ConfigError, StorageError, ResultsError, or an argparse error)
becomes one line on stderr and exit status 2 here, at the edge, and nowhere
else; nothing is written before the input has been checked.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from scenarios.cli import (
    census,
    compare,
    list_storages,
    populate,
    report,
    run,
    serve,
    status,
    sweep,
    zeoloop,
)
from scenarios.cli.args import EXIT_BAD_INPUT, EXIT_INTERRUPTED, Parser
from scenarios.errors import ConfigError
from scenarios.results.model import ResultsError
from storages import StorageError
from storages.base import defer_interrupts

#: Subcommand modules, in the order --help lists them.
COMMANDS = (
    run,
    report,
    compare,
    list_storages,
    populate,
    census,
    sweep,
    serve,
    zeoloop,
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
    except (ConfigError, StorageError, ResultsError) as e:
        print(f"vfab-bench: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("vfab-bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
