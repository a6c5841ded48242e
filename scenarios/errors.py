"""The suite's error for bad input and its exit statuses, shared by every
feature package, the CLI and the locust plugin."""

from __future__ import annotations

# Re-exported: the one error-to-line helper lives with the storages, which
# import nothing from scenarios.
from storages.errors import first_line as first_line
from storages.errors import one_line as one_line

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


class ConfigError(ValueError):
    """Bad input for a command (a value, a file, a combination of options);
    the CLI prints it as one line and exits EXIT_BAD_INPUT."""
