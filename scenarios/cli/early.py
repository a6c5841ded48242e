"""Ctrl-C, SIGTERM, SIGHUP and SIGXCPU before the command line is ready.

Importing the command line (ZODB, ZEO, RelStorage, the subcommands) takes
a moment; a signal then used to end in Python's KeyboardInterrupt
traceback from whatever import it landed in.  Nothing has started yet
(no file written, no process started), so the program exits at once,
silently, with 128 + the signal, as every command does once it runs
(scenarios.cli.interrupts replaces these handlers in main()).  Installed
only when vfab-bench is the program (python -m scenarios.cli, the
vfab-bench script), never by a mere import (tests, locust); stdlib only,
so that it is in place before the heavy imports.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

#: The signals that stop a command (scenarios.cli.interrupts.STOP_SIGNALS).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGXCPU)


def _exit_now(signum: int, frame: object) -> None:
    os._exit(128 + signum)


def is_program() -> bool:
    """vfab-bench is this process's program: ``python -m scenarios.cli``
    (while the package imports, sys.argv[0] is "-m") or the console
    script."""
    program = sys.argv[0] if sys.argv else ""
    return program == "-m" or os.path.basename(program) == "vfab-bench"


def exit_on_signals_while_starting() -> None:
    """Until main() installs its own, a stop signal exits at once with
    128 + the signal and no traceback; only in the program's main thread,
    and only where nobody set a handler of their own."""
    if not is_program() or threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) in (signal.default_int_handler, signal.SIG_DFL):
            signal.signal(signum, _exit_now)
