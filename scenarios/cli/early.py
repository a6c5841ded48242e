"""Ctrl-C, SIGTERM, SIGHUP and SIGXCPU before the command line is imported: exit at
once, silently, with 128 + the signal (nothing has started yet); an out of
memory while importing it one line, exit 2; stdout and stderr that replace
what they cannot encode.  Stdlib only, installed only when vfab-bench is
the program (docs/internals.md).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from types import TracebackType

try:
    import resource
except ImportError:  # its library could not be mapped: memory is short
    resource = None  # type: ignore[assignment]

from scenarios.printable import prepare_streams

#: The signals that stop a command (scenarios.interrupts.STOP_SIGNALS).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGXCPU)

#: Exit status of bad input (scenarios.errors.EXIT_BAD_INPUT, which this
#: stdlib-only module does not import).
EXIT_BAD_INPUT = 2

#: What an out of memory while starting says: made now, when memory is
#: there, and written without building anything then.
OUT_OF_MEMORY = (
    b"vfab-bench: error: out of memory while starting (a memory limit such as "
    b"ulimit -v is too low for Python and the storages' libraries)\n"
)


#: The least address space (ulimit -v) vfab-bench starts in.  Below it
#: CPython itself runs short while it builds the MemoryError of an import
#: and aborts ("Fatal Python error: _PyErr_NormalizeException: Cannot
#: recover from MemoryErrors"), a traceback dump no handler can turn into
#: one line: CI saw it at 28 MB, once the command line imported one
#: module more.  Refused before anything imports, the same at any size
#: below; the report itself needs far more (numpy, 90-130 MB).
MIN_ADDRESS_SPACE = 48 * 2**20


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


def out_of_memory_hook(
    kind: type[BaseException],
    error: BaseException,
    tb: TracebackType | None,
    previous: object = sys.__excepthook__,
) -> None:
    """sys.excepthook while the program starts: an out of memory that
    escapes an import (the console script imports the command line outside
    main()) is one line and exit 2; any other error is Python's own report.
    Under a memory limit, the SystemError an import raises when an
    allocation failed without saying so is one too."""
    if is_out_of_memory(error) or (isinstance(error, SystemError) and memory_limited()):
        os.write(2, OUT_OF_MEMORY)
        os._exit(EXIT_BAD_INPUT)
    previous(kind, error, tb)  # type: ignore[operator]


def is_out_of_memory(error: BaseException) -> bool:
    """*error* says the process could not have the memory it asked for:
    MemoryError; OSError ENOMEM (the import system listing a package's
    directory); ImportError of a library the loader could not map (under
    ulimit -v: "failed to map segment from shared object")."""
    if isinstance(error, MemoryError):
        return True
    if isinstance(error, OSError):
        return error.errno == errno.ENOMEM
    if isinstance(error, ImportError):
        said = str(error).lower()
        return "failed to map segment" in said or "cannot allocate memory" in said
    return False


def memory_limited() -> bool:
    """This process runs under an address-space limit (ulimit -v)."""
    if resource is None:
        return True
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return soft != resource.RLIM_INFINITY


def refuse_tiny_address_space() -> None:
    """Under an address-space limit below MIN_ADDRESS_SPACE: one line, exit
    2, before the imports that could abort CPython (MIN_ADDRESS_SPACE)."""
    if resource is None:
        return  # the import already ran short: the hook's line says so
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft >= MIN_ADDRESS_SPACE:
        return
    os.write(
        2,
        OUT_OF_MEMORY.rstrip(b"\n")[: -len(")")]
        + b"; ulimit -v allows %d MB, vfab-bench needs %d MB)\n"
        % (soft // 2**20, MIN_ADDRESS_SPACE // 2**20),
    )
    os._exit(EXIT_BAD_INPUT)


def prepare_program() -> None:
    """What vfab-bench sets up before it imports the rest: the stop
    signals, the out of memory hook and its streams' error handler (only
    when it is the program: a test or locust importing it keeps its own)."""
    if not is_program():
        return
    refuse_tiny_address_space()
    exit_on_signals_while_starting()
    sys.excepthook = out_of_memory_hook
    prepare_streams()
