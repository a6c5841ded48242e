"""vfab-bench: the command line, one module per subcommand (register() adds
its parser and sets `handler`).  Arguments become one frozen
configuration; any error is one line on stderr at the edge (cli/edge.py),
exit 2 for bad input; nothing is written before the input is checked.
"""

from __future__ import annotations

from scenarios.cli.early import is_program, prepare_program

prepare_program()  # before the imports below, which take a moment

import argparse  # noqa: E402
import gc  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from scenarios.cli import (  # noqa: E402
    ab,
    census,
    choose,
    compare,
    edge,
    helptext,
    list_storages,
    matrix,
    populate,
    release,
    report,
    run,
    scale,
    serve,
    status,
    sweep,
    trend,
    verify,
    worker,
    zeoloop,
)
from scenarios.cli.args import Parser, show_bounds, show_defaults  # noqa: E402
from scenarios.errors import EXIT_BAD_INPUT, EXIT_PIPE_CLOSED  # noqa: E402
from scenarios.interrupts import (  # noqa: E402
    defer_interrupts,
    exit_status,
    forget_interrupts,
    interrupt_again,
    signal_of,
    stop_line,
    undelivered,
)
from scenarios.printable import (  # noqa: E402
    reserve_standard_streams,
    silence_stdout,
    stdout_closed,
)
from scenarios.progress import command_started, process_age  # noqa: E402

#: When this process began, if vfab-bench is its program (monotonic clock):
#: asked while the package imports, when is_program() can tell.
PROGRAM_STARTED = time.monotonic() - process_age() if is_program() else None

#: Subcommand modules, in the order --help lists them.
COMMANDS = (
    run,
    report,
    compare,
    trend,
    list_storages,
    populate,
    census,
    sweep,
    matrix,
    serve,
    zeoloop,
    scale,
    worker,
    verify,
    choose,
    status,
    release,
    ab,
    helptext,
)


def build_parser() -> Parser:
    parser = Parser(
        prog="vfab-bench",
        description=helptext.refill(
            "Time a virtual-fab workload (create, commit, query) on ZODB "
            "storages; print the MEMS Exchange 2000 table for today's stack."
        ),
        formatter_class=helptext.HelpFormatter,
    )
    debug_help = "show the traceback of an error (also: VFAB_DEBUG=1)"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    storage, mix = helptext.storage_dests(), helptext.mix_dests()
    # Each parser once, under its own name (an alias maps to the same one).
    commands = {id(p): (name, p) for name, p in reversed(sub.choices.items())}
    for name, subparser in commands.values():
        helptext.finish(name, subparser, storage, mix)
    sub.choices["help"].set_defaults(parser=parser)
    show_defaults(parser)
    show_bounds(parser)
    for _, subparser in commands.values():
        # After the subcommand too; SUPPRESS keeps the top-level value.
        subparser.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help
        )
    return parser


def quiet_after_interrupt() -> None:
    """After the stop line, the last word: what the libraries' threads say
    while the interpreter ends (a ZEO load cut short logs "exception was
    never retrieved", a closed cache file raises in its I/O thread, a
    finalizer fails) is not printed after it.

    The hooks cover what is said before the interpreter's own teardown;
    what a finalizer says during it (a ZEO future collected once the
    modules are cleared goes to the default hook, and in a process gevent
    patched fails again with "greenlet is being finalized") only the
    program's stderr pointed at /dev/null silences.  Not done in a test's
    process, whose stderr is pytest's."""
    import logging
    import os
    import threading

    logging.disable(logging.CRITICAL)
    threading.excepthook = lambda args: None
    sys.unraisablehook = lambda unraisable: None
    if is_program():
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    # "elapsed" counts from the program's start (its imports included), or
    # for a caller in its own process, from here.
    command_started(PROGRAM_STARTED)
    reserve_standard_streams()  # before any file is opened
    parser = build_parser()
    args = parser.parse_args(argv)
    # What was typed, for a command that re-executes itself (run --counts).
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    debug = edge.debug_wanted(getattr(args, "debug", False))
    defer_interrupts()
    try:
        edge.check_working_directory()
        with edge.logging_to_stderr(debug, keep=is_program()):
            status = int(args.handler(args))
            if undelivered():  # a stop the command never waited to receive
                raise interrupt_again()
        sys.stdout.flush()  # a closed pipe met here, not in Python's exit
        return status
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM or SIGHUP: cleaned up
        signum = signal_of(e)
        print(stop_line(signum), file=sys.stderr)
        quiet_after_interrupt()
        return exit_status(signum)
    except Exception as e:  # noqa: BLE001 - the edge: every error is one line
        if isinstance(e, BrokenPipeError) and stdout_closed():
            silence_stdout()  # printing is a courtesy: quietly, no error
            return EXIT_PIPE_CLOSED
        return edge.report(e, debug)
    finally:
        forget_interrupts()
        if is_program():
            collect_while_logging_works()


def collect_while_logging_works() -> None:
    """Collect what the command left in reference cycles now, while its
    log handler and gevent still work, not at the interpreter's exit: a ZEO
    request cut short by a stop leaves a future whose ClientDisconnected
    nobody read, and its __del__ logs it; at exit, in a process gevent
    patched, that logging fails ("RuntimeError: greenlet is being
    finalized", a traceback after "interrupted": scale --workers, SIGINT
    mid-point, 2 runs in 20 under load)."""
    gc.collect()
