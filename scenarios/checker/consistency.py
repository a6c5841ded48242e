"""The consistency check after a concurrent run: the baseline before it,
the data set read back after it through a fresh client
(scenarios.checker.readback), and the judgement of both against the history
of every attempt (scenarios.checker.judge).  docs/consistency.md says what is
checked and what cannot be seen.

Reading and judging are apart: judge() is a pure function of the history,
the baseline and the FinalRead, which the tests feed by hand.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from scenarios.checker.check import Check, not_checked
from scenarios.checker.judge import judge
from scenarios.checker.readback import FinalRead, read_final
from scenarios.checker.readback import read_log as read_transactions
from scenarios.checker.violations import (
    KINDS,
    Baseline,
    ConsistencyReport,
    Violation,
)
from scenarios.load.clock import Clock
from vfab.model import VirtualFab

__all__ = [
    "KINDS",
    "Baseline",
    "Check",
    "ConsistencyReport",
    "FinalRead",
    "Violation",
    "check",
    "checked",
    "judge",
    "not_checked",
    "read_baseline",
    "verify",
]


def _sessions(history: Any) -> dict[str, Any]:
    return dict(getattr(history, "sessions", {}) or {})


def check(
    fab: VirtualFab,
    baseline: Baseline,
    history: Iterable[Any],
    connection: Any = None,
    lost: Mapping[str, str] | None = None,
) -> ConsistencyReport:
    """Read *fab* back (on *connection*, if it is one) and judge it against
    *baseline* and the run's *history* (a History, with its clients'
    session records, or plain events)."""
    final = read_final(fab, connection)
    return judge(list(history), baseline, final, _sessions(history), lost)


# -- through a client ----------------------------------------------------------


def read_baseline(
    target: str | tuple[str, int], clock: Clock | None = None
) -> Baseline:
    """The Baseline of the data set at *target* (a client spec, or a ZEO
    (host, port)), read through a client of its own before the run, with
    the snapshot it read at and when it ended (on *clock*)."""
    from scenarios.load.promises import snapshot_of
    from scenarios.load.session import fab_of, short_connection

    with short_connection(target) as connection:
        connection.transaction_manager.begin()
        fab = fab_of(connection, _where(target))
        connection.prefetch(list(fab.library.capabilities.values()))
        tid = snapshot_of(connection)
        baseline = Baseline.read(fab, tid)
    return Baseline(
        baseline.registers, baseline.sequences, tid, (clock or Clock()).now()
    )


def verify(
    target: str | tuple[str, int],
    baseline: Baseline,
    history: Iterable[Any],
    lost: Mapping[str, str] | None = None,
    read_log: bool = False,
    wait_timeout: float | None = None,
) -> ConsistencyReport:
    """Judge the data set at *target*, read through a fresh client after
    the run, against *baseline* and *history*; the storage's transaction
    log since the baseline is read too (and the history judged again with
    it) when *read_log*, or when the verdict could depend on it;
    *wait_timeout*: the fresh ZEO client's wait for its server."""
    from scenarios.load.session import fab_of, short_connection

    events = list(history)
    sessions = _sessions(history)
    started = time.perf_counter()
    with short_connection(target, wait_timeout) as connection:
        connection.transaction_manager.begin()
        fab = fab_of(connection, _where(target))
        final = read_final(fab, connection)
        if read_log and baseline.tid is not None:
            final.log, final.log_note = read_transactions(
                connection.db().storage, baseline.tid
            )
        report = judge(events, baseline, final, sessions, lost)
        if report.needs_log and baseline.tid is not None and not final.log_note:
            final.log, final.log_note = read_transactions(
                connection.db().storage, baseline.tid
            )
            if final.log is not None:
                report = judge(events, baseline, final, sessions, lost)
        if final.log is None and final.log_note:
            report.notes.append(
                f"the storage's transaction log was not read: {final.log_note}; "
                "a writer outside the run cannot be told from a phantom write"
            )
    report.seconds = time.perf_counter() - started
    return report


def checked(
    target: str | tuple[str, int],
    baseline: Baseline,
    events: Iterable[Any],
    read_log: bool = False,
    lost: Mapping[str, str] | None = None,
    wait_timeout: float | None = None,
) -> Check:
    """verify()'s report as the commands keep it, or not_checked() saying why the check
    could not run: nothing acknowledged, interrupted, or the storage could
    not be read back (a server that went away or stopped answering): never
    an error instead of a verdict, never a verdict on data not read;
    *wait_timeout*: the fresh ZEO client's wait for its server (what is
    left of a caller's bound)."""
    from storages import StorageError

    if not any(e.outcome == "ok" for e in events):
        # Nothing acknowledged (stopped before the clients' first commit):
        # "0 violations" would read as a check of work that was done.
        return not_checked("no operation was acknowledged before the stop")
    try:
        report = verify(
            target,
            baseline,
            events,
            lost=lost,
            read_log=read_log,
            wait_timeout=wait_timeout,
        )
    except KeyboardInterrupt:
        return not_checked("interrupted")
    except StorageError as e:
        return not_checked(str(e))
    except Exception as e:  # a storage's own error while reading back
        # (a record that cannot be loaded is a finding, not this: readback)
        return not_checked(f"{type(e).__name__}: {e}".splitlines()[0])
    return report.result()


def _where(target: str | tuple[str, int]) -> str:
    from scenarios.load.target import describe

    return describe(target if isinstance(target, str) else f"{target[0]}:{target[1]}")
