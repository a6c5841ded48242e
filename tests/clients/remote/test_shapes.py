"""The shape of a history record as a worker sends it (scenarios.clients.remote
.shapes.record): every record History.drain() makes passes, a record of
the wrong shape is refused, and whatever passes History.absorb() takes
without an error (the master drops the rest before absorb sees it)."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from scenarios.clients.remote.shapes import RECORDS, record, stats
from scenarios.load.clock import Clock
from scenarios.load.history import Access, Event, History, Session

#: locust's total row of a stats report (StatsEntry.serialize), empty.
TOTAL = {
    "name": "Aggregated", "method": "", "start_time": 1.0,
    "last_request_timestamp": None, "num_requests": 0, "num_none_requests": 0,
    "num_failures": 0, "total_response_time": 0, "max_response_time": 0,
    "min_response_time": None, "total_content_length": 0,
    "response_times": {12: 3}, "num_reqs_per_sec": {}, "num_fail_per_sec": {},
}  # fmt: skip


def drained() -> list[dict[str, Any]]:
    """A session and events with every kind of access, as a worker drains
    them into its stats report."""
    history = History()
    history.session(Session("w1.u1", Clock(0.25, 0.001, "boot"), "zeo", True, "x"))
    history.record(
        Event(
            "w1.u1", 1, "change_price", "ok", None, "00000000000000ff",
            (Access("price", 7, 3, 48500, "d1", True),),
            (Access("price", 7, 4, 49000, "d2"),),
            start=1.5, end=1.75, snapshot="00000000000000fe",
        )
    )  # fmt: skip
    history.record(
        Event(
            "w1.u1", 2, "create_sequence", "failed", "ConflictError", None, (),
            (Access("sequence", 12, 1, ("alice", "fab", 3), "d3"),),
        )
    )  # fmt: skip
    history.record(
        Event("w1.u1", 3, "audit_stock", "pending", None, None,
              (Access("stock total", "*", 0, 900),), ())
    )  # fmt: skip
    return history.drain()


def test_every_drained_record_passes() -> None:
    records = drained()
    assert len(records) == 4
    assert all(record(r) for r in records)
    assert RECORDS(records)
    report = {"stats": [], "stats_total": TOTAL, "errors": {},
              "user_classes_count": {}, "vfab_history": records}  # fmt: skip
    assert stats({"vfab_history": RECORDS})(report)
    report["vfab_history"] = [*records, {"client": "w1.u1"}]
    assert not stats({"vfab_history": RECORDS})(report)
    # locust's handler reads these before the suite's: a row without them
    # would raise there (KeyError 'name')
    assert not stats({})(report | {"stats_total": {}})


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(records: list[dict[str, Any]]) -> None:
        target: Any = records
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _drop(index: int, key: str) -> Any:
    return lambda records: records[index].pop(key)


BAD = {
    "an event without its client": _drop(1, "client"),
    "an attempt number as text": _set((1, "n"), "1"),
    "a boolean attempt number": _set((1, "n"), True),
    "reads not a list": _set((1, "reads"), {"a": 1}),
    "an access of three items": _set((1, "writes", 0), ["price", 7, 4]),
    "a revision as text": _set((1, "writes", 0, 2), "4"),
    "a value that is a mapping": _set((1, "writes", 0, 3), {"x": 1}),
    "a key that is a list": _set((1, "writes", 0, 1), [7]),
    "a start that is not a number": _set((1, "start"), "soon"),
    "a start that is NaN": _set((1, "start"), math.nan),
    "an outcome that is a number": _set((2, "outcome"), 1),
    "a tid that is a number": _set((1, "tid"), 255),
    "a clock of strings": _set((0, "clock"), {"offset_s": "x", "uncertainty_s": "y"}),
    "a session named by a number": _set((0, "session"), 5),
    "a record that is a list": _set((3,), ["client", "n"]),
}


@pytest.mark.parametrize("change", BAD.values(), ids=BAD.keys())
def test_a_record_of_the_wrong_shape_is_refused(change: Any) -> None:
    records = drained()
    change(records)
    assert not RECORDS(records)


GOOD = {
    "a key a newer version adds": _set((1, "extra"), {"any": ["thing"]}),
    "no times or snapshot (format 1)": lambda r: [r[1].pop(k) for k in
                                                 ("start", "end", "snapshot")],
    "a session with its name only": lambda r: r.__setitem__(0, {"session": "w2.u1"}),
    "an integer value where a float was": _set((1, "start"), 2),
}  # fmt: skip


@pytest.mark.parametrize("change", GOOD.values(), ids=GOOD.keys())
def test_what_passes_is_absorbed(change: Any) -> None:
    records = drained()
    change(records)
    assert RECORDS(records)
    history = History()
    history.absorb(copy.deepcopy(records))
    assert len(history.events) == 3
