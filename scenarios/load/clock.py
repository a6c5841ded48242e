"""The clock the clients of one run share, so that the checker can order
attempts in real time: "a's commit was acknowledged before b began".

On one host every process reads the same CLOCK_MONOTONIC
(time.monotonic()), so times taken by different client processes compare
exactly: offset 0, uncertainty 0.  A client on another host (a locust
worker, issue 26) reads its own monotonic clock and adds its offset to the
coordinator's, measured when it starts the way NTP does (offset_between):
the uncertainty of one measurement is half its round trip, and the
history carries it, so that the checker only orders two attempts in real
time when they are further apart than both clocks' uncertainties.

Same host or not is decided by the kernel's boot id (two processes with
the same one read the same monotonic clock: containers and network
namespaces included), not by the host name.
"""

from __future__ import annotations

import dataclasses
import socket
import time
from collections.abc import Callable
from typing import Any


def boot_id() -> str:
    """This kernel's boot id (Linux), else the host name: processes with
    the same one share CLOCK_MONOTONIC."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return socket.gethostname()


@dataclasses.dataclass(frozen=True)
class Clock:
    """Seconds on the coordinator's clock: this process's time.monotonic()
    plus *offset_s*, true within *uncertainty_s* either way."""

    offset_s: float = 0.0
    uncertainty_s: float = 0.0
    #: the kernel this process runs on (boot_id())
    host: str = dataclasses.field(default_factory=boot_id)

    def now(self) -> float:
        return time.monotonic() + self.offset_s

    def to_json(self) -> dict[str, Any]:
        return {
            "source": "monotonic",
            "host": self.host,
            "offset_s": self.offset_s,
            "uncertainty_s": self.uncertainty_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Clock:
        return cls(
            float(data.get("offset_s", 0.0)),
            float(data.get("uncertainty_s", 0.0)),
            str(data.get("host", "")),
        )


def offset_between(
    ask: Callable[[], float], rounds: int = 5, now: Callable[[], float] = time.monotonic
) -> tuple[float, float]:
    """(offset, uncertainty) of the coordinator's clock, which *ask*
    reads over the network, against this process's *now*: of *rounds*
    round trips, the one that took least time, its offset taken at its
    midpoint and its uncertainty half its duration (the coordinator read
    its clock somewhere inside it)."""
    best: tuple[float, float] | None = None
    for _ in range(max(1, rounds)):
        sent = now()
        theirs = ask()
        back = now()
        half = (back - sent) / 2
        if best is None or half < best[1]:
            best = (theirs - (sent + half), half)
    assert best is not None
    return best
