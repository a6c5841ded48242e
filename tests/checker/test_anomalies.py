"""The checker on histories written by hand: each anomaly Elle names (G0,
G1a, G1b, G1c, G-single, G-nonadjacent, G2-item) with the cycle it must
print, their real-time and snapshot variants, what ZODB allows (a write
skew, a stale read without server_sync) against what it promises, the
rules beside the graph (corrupt value, lost record, phantom write), and
what an incomplete history may not be blamed on (a lost client, another
writer).  judge() is a pure function: no database here, quick and
in-process.
"""

from __future__ import annotations

import dataclasses

from scenarios.checker.judge import judge
from scenarios.checker.readback import Unloadable
from scenarios.load.history import Access, Event
from tests.support.checker_histories import (
    BASE_TID,
    T,
    baseline,
    check,
    cycles,
    final,
    only,
    tid,
)

# -- the anomalies Elle names -------------------------------------------------


def test_g0_a_write_cycle() -> None:
    """T1 and T2 each overwrite the other on a different register."""
    t1 = T("a", writes=(("x", 1), ("y", 2)), tid=0x10)
    t2 = T("b", writes=(("x", 2), ("y", 1)), tid=0x11)
    report = check([t1, t2])
    assert only(report) == {"G0": 1}, report.lines()
    assert cycles(report) == [
        "G0: a#1 (op) -> b#1 (op) -> a#1 (op): a#1 (op) wrote capability 1's "
        "price revision 1 and b#1 (op) the next one, revision 2; b#1 (op) wrote "
        "capability 2's price revision 1 and a#1 (op) the next one, revision 2 "
        "(rules out every level)"
    ]
    assert report.level == "no isolation level; not read uncommitted (1 G0)"


def test_g1a_an_aborted_read() -> None:
    t1 = T("a", writes=(("x", 1),), outcome="failed")
    t2 = T("b", reads=(("x", 1),))
    report = check([t1, t2])
    assert only(report) == {"G1a": 1}, report.lines()
    (v,) = report.violations
    assert v.kind == "inconsistent read"
    assert v.text == (
        "1 acknowledged read saw capability 1's price revision 1 ($10.01), the "
        "write of a#1 (op), whose commit failed (read by b#1 (op))"
    )


def test_g1b_an_intermediate_read() -> None:
    t1 = T("a", writes=(("x", 1), ("x", 2)), tid=0x10)
    t2 = T("b", reads=(("x", 1),))
    report = check([t1, t2])
    assert only(report) == {"G1b": 1}, report.lines()
    assert report.violations[0].text == (
        "1 acknowledged read saw capability 1's price revision 1 ($10.01), which "
        "a#1 (op) overwrote in the same transaction (first: b#1 (op))"
    )


def test_g1c_a_circular_information_flow() -> None:
    """Each reads what the other wrote."""
    t1 = T("a", reads=(("y", 1),), writes=(("x", 1),), tid=0x10)
    t2 = T("b", reads=(("x", 1),), writes=(("y", 1),), tid=0x11)
    report = check([t1, t2])
    assert only(report) == {"G1c": 1}, report.lines()
    assert cycles(report) == [
        "G1c: a#1 (op) -> b#1 (op) -> a#1 (op): b#1 (op) read capability 1's "
        "price revision 1, which a#1 (op) wrote; a#1 (op) read capability 2's "
        "price revision 1, which b#1 (op) wrote (rules out read committed and "
        "every level above)"
    ]


def test_g_single_a_read_skew() -> None:
    """T1 sees T2's write of y but not its write of x."""
    t1 = T("a", reads=(("x", 0), ("y", 1)))
    t2 = T("b", writes=(("x", 1), ("y", 1)), tid=0x10)
    report = check([t1, t2])
    assert only(report) == {"G-single": 1}, report.lines()
    assert cycles(report) == [
        "G-single: a#1 (op) -> b#1 (op) -> a#1 (op): a#1 (op) read capability 1's "
        "price revision 0, and b#1 (op) wrote a later one, revision 1; a#1 (op) "
        "read capability 2's price revision 1, which b#1 (op) wrote (rules out "
        "snapshot isolation and every level above)"
    ]


