"""The client loop every load shares: zeoloop's users, scale's clients
(closed or open loop) and, one operation a task, locust's users.

A client takes its starts from a schedule (closed(): each as the last
operation ends, until a deadline or a stop; scale's open loop: Poisson
arrivals), picks an operation, runs it (Session.run: one transaction,
conflicts retried, every attempt in the history) and hands what happened
(a Done) to what its load keeps: zeoloop each operation's ms, scale
histograms, locust requests.  After an error the Session raised (a server
gone, not a conflict) the client pauses ERROR_PAUSE_S rather than spin.
Locust schedules its users itself, so its plugin takes attempt() alone.

Each load keeps its own clock: scale times Done.intended to Done.ended
(the pick included); zeoloop and locust the Session's Outcome.elapsed_ms,
and locust a raised error from after the pick.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from scenarios.load.mix import Operation
from scenarios.load.session import Outcome, Session

#: Seconds a client pauses after an operation failed with an error.
ERROR_PAUSE_S = 0.01


@dataclasses.dataclass(frozen=True)
class Done:
    """One operation ended: the Session's Outcome, or the error it raised;
    when it was due to start and when it ended (time.monotonic())."""

    op: Operation
    outcome: Outcome | None
    raised: Exception | None
    intended: float
    ended: float


def attempt(session: Session, intended: float, op: Operation | None = None) -> Done:
    """Run *op* (else the session's next pick) on *session*."""
    if op is None:
        op = session.pick()
    try:
        outcome = session.run(op)
    except Exception as e:  # the load counts it against the operation
        return Done(op, None, e, intended, time.monotonic())
    return Done(op, outcome, None, intended, time.monotonic())


def run(session: Session, starts: Iterable[float], keep: Callable[[Done], Any]) -> None:
    """An operation at each of *starts* (time.monotonic()), each to *keep*."""
    for intended in starts:
        done = attempt(session, intended)
        keep(done)
        if done.raised is not None:
            time.sleep(ERROR_PAUSE_S)


def closed(stop: Any, end_at: float) -> Iterator[float]:
    """A closed loop's starts: the next as the last operation ends (no think
    time), until *end_at* (time.monotonic()) or *stop* is set."""
    while not stop.is_set():
        now = time.monotonic()
        if now >= end_at:
            return
        yield now
