"""The suite's error for bad input and its exit statuses, shared by every
feature package, the CLI and the locust plugin."""

from __future__ import annotations

# Re-exported: the one error-to-line helper lives with the storages, which
# import nothing from scenarios.
from storages.errors import first_line as first_line
from storages.errors import one_line as one_line

#: Exit statuses of vfab-bench (and, where locust lets us choose, of a
#: locust run with locustfile.py).  The commands that check data (scale,
#: zeoloop, verify, the locustfile) give exactly one of EXIT_OK,
#: EXIT_VIOLATIONS, EXIT_INVARIANTS and EXIT_ERRORS, in that order of
#: precedence from the worst: a violation, then a check that could not be
#: finished, then operation errors (docs/consistency.md).
EXIT_OK = 0
#: Work failed: a phase raised, runzeo died (locust uses 1 for failures and
#: errors too).
EXIT_FAILED = 1
#: The consistency check found the data wrong (a lost or phantom write, a
#: corrupt value, a lost record, index drift, a lost update, an
#: inconsistent read, a dependency cycle the storage promised not to show,
#: a stale read where it promised real-time order): the check's own line
#: says which.
EXIT_VIOLATIONS = 1
#: Bad input: a ConfigError, StorageError, ResultsError or usage error.
EXIT_BAD_INPUT = 2
#: The data could not be fully checked (the server did not come back, a
#: client's history was lost, another writer used the database, a walk
#: could not be finished): nothing wrong was found in what could be
#: checked, and the check's line says what could not be.
EXIT_INVARIANTS = 3
#: The data were checked and found right, but operations raised errors
#: (or ran out of retries) that no violation explains: the storage is not
#: shown wrong, and the run is not clean either (the errors are listed).
EXIT_ERRORS = 4
#: Ctrl-C (128 + SIGINT); SIGTERM and SIGHUP exit 128 + their number too.
EXIT_INTERRUPTED = 130
#: Stdout is a pipe nobody reads any more (`| head` done) and the command
#: had more to print before it was done: it stops quietly, as a program
#: SIGPIPE ends would (128 + SIGPIPE).  Once its results are written, a
#: closed stdout changes nothing: the command's own status.
EXIT_PIPE_CLOSED = 141


def check_status(violations: bool, unchecked: bool, errors: bool = False) -> int:
    """The exit status of a command that checked data: EXIT_VIOLATIONS,
    else EXIT_INVARIANTS, else EXIT_ERRORS, else EXIT_OK."""
    if violations:
        return EXIT_VIOLATIONS
    if unchecked:
        return EXIT_INVARIANTS
    if errors:
        return EXIT_ERRORS
    return EXIT_OK


class RunFailure(Exception):
    """The work failed after it started (a phase raised, a server died); the
    CLI prints it as one line and exits EXIT_FAILED."""


class ConfigError(ValueError):
    """Bad input for a command (a value, a file, a combination of options);
    the CLI prints it as one line and exits EXIT_BAD_INPUT."""