def test_g_nonadjacent() -> None:
    """T1 -rw-> T2 -wr-> T3 -rw-> T4 -wr-> T1: two anti-dependencies, never
    consecutive, which snapshot isolation rules out."""
    t1 = T("a", reads=(("x", 0), ("w", 1)))
    t2 = T("b", writes=(("x", 1), ("y", 1)), tid=0x10)
    t3 = T("c", reads=(("y", 1), ("z", 0)))
    t4 = T("d", writes=(("z", 1), ("w", 1)), tid=0x11)
    report = check([t1, t2, t3, t4])
    assert only(report) == {"G-nonadjacent": 1}, report.lines()
    (text,) = cycles(report)
    assert text.startswith(
        "G-nonadjacent: a#1 (op) -> b#1 (op) -> c#1 (op) -> d#1 (op) -> a#1 (op)"
    )


def test_g2_item_a_write_skew_is_allowed_by_snapshot_isolation() -> None:
    """Each reads both registers and writes one: ZODB allows it."""
    t1 = T("a", reads=(("x", 0), ("y", 0)), writes=(("y", 1),), tid=0x10)
    t2 = T("b", reads=(("x", 0), ("y", 0)), writes=(("x", 1),), tid=0x11)
    report = check([t1, t2])
    assert report.ok is True and report.violations == [], report.lines()
    assert report.allowed == {"G2-item": 1}
    assert report.level == "strong snapshot isolation; not serializable (1 G2-item)"
    assert report.ruled_out == [
        "strict serializable",
        "strong-session serializable",
        "serializable",
    ]
    assert report.notes == [
        "allowed: 1 G2-item (first: G2-item: a#1 (op) -> b#1 (op) -> a#1 (op): "
        "a#1 (op) read capability 1's price revision 0, and b#1 (op) wrote a later "
        "one, revision 1; b#1 (op) read capability 2's price revision 0, and a#1 "
        "(op) wrote a later one, revision 1)"
    ]


def test_a_write_skew_guarded_by_read_current_is_a_violation() -> None:
    t1 = T(
        "a", reads=(("x", 0), ("y", 0)), writes=(("y", 1),), tid=0x10, current=("x",)
    )
    t2 = T(
        "b", reads=(("x", 0), ("y", 0)), writes=(("x", 1),), tid=0x11, current=("y",)
    )
    report = check([t1, t2])
    assert only(report) == {"G2-item (readCurrent)": 1}, report.lines()
    (text,) = cycles(report)
    assert "read capability 1's price revision 0 with readCurrent" in text


def test_a_write_skew_with_one_read_current_is_still_allowed() -> None:
    t1 = T(
        "a", reads=(("x", 0), ("y", 0)), writes=(("y", 1),), tid=0x10, current=("x",)
    )
    t2 = T("b", reads=(("x", 0), ("y", 0)), writes=(("x", 1),), tid=0x11)
    report = check([t1, t2])
    assert report.ok is True, report.lines()
    assert report.allowed == {"G2-item": 1}


def test_a_lost_update() -> None:
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), tid=0x10)
    t2 = T("b", reads=(("x", 0),), writes=(("x", 1),), tid=0x11)
    events = [t1.event(), t2.event()]
    # b's write of revision 1 holds another value than a's
    events[1] = dataclasses.replace(
        events[1], writes=(Access("price", 1, 1, 4242, "x1-b"),)
    )
    report = judge(events, baseline(), final([t1]), {})
    assert only(report) == {"lost update": 1}, report.lines()
    assert report.violations[0].text.startswith(
        "a#1 (op) and b#1 (op) both made price revision 1 of 1"
    )


# -- real time and snapshots --------------------------------------------------


def stale_read() -> list[T]:
    """T1 commits x1 and is acknowledged at 1 s; T2 begins at 2 s and reads
    x0 at a snapshot before T1's commit."""
    return [
        T("a", reads=(("x", 0),), writes=(("x", 1),), end=1.0, tid=0x10),
        T("b", reads=(("x", 0),), start=2.0, end=3.0, snapshot=BASE_TID),
    ]


