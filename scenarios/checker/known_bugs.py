"""Upstream bugs known to make a storage WRONG here, and the one policy for
the exit status they get (exit_status): verify, release and release
--against name them on every line that shows them; verify fails on one
unless told it is expected (--expect-known-bugs), release does not (it
shows now and then, whatever the code under test does)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import metadata

from scenarios.errors import check_status

#: (storage names, the scheme of a --target, the distribution, the versions
#: it is known in, what it does, the doc).
KNOWN_BUGS = (
    (
        ("relstorage-sqlite", "relstorage-sqlite-hp"),
        "sqlite://",
        "RelStorage",
        ("4.3.0",),
        "its SQLite adapter commits the rows of a transaction that failed at vote",
        "docs/relstorage-sqlite.md",
    ),
)


def known_bug(
    storage: str,
    target: str | None = None,
    versions: Mapping[str, str | None] | None = None,
) -> str | None:
    """The known upstream bug of *storage* (or a --target's scheme), in
    words with its doc, or None: in the version *versions* records (a
    result's metadata), or the installed one when *versions* is None."""
    for names, scheme, dist, known_in, what, doc in KNOWN_BUGS:
        if storage not in names and not (target and target.startswith(scheme)):
            continue
        if versions is not None:
            version = versions.get(dist)
        else:
            try:
                version = metadata.version(dist)
            except metadata.PackageNotFoundError:
                version = None
        if version in known_in:
            return f"known upstream bug: {dist} {version}: {what} ({doc})"
    return None


#: The state of a storage WRONG by a known upstream bug (verify's verdict,
#: a release's consistency state).
KNOWN_WRONG = "WRONG, a known upstream bug"


def exit_status(states: Iterable[str], known_fails: bool = False) -> int:
    """The one exit-status policy of the commands that judge storages
    (verify, release, release --against), from each storage's state:
    "right", "WRONG", KNOWN_WRONG, "not fully checked" (or verify's "not
    checked"), "errors".

    A storage WRONG by a known upstream bug (KNOWN_BUGS, in the version
    installed or recorded) is named as such on every line that shows it.
    With *known_fails* (verify's default: the data are wrong, whatever the
    cause) it is EXIT_VIOLATIONS like any WRONG; without (release, and
    verify --expect-known-bugs) it does not set the status: it shows now
    and then whatever the code under test does, and a status that fails
    on it every time would hide a new failure behind it.  Any other WRONG
    is EXIT_VIOLATIONS; then a storage not fully checked EXIT_INVARIANTS;
    then errors EXIT_ERRORS.  A version of the storage where the bug is not
    known (a fixed release that still fails) is a plain WRONG: the status
    fails again."""
    seen = set(states)
    return check_status(
        "WRONG" in seen or (known_fails and KNOWN_WRONG in seen),
        bool(seen & {"not fully checked", "not checked"}),
        "errors" in seen,
    )
