"""A locust worker's clock against its master's, over locust's messages.

The worker sends its time.monotonic(), the master answers with its own and
its kernel's boot id; of CLOCK_ROUNDS round trips the shortest counts, the
offset taken at its midpoint and the uncertainty half its length (NTP's
way: scenarios.load.clock).  A worker on the master's kernel reads the
same clock: offset 0, uncertainty 0.  A worker whose master never answers
within CLOCK_WAIT_S keeps uncertainty UNKNOWN_CLOCK_S: its attempts are
ordered in real time against nobody else's.

The locustfile's plugin (scenarios.clients.remote.plugin) and scale's workers
(scenarios.clients.remote.worker) both measure this way.
"""

from __future__ import annotations

import time
from typing import Any

import gevent
from gevent.event import AsyncResult

from scenarios.clients.remote.shapes import Shapes, fields, number, optional, text
from scenarios.load.clock import Clock, boot_id

#: A worker's question for the master's clock, and the answer.
CLOCK_ASK = "vfab_clock_ask"
CLOCK = "vfab_clock"
#: The shapes of both (scenarios.clients.remote.shapes), by who sends them.
FROM_WORKER: Shapes = {CLOCK_ASK: fields({"sent": number})}
FROM_MASTER: Shapes = {
    CLOCK: fields({"sent": number, "theirs": number}, {"host": optional(text)})
}
#: Seconds a worker waits for the master's clock in all.
CLOCK_WAIT_S = 2.0
#: Round trips of the measurement (the shortest one counts).
CLOCK_ROUNDS = 3
#: The uncertainty of a clock not measured: no real-time order with it.
UNKNOWN_CLOCK_S = 1e9


def answer_clocks(runner: Any) -> None:
    """On a master: answer every worker's CLOCK_ASK with this process's
    clock and kernel."""

    def on_ask(environment: Any, msg: Any, **_kw: Any) -> None:
        answer = {
            "sent": msg.data["sent"],
            "theirs": time.monotonic(),
            "host": boot_id(),
        }
        runner.send_message(CLOCK, answer, client_id=msg.node_id)

    runner.register_message(CLOCK_ASK, on_ask)


class WorkerClock:
    """On a worker: measure() asks the master for its clock."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner
        self._answer: AsyncResult | None = None
        runner.register_message(CLOCK, self._on_clock)

    def _on_clock(self, environment: Any, msg: Any, **_kw: Any) -> None:
        if self._answer is not None:
            self._answer.set((time.monotonic(), msg.data))

    def measure(self) -> Clock:
        """This process's clock against the master's (waits at most
        CLOCK_WAIT_S, cooperatively: call it from a greenlet of its own
        when a message handler must not wait)."""
        deadline = time.monotonic() + CLOCK_WAIT_S
        best = Clock(0.0, UNKNOWN_CLOCK_S)
        for _ in range(CLOCK_ROUNDS):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._answer = AsyncResult()
            sent = time.monotonic()
            self.runner.send_message(CLOCK_ASK, {"sent": sent})
            try:
                back, data = self._answer.get(timeout=left)
            except gevent.Timeout:
                break
            finally:
                self._answer = None
            if float(data["sent"]) != sent:
                continue  # a late answer to an earlier question
            if data.get("host") == best.host:
                return Clock(0.0, 0.0, best.host)
            half = (back - sent) / 2
            if half < best.uncertainty_s:
                best = Clock(float(data["theirs"]) - (sent + half), half, best.host)
        return best