def test_a_stale_read_breaks_the_promise_of_real_time_order() -> None:
    report = check(stale_read(), realtime=True)
    assert only(report) == {"G-single-realtime": 1, "stale snapshot": 1}
    assert cycles(report) == [
        "G-single-realtime: a#1 (op) -> b#1 (op) -> a#1 (op): a#1 (op) was "
        "acknowledged 1.000 s before b#1 (op) began; b#1 (op) read capability "
        "1's price revision 0, and a#1 (op) wrote a later one, revision 1 "
        "(rules out strong snapshot isolation and every level above)"
    ]
    stale = [v.text for v in report.violations if v.kind == "stale read"]
    assert stale == [
        "b#1 (op) began 1.000 s after a#1 (op)'s commit 0000000000000010 was "
        "acknowledged, but read at 0000000000000005"
    ]
    assert report.level == (
        "strong-session serializable; not strict (1 G-single-realtime, 1 stale "
        "snapshot)"
    )


def test_a_stale_read_is_allowed_without_server_sync() -> None:
    report = check(stale_read(), realtime=False)
    assert report.ok is True and report.violations == [], report.lines()
    assert report.allowed == {"G-single-realtime": 1, "stale snapshot": 1}
    assert "without real-time order" in report.promise


def test_a_read_outside_its_own_snapshot_is_a_violation_anyway() -> None:
    """T2's snapshot holds T1's commit, yet it read the version before:
    a dropped invalidation, a storage serving old data.  No real time
    needed (the storage's own transaction ids order them)."""
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), start=0.0, end=1.0, tid=0x10)
    t2 = T("b", reads=(("x", 0),), start=0.5, end=3.0, snapshot=0x10)
    report = check([t1, t2], realtime=False)
    assert only(report) == {"G-single": 1}, report.lines()
    (text,) = cycles(report)
    assert "a#1 (op) committed as 0000000000000010, and b#1 (op)'s snapshot" in text


def test_a_session_must_see_its_own_writes() -> None:
    t1 = T("a", n=1, reads=(("x", 0),), writes=(("x", 1),), start=0, end=1, tid=0x10)
    t2 = T("a", n=2, reads=(("x", 0),), start=0.5, end=2, snapshot=BASE_TID)
    report = check([t1, t2], realtime=False)
    # a cycle through session order: still serializable, not strong-session
    assert only(report) == {"G-single-process": 1}, report.lines()
    assert "ran before a#2 (op) in the same session" in cycles(report)[0]
    assert report.level == "serializable; not strong-session (1 G-single-process)"


def test_a_correct_concurrent_history_is_strict_serializable() -> None:
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), start=0, end=1, tid=0x10)
    t2 = T(
        "b",
        reads=(("x", 1), ("y", 0)),
        writes=(("y", 1),),
        start=2,
        end=3,
        snapshot=0x10,
        tid=0x11,
    )
    t3 = T("c", reads=(("x", 1), ("y", 1)), start=4, end=5, snapshot=0x11)
    report = check([t1, t2, t3])
    assert report.ok is True and report.violations == [], report.lines()
    assert report.allowed == {}
    assert report.level == "strict serializable"


# -- the rules beside the graph ------------------------------------------------


def test_a_field_changed_in_range_is_a_corrupt_value() -> None:
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), tid=0x10)
    read = final([t1])
    stored = read.registers["price", 1]
    read.registers["price", 1] = dataclasses.replace(stored, digest="other fields")
    report = check([t1], final_read=read)
    assert only(report) == {"corrupt value": 1}, report.lines()
    assert report.violations[0].text == (
        "capability 1's price revision 1 ($10.01) is stored with other fields than "
        "a#1 (op) wrote (transaction 0000000000000010); stored by transaction "
        "0000000000000010, acknowledged to a#1 (op)"
    )


