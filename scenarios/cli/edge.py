"""The edge of the command line: whatever a command raises is one line on
stderr and a named exit status (2 for bad input), the traceback only
under --debug; the libraries' log records one line each
(docs/internals.md).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import resource
import sys
import traceback
from collections.abc import Iterator

import storages
from scenarios.argtypes import too_long
from scenarios.cli.early import is_out_of_memory
from scenarios.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    ConfigError,
    RunFailure,
    first_line,
    one_line,
)
from scenarios.interrupts import quiet_after_interrupt
from scenarios.printable import shown
from scenarios.results.files import ResultsError
from storages import StorageError

PROG = "vfab-bench"


def debug_wanted(flag: bool) -> bool:
    """--debug, or VFAB_DEBUG set to anything but 0/empty."""
    return flag or os.environ.get("VFAB_DEBUG", "") not in ("", "0")


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message is meant for the user as it stands."""
    return (ConfigError, StorageError, ResultsError, *storages.user_errors())


def describe(error: BaseException) -> str:
    """One line naming what failed and why."""
    if isinstance(error, (*user_errors(), RunFailure)):
        line = first_line(error) or type(error).__name__
        # A child's or a storage's "No space left on device", passed on:
        # TMPDIR's unless the line names a file elsewhere (an output's).
        if NO_SPACE in line and not _elsewhere(line):
            return line + no_space_hint()
        return line
    return environment_error(error) or one_line(error)


NO_SPACE = os.strerror(errno.ENOSPC)


def _elsewhere(line: str) -> bool:
    """*line* names an absolute path outside the temporary directory."""
    import tempfile  # here: the edge imports little before a command starts

    tmp = os.path.realpath(tempfile.gettempdir()) + os.sep
    paths = re.findall(r"(?<![\w.])/[^\s:;,()'\"]+", line)
    return any(not os.path.realpath(p).startswith(tmp) for p in paths)


def no_space_hint() -> str:
    """Where the suite's scratch files went, and what to do: the disk that
    filled is TMPDIR's unless a file on another is named."""
    import shutil
    import tempfile

    tmp = tempfile.gettempdir()
    try:
        free = shutil.disk_usage(tmp).free
    except OSError:
        room = ""
    else:
        room = f", {free / 2**20:,.1f} MiB free now"
    return (
        f" (the databases, servers and clients' files go to the temporary "
        f"directory, TMPDIR, {tmp}{room}: free space there, or set TMPDIR to a "
        "directory on a disk with room)"
    )


def status_of(error: BaseException) -> int:
    """EXIT_BAD_INPUT for what the user can fix, EXIT_FAILED otherwise."""
    if isinstance(error, (*user_errors(), OSError)) or is_out_of_memory(error):
        return EXIT_BAD_INPUT
    return EXIT_FAILED


def report(error: BaseException, debug: bool) -> int:
    """Print *error* as the edge does; return its exit status."""
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    known = isinstance(error, (*user_errors(), RunFailure))
    known = known or environment_error(error) is not None
    hint = "" if debug or known else " (--debug shows where)"
    print(shown(f"{PROG}: error: {describe(error)}{hint}"), file=sys.stderr)
    return status_of(error)


