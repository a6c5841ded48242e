"""The suite's error for bad input and its exit statuses, shared by every
feature package, the CLI and the locust plugin."""

from __future__ import annotations

#: Exit statuses of vfab-bench (and, where locust lets us choose, of a
#: locust run with locustfile.py).
EXIT_OK = 0
#: Work failed: an operation ran out of retries, runzeo died (locust uses 1
#: for failures and errors too).
EXIT_FAILED = 1
#: The consistency check found the data wrong (a lost or phantom write,
#: index drift, a lost update, an inconsistent read): the work failed, so
#: 1 as for any failure; the check's own line says which.
EXIT_VIOLATIONS = 1
#: Bad input: a ConfigError, StorageError, ResultsError or usage error.
EXIT_BAD_INPUT = 2
#: The stored data could not be checked (the server did not come back, a
#: read failed): the run cannot say the data are right.
EXIT_INVARIANTS = 3
#: Ctrl-C (128 + SIGINT); SIGTERM and SIGHUP exit 128 + their number too.
EXIT_INTERRUPTED = 130


class RunFailure(Exception):
    """The work failed after it started (a phase raised, a server died); the
    CLI prints it as one line and exits EXIT_FAILED."""


def first_line(text: object) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def one_line(error: BaseException) -> str:
    """*error* as one line: an OSError's file and reason, else its type and
    the first line of its message."""
    if isinstance(error, OSError):
        reason = error.strerror or first_line(error) or type(error).__name__
        names = [str(n) for n in (error.filename, error.filename2) if n]
        return f"{' -> '.join(names)}: {reason}" if names else reason
    message = first_line(error)
    kind = type(error).__name__
    return f"{kind}: {message}" if message else kind


class ConfigError(ValueError):
    """Bad input for a command (a value, a file, a combination of options);
    the CLI prints it as one line and exits EXIT_BAD_INPUT."""