def test_a_record_that_cannot_be_loaded_is_a_lost_record() -> None:
    created = Event(
        "a", 1, "create_sequence", "ok", None, tid(0x10), (),
        (Access("sequence", 1 << 24, 1, ("u", "g", 3), "s"),), 0.0, 1.0, tid(BASE_TID),
    )  # fmt: skip
    read = final([])
    read.unloadable.append(
        Unloadable(
            "2a", "step 2 of sequence 16777216", ("sequence", 1 << 24), "POSKeyError"
        )
    )
    report = judge([created], baseline(), read, {})
    assert only(report) == {"lost record": 1}, report.lines()
    assert report.violations[0].text == (
        "step 2 of sequence 16777216 (oid 0x2a) cannot be loaded (POSKeyError): "
        "sequence 16777216, which refers to it, was committed by a#1 "
        "(create_sequence) (transaction 0000000000000010)"
    )


# -- incomplete histories -------------------------------------------------------


def test_a_lost_clients_writes_are_not_blamed_on_the_storage() -> None:
    """A worker's last attempt never reached the checker: the value it
    wrote looks written by nobody, which its lost history may explain."""
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), tid=0x10)
    t2 = T("wdead.u1", reads=(("x", 1),), writes=(("x", 2),), tid=0x11)
    read = final([t1, t2])
    report = check([t1], final_read=read, lost={"wdead.": "worker dead"})
    assert report.ok is None and report.violations == [], report.lines()
    assert report.not_checked == ["worker dead lost"]
    assert [v.kind for v in report.unexplained] == ["phantom write"]
    assert (
        report.summary()
        == "consistency: 0 violations; not fully checked: worker dead lost"
    )
    # without the worker said lost, the same is a violation
    assert check([t1], final_read=read).ok is False


def test_another_writer_in_the_log_makes_the_check_incomplete() -> None:
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), tid=0x10)
    read = final([t1], {"x": (2, 0x11)})
    read.log = [(tid(0x10), "vfab r a#1"), (tid(0x11), "vfab other c0#7")]
    report = check([t1], final_read=read)
    assert report.ok is None and report.violations == [], report.lines()
    assert report.not_checked == [
        "another writer: 1 transaction since the baseline carry no attempt of this "
        "run (first: 0000000000000011, 'vfab other c0#7')"
    ]


def test_a_failed_attempts_transaction_in_the_log_is_a_phantom_write() -> None:
    """An abort that committed: the log holds the failed attempt's
    transaction, by its note."""
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), outcome="failed")
    read = final([], {"x": (1, 0x10)})
    read.log = [(tid(0x10), "vfab r a#1")]
    report = check([t1], final_read=read)
    assert report.ok is False
    texts = [v.text for v in report.violations]
    assert (
        "transaction 0000000000000010 in the storage's log is a#1 (op)'s, whose "
        "commit failed (ConflictError): its abort committed"
    ) in texts


def test_an_unknown_outcome_the_log_holds_is_committed() -> None:
    """A commit whose outcome the client never learned, then read by
    another: the log resolves it, and the graph places it."""
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), outcome="unknown")
    t2 = T("b", reads=(("x", 1),), start=2, end=3, snapshot=0x10)
    read = final([], {"x": (1, 0x10)})
    read.log = [(tid(0x10), "vfab r a#1")]
    report = check([t1, t2], final_read=read)
    assert report.ok is True, report.lines()
    assert report.checked["nodes"] == 3  # the baseline, a#1 and b#1


def test_a_log_without_notes_blames_no_one_it_cannot_tell() -> None:
    """RelStorage history-free keeps no transaction notes: its log's
    transactions are matched by the acknowledged tids, and as many others
    as attempts of unknown outcome could have made are theirs."""
    t1 = T("a", reads=(("x", 0),), writes=(("x", 1),), tid=0x10)
    t2 = T("b", reads=(("x", 1),), writes=(("x", 2),), outcome="unknown")
    read = final([t1], {"x": (2, 0x11)})
    read.log = [(tid(0x10), ""), (tid(0x11), "")]
    report = check([t1, t2], final_read=read)
    assert report.ok is True, report.lines()
    read.log.append((tid(0x12), ""))  # one more than the unknowns explain
    report = check([t1, t2], final_read=read)
    assert report.ok is None
    assert report.not_checked[0].startswith("another writer: 2 transactions")
