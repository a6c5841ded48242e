"""Upstream bugs known to make a storage WRONG here: verify names them in
its verdict, and a release does not gate on one (it shows now and then,
whatever the code under test does)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata

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
