"""The history's records and how a session makes them: format 2's fields
round-trip, a killed client's lines are on disk, outcomes follow the
commit's phase, a transient error is retried, the snapshot and the
committed tid are the storage's own, the clock's offset is measured as
NTP does.  In-process and quick (MappingStorage)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest
from transaction.interfaces import TransientError
from ZODB.MappingStorage import MappingStorage

from scenarios.load.clock import Clock, offset_between
from scenarios.load.history import (
    Access,
    Event,
    FileHistory,
    History,
    Part,
    Session,
    read_history,
    read_parts,
    write_history,
)
from scenarios.load.mix import BY_NAME, LoadConfig, Operation
from scenarios.load.promises import promise_of, snapshot_of
from scenarios.load.session import Session as UserSession
from scenarios.load.session import note
from tests.support.fab_db import fab_db


def test_records_round_trip_through_json(tmp_path: Path) -> None:
    read = Access("price", 3, 7, 12345, "d1", current=True)
    assert read.to_json() == ["price", 3, 7, 12345, "d1", 1]
    assert Access.from_json(read.to_json()) == read
    event = Event("c1", 4, "match_price", "ok", None, "0f" * 8, (read,),
                  (Access("price", 4, 2, 10, "d2"),), 1.5, 2.25, "0e" * 8)  # fmt: skip
    assert Event.from_json(event.to_json()) == event
    session = Session(
        "c1", Clock(0.25, 0.001, "boot"), "ClientStorage", True, "why", "r"
    )
    path = tmp_path / "h.jsonl"
    write_history(path, [Part({"storage": "zeo"}, [event], {"c1": session})])
    (part,) = read_parts(path)
    assert part.context == {"storage": "zeo"}
    assert part.events == [event] and part.sessions == {"c1": session}


def test_a_version_1_event_reads_without_times_snapshots_or_digests() -> None:
    old = {"client": "c0", "n": 1, "op": "lookup", "outcome": "ok", "error": None,
           "tid": None, "reads": [["price", 1, 0, 100]], "writes": []}  # fmt: skip
    event = Event.from_json(old)
    assert (event.start, event.end, event.snapshot) == (None, None, None)
    assert event.reads == (Access("price", 1, 0, 100),)


def test_history_carries_session_records_between_processes() -> None:
    here, there = History(), History()
    here.session(Session("w1.u1", Clock(0.0, 1e9, "b"), "S", True, "why"))
    here.record(Event("w1.u1", 1, "lookup", "ok", None, None, (), ()))
    there.absorb(here.drain())
    assert here.drain() == []  # drained once
    measured = Session("w1.u1", Clock(0.5, 0.002, "b"), "S", True, "why")
    here.session(measured)
    there.absorb(here.drain())
    assert there.sessions == {"w1.u1": measured} and len(there) == 1


def test_every_record_is_on_disk_as_it_is_made(tmp_path: Path) -> None:
    """A client killed after a read leaves the read: the file is flushed
    at every record, not only before commits."""
    path = tmp_path / "c0.jsonl"
    recorder = FileHistory(str(path))
    read = Event("c0", 1, "lookup", "ok", None, None, (Access("price", 1, 0, 5),), ())
    recorder.record(read)
    assert [Event.from_json(d) for d in read_history(path)] == [read]
    recorder.close()


def test_an_offset_is_taken_at_the_shortest_round_trip() -> None:
    """The coordinator's clock runs 100 s ahead; the second round trip is
    the shortest (0.02 s), so its midpoint counts."""
    local = iter([0.0, 0.1, 1.0, 1.02, 2.0, 2.06])
    theirs = iter([100.05, 101.01, 102.03])
    offset, uncertainty = offset_between(lambda: next(theirs), 3, lambda: next(local))
    assert offset == pytest.approx(100.0)
    assert uncertainty == pytest.approx(0.01)


# -- a session against a storage that fails where asked -----------------------


class FailsAt(MappingStorage):
    """Raises *error* from tpc_vote or tpc_finish, once each time armed."""

    def __init__(self) -> None:
        super().__init__()
        self.fail: tuple[str, BaseException] | None = None

    def _maybe(self, phase: str) -> None:
        if self.fail is not None and self.fail[0] == phase:
            error, self.fail = self.fail[1], None
            raise error

    def tpc_vote(self, txn: Any) -> Any:
        self._maybe("vote")
        return super().tpc_vote(txn)

    def tpc_finish(self, txn: Any, func: Any = lambda tid: None) -> Any:
        self._maybe("finish")
        return super().tpc_finish(txn, func)


@pytest.fixture
def user() -> Any:
    storage = FailsAt()
    db = fab_db(storage)
    history = History()
    config = LoadConfig.from_values("127.0.0.1:1", retries=2, backoff_ms=0)
    session = UserSession(db, config, history, random.Random(1), client="t", run="r1")
    yield storage, session, history
    session.close()
    db.close()


def test_a_commit_that_fails_at_vote_failed(user: Any) -> None:
    storage, session, history = user
    storage.fail = ("vote", ValueError("no"))
    with pytest.raises(ValueError):
        session.run(BY_NAME["change_price"])
    (event,) = list(history)
    assert (event.outcome, event.error, event.tid) == ("failed", "ValueError", None)


def test_a_commit_that_fails_inside_finish_is_unknown(user: Any) -> None:
    storage, session, history = user
    storage.fail = ("finish", ValueError("lost"))
    with pytest.raises(ValueError):
        session.run(BY_NAME["change_price"])
    (event,) = list(history)
    assert event.outcome == "unknown"


def test_a_transient_error_is_retried_and_recorded(user: Any) -> None:
    storage, session, history = user
    # transaction's contract: any TransientError may succeed if retried
    # (not only ZODB's ConflictError)
    storage.fail = ("vote", TransientError("busy"))
    outcome = session.run(BY_NAME["change_price"])
    assert outcome.error is None and len(outcome.conflicts_ms) == 1
    first, second = list(history)
    assert (first.outcome, first.error) == ("failed", "TransientError")
    assert second.outcome == "ok"


def test_an_attempt_says_its_snapshot_tid_times_and_note(user: Any) -> None:
    storage, session, history = user
    session.run(BY_NAME["change_price"])
    session.run(BY_NAME["lookup"])
    write, read = list(history)
    last = storage.lastTransaction()
    assert write.tid == last.hex()
    assert read.snapshot == last.hex()  # the lookup began after the commit
    assert write.snapshot is not None and write.snapshot < write.tid
    assert write.start <= write.end <= read.start <= read.end
    assert storage._transactions[last].description == note("r1", "t", 1).encode()
    (record,) = history.sessions.values()
    assert record.realtime and record.run == "r1" and record.storage == "FailsAt"
    assert snapshot_of(session.connection) is not None
    assert promise_of(session.connection.db()).realtime


def test_match_price_names_its_rival_read_with_read_current(user: Any) -> None:
    _, session, history = user
    session.run(Operation("match_price", 1, True, BY_NAME["match_price"].run, ""))
    (event,) = list(history)
    (own, rival), (write,) = event.reads, event.writes
    assert not own.current and rival.current
    assert own.key == write.key != rival.key and write.revision == own.revision + 1
    assert dataclasses.asdict(BY_NAME["match_price"])["weight"] == 0  # off by default