def environment_error(error: BaseException) -> str | None:
    """What the machine refused, in words: out of memory, a name or path
    too long for the file system, a working directory that is gone; None
    for any other error."""
    if is_out_of_memory(error):
        return (
            "out of memory (a memory limit such as ulimit -v, or the machine's "
            "memory, is too small for this command)"
        )
    if not isinstance(error, OSError):
        return None
    if error.errno == errno.ENOSPC:
        name = error.filename
        if not isinstance(name, (str, bytes)) or not name:
            return f"no space left on device{no_space_hint()}"
        import tempfile

        path = os.fsdecode(name)
        tmp = os.path.realpath(tempfile.gettempdir())
        if not os.path.realpath(path).startswith(tmp + os.sep):
            return f"no space left on device writing {path}: free space on its disk"
        return f"no space left on device writing {path}{no_space_hint()}"
    if error.errno == errno.EFBIG:
        return f"a file reached the file-size limit{_limit(resource.RLIMIT_FSIZE)}"
    if error.errno in (errno.EMFILE, errno.ENFILE):
        return (
            f"too many open files{_limit(resource.RLIMIT_NOFILE, 1)}: raise the "
            "limit, or ask for fewer clients"
        )
    if "No usable temporary directory" in str(error):
        return (
            "no writable temporary directory (TMPDIR, /tmp, /var/tmp, /usr/tmp "
            "and the working directory were tried): set TMPDIR to one"
        )
    if error.errno == errno.ENAMETOOLONG:
        name = error.filename
        if not isinstance(name, (str, bytes)) or not name:
            return "a file name is too long for the file system"
        return too_long(name) or f"{os.fsdecode(name)}: too long for the file system"
    if error.errno == errno.ENOENT and not error.filename and cwd_gone():
        return WORKING_DIRECTORY_GONE
    return None


def _limit(which: int, unit: int = 1024) -> str:
    """' (ulimit -X: N)' for a resource limit this process has, in ulimit's
    units (*unit* bytes: 1024 for sizes, 1 for counts); '' without one."""
    soft = resource.getrlimit(which)[0]
    if soft == resource.RLIM_INFINITY:
        return ""
    flag = {resource.RLIMIT_FSIZE: "-f", resource.RLIMIT_NOFILE: "-n"}.get(which, "")
    return f" (ulimit {flag}: {soft // unit})"


WORKING_DIRECTORY_GONE = (
    "the working directory no longer exists (it was removed after this shell "
    "entered it): cd to a directory that exists"
)


def check_working_directory() -> None:
    """Refuse to start in a working directory that is gone: relative paths
    mean nothing there, and the client processes cannot start."""
    if cwd_gone():
        raise ConfigError(WORKING_DIRECTORY_GONE)


def cwd_gone() -> bool:
    """The process's working directory has been removed."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


class OneLineFormatter(logging.Formatter):
    """A log record as one line (and its traceback, which only records that
    pass the handler's filters under --debug carry)."""

    def format(self, record: logging.LogRecord) -> str:
        level = record.levelname.lower()
        line = f"{PROG}: {level}: {record.name}: {first_line(record.getMessage())}"
        if record.exc_info and record.exc_info[1] is not None:
            line += f" ({describe(record.exc_info[1])})"
            line += "\n" + "".join(traceback.format_exception(*record.exc_info))
        return shown(line)


#: Loggers that report an error they then raise: the edge reports the
#: exception once, as the command's line (--debug shows these too).
RERAISING_LOGGERS = ("txn.",)


def without_traceback(record: logging.LogRecord) -> bool:
    """A logging filter: drop records that carry a traceback, and those of
    RERAISING_LOGGERS.  ZODB, ZEO and transaction log the error they then
    raise ("Couldn't load state ...", "A storage error occurred during the
    second phase ..."), so the edge reports it once, as the command's one
    line; --debug shows them."""
    return not record.exc_info and not record.name.startswith(RERAISING_LOGGERS)


@contextlib.contextmanager
def logging_to_stderr(debug: bool, keep: bool = False) -> Iterator[None]:
    """Warnings and errors of every library as one line each on stderr, for
    as long as a command runs: the handler is removed afterwards, so an
    in-process caller keeps its own logging; with *keep* (vfab-bench is the
    program) it stays until the process exits.  What the garbage collector
    finds after the command then reaches the same handler, never logging's
    last resort: a ZEO request cut short by Ctrl-C leaves a future whose
    ClientDisconnected nobody read, and asyncio logs it, traceback and all,
    when the future is collected (a CI run saw it after "interrupted")."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(OneLineFormatter())
    handler.addFilter(quiet_after_interrupt)
    if not debug:
        handler.addFilter(without_traceback)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        if not keep:
            root.removeHandler(handler)
