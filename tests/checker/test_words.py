"""The check in a deployer's words (scenarios.checker.words): whether the
data stayed right first, in plain words, the anomalies' names after; a
conflict retried said apart from an attempt that failed."""

from __future__ import annotations

from scenarios.checker import consistency
from scenarios.checker.check import Check
from scenarios.checker.words import plain, said
from scenarios.load.history import Event, accesses
from vfab import generate, operations
from vfab.generate import DataSpec

STALE = (
    "117 reads saw a state older than a commit already acknowledged to another client"
)


def test_right_says_what_the_storage_allows_in_plain_words() -> None:
    check = Check(
        checked=True,
        ok=True,
        summary="consistency: 0 violations",
        allowed={"stale snapshot": 117, "G-single-realtime": 1},
        promise="ZEO without server_sync: a transaction may begin before ...",
    )
    words = plain(check, "zeo")
    assert words.startswith("right: every read saw a committed state; 1 group")
    assert f"{STALE}, which zeo allows" in words
    assert "(G-single-realtime)" in words  # the name after its words
    # without a storage named, the promise says who
    assert plain(check).endswith("which ZEO without server_sync allows")
    line = said(check, "zeo")
    assert line.startswith("right: ") and line.endswith("(consistency: 0 violations)")


def test_wrong_says_what_went_wrong_before_the_names() -> None:
    counts = {"lost write": 0, "phantom write": 4, "index drift": 1}
    check = Check(True, False, "consistency: 5 violations", counts=counts)
    assert plain(check) == (
        "WRONG: the data did not stay right: 4 writes that no committed "
        "transaction made, 1 index entry out of step with its object"
    )
    unknown = Check(True, None, "consistency: 0 violations; not fully checked: x")
    assert plain(unknown).startswith("not fully checked: ")
    unrun = Check(False, None, "consistency not checked: y")
    assert plain(unrun).startswith("not checked")
    assert said(unrun) == "consistency not checked: y"


def _event(n: int, receipt: object, outcome: str, client: str = "c0") -> Event:
    reads, writes = accesses(receipt)
    error = None if outcome == "ok" else "ConflictError"
    return Event(client, n, type(receipt).__name__, outcome, error, None, reads, writes)


def test_a_conflict_retried_is_not_an_attempt_that_failed() -> None:
    """A failed attempt followed by its client's attempt at the same
    operation was retried; one its client did not try again failed."""
    fab = generate.build(DataSpec.for_size("small"))
    baseline = consistency.Baseline.read(fab)
    look = operations.looked(operations.lookup_capability(fab, 2))
    audit = operations.audit_stock(fab)
    events = [
        _event(1, look, "failed"),  # retried by attempt 2
        _event(2, look, "ok"),
        _event(3, audit, "failed"),  # its client moved on: failed
        _event(4, look, "ok"),
    ]
    report = consistency.check(fab, baseline, events)
    assert report.checked["retried"] == 1
    assert "4 attempts (2 ok, 1 conflict retried, 1 failed, 0 unknown)" in (
        report.what()
    )
