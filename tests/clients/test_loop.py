"""scenarios.clients.loop: the client loop zeoloop, scale and the locust plugin
share, on a real Session over an in-process MappingStorage."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator

import pytest
import ZODB
from ZODB.MappingStorage import MappingStorage

from scenarios.clients import loop, zeoloop
from scenarios.clients.loop import ClientPlan, Done, run_loop
from scenarios.load.history import History
from scenarios.load.mix import LoadConfig, Operation
from scenarios.load.session import Session
from tests.support.fab_db import fab_db


@pytest.fixture(scope="module")
def db() -> Iterator[ZODB.DB]:
    db = fab_db(MappingStorage(), pool_size=4)
    yield db
    db.close()


@pytest.fixture
def session(db: ZODB.DB) -> Iterator[Session]:
    s = Session(db, LoadConfig(), History(), random.Random(1), client="c0")
    yield s
    s.close()


def broken(s: Session) -> object:
    raise OSError("the server went away")


def test_each_start_is_one_operation_handed_on(session: Session) -> None:
    kept: list[Done] = []
    starts = [time.monotonic() - 1.0, time.monotonic()]
    loop.run(session, starts, kept.append)
    assert [d.intended for d in kept] == starts
    assert all(d.outcome is not None and d.raised is None for d in kept)
    assert all(d.ended >= d.intended for d in kept)
    assert session.attempts >= 2  # each a transaction, in the history


def test_a_raised_error_ends_its_operation_and_the_client_pauses(
    session: Session,
) -> None:
    op = Operation("broken", 1, False, broken, "")
    done = loop.attempt(session, time.monotonic(), op)
    assert done.outcome is None and isinstance(done.raised, OSError)
    result = zeoloop.ProcessResult.empty()
    result.failures["broken"] = 0
    result.keep(done)
    assert result.failures["broken"] == 1
    assert result.errors == ["broken: OSError: the server went away"]
    # The loop pauses after it, rather than spin against the server.
    session.pick = lambda: op  # type: ignore[method-assign]
    began = time.monotonic()
    loop.run(session, [began], lambda d: None)
    assert time.monotonic() - began >= loop.ERROR_PAUSE_S


def test_a_closed_loop_ends_at_its_deadline_or_its_stop() -> None:
    stop = threading.Event()
    assert list(loop.closed(stop, time.monotonic() - 1)) == []
    starts = loop.closed(stop, time.monotonic() + 60)
    first = next(starts)
    assert abs(first - time.monotonic()) < 1.0
    stop.set()
    assert list(starts) == []


class CPU:
    started = 0

    def window_started(self) -> None:
        self.started += 1


@pytest.mark.parametrize("rate", [None, 200.0])
def test_scale_keeps_what_ended_in_the_window(session: Session, rate: float) -> None:
    plan = ClientPlan(LoadConfig(), 0.2, 0.4, rate, windows=2, timeline=True)
    cpu = CPU()
    stop = threading.Event()
    out = run_loop(plan, stop, session, time.monotonic(), random.Random(2), cpu)
    assert cpu.started > 0 and not out["interrupted"]
    ends = [end for end, _, _ in out["timeline"]]
    assert ends and min(ends) >= 0  # nothing from the warmup
    kinds = {kind for _, _, kind in out["timeline"]}
    assert kinds <= {"ok", "commit"}
    commits = sum(kind == "commit" for _, _, kind in out["timeline"])
    assert out["commits"] == commits == sum(w["commits"] for w in out["windows"])
    if rate:
        assert out["arrivals"] > 0 and out["served"] <= out["arrivals"] + 1
    else:
        assert out["arrivals"] == out["backlog"] == 0
