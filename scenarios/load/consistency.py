"""The consistency check after a concurrent run: the stored data set, read
through a fresh client, against the state before the run (Baseline) and the
history of every transaction the clients attempted (scenarios.load.history).

What it checks, by kind of violation:

- lost write: an acknowledged write (a sequence created, a price, a lab's
  stock) is missing, or was replaced although no later write was
  acknowledged; a sequence present before the run is gone;
- phantom write: the data holds the effect of a failed transaction, or a
  value or sequence no transaction of the run wrote;
- index drift: an index of the library (category, lab, material, price,
  process price, the count) or of the sequences (by group) disagrees with
  the objects, either way;
- lost update: two acknowledged read-modify-writes built on the same
  revision (two price changes, or two transfers of a lab's stock, that both
  made revision r + 1);
- inconsistent read: an acknowledged transaction read a value that no
  serial order of the committed transactions produces: the write of a
  failed transaction, a value nobody wrote, or a stock audit whose sum is
  not the total before the run (transfers keep it);
- invalid data: a BTree that fails its own check, a step outside its
  capability's ranges, a price outside its catalogue range.

What it cannot see: writes of operations whose records were lost (a client
killed before its line was written: at most its last attempt), changes to
objects the operations never write (users, groups, the generator's
sequences' steps), and anything another program did to the database during
the run.  Unknown outcomes (the connection was lost during the commit) are
allowed either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from scenarios.load.checker import Checker
from scenarios.load.history import settle
from scenarios.load.violations import (
    KINDS,
    Baseline,
    ConsistencyReport,
    Violation,
    not_checked,
)
from vfab.model import VirtualFab

__all__ = [
    "KINDS",
    "Baseline",
    "ConsistencyReport",
    "Violation",
    "check",
    "not_checked",
    "read_baseline",
    "verify",
]


def check(
    fab: VirtualFab,
    baseline: Baseline,
    events: Iterable[Any],
    prefetch: Callable[[list[Any]], None] | None = None,
) -> ConsistencyReport:
    """Check *fab* (read through a fresh client) against *baseline* and the
    run's history *events* (scenarios.load.history.Event); *prefetch*: the
    client's connection.prefetch, for the sequences read in batches."""
    checker = Checker(fab, baseline, settle(events), prefetch)
    checker.run()
    order = {k: i for i, k in enumerate(KINDS)}
    checker.report.violations.sort(key=lambda v: order[v.kind])
    return checker.report


# -- through a client ----------------------------------------------------------


def read_baseline(target: str | tuple[str, int]) -> Baseline:
    """The Baseline of the data set at *target* (a client spec, or a ZEO
    (host, port)), read through a client of its own before the run."""
    from scenarios.load.session import fab_of, short_connection

    with short_connection(target) as connection:
        fab = fab_of(connection, _where(target))
        connection.prefetch(list(fab.library.capabilities.values()))
        return Baseline.read(fab)


def verify(
    target: str | tuple[str, int], baseline: Baseline, events: Iterable[Any]
) -> ConsistencyReport:
    """check() the data set at *target* through a fresh client, after the
    run: what the check reads is prefetched first (a cold client would
    wait one round trip per object, about 1 ms each on a server here)."""
    import time

    from scenarios.load.session import fab_of, short_connection

    events = list(events)
    started = time.perf_counter()
    with short_connection(target) as connection:
        fab = fab_of(connection, _where(target))
        _prefetch(connection, fab)
        report = check(fab, baseline, events, connection.prefetch)
    report.seconds = time.perf_counter() - started
    return report


def _where(target: str | tuple[str, int]) -> str:
    from scenarios.load.target import describe

    return describe(target if isinstance(target, str) else f"{target[0]}:{target[1]}")


def _prefetch(connection: Any, fab: VirtualFab) -> None:
    """What the check reads whole: the library and the labs (the sequences
    and their steps come in batches: Checker)."""
    connection.prefetch(list(fab.library.capabilities.values()))
    connection.prefetch(list(fab.catalogue.labs.values()))
