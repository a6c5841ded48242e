"""Every anomaly class searched on its own edge set, in each strongly
connected component, and the level derived from all that was found:
histories written by hand from the definitions (Adya 1999; Kingsbury and
Alvaro, VLDB 2020), one per case the checker once got wrong, several
without snapshot tids (the history format allows null, and then no
stale-snapshot rule stands in for the graph).

- one anomaly must not hide another in the same component;
- a cycle that needs session order is "-process": the history may still
  be serializable, only not strong-session;
- violations without a cycle count in the level;
- commit is inferred from observation (an unknown outcome read by a
  committed attempt committed: its reads are judged), every reader of an
  aborted write named, a write built on an aborted one flagged;
- a read of an intermediate version draws its edges.
"""

from __future__ import annotations

from scenarios.checker import anomalies
from tests.support.checker_histories import T, check, cycles, only


def test_a_write_skew_does_not_hide_a_real_time_cycle() -> None:
    """a and c write-skew (allowed under snapshot isolation); b began 9 s
    after a's commit was acknowledged and read y before it: a
    G-single-realtime in the same component.  No snapshots recorded."""
    a = T("a", reads=(("x", 0), ("y", 0)), writes=(("y", 1),), tid=0x10, snapshot=None)
    c = T("c", reads=(("x", 0), ("y", 0)), writes=(("x", 1),), tid=0x11, snapshot=None)
    b = T("b", reads=(("y", 0),), start=10.0, end=11.0, snapshot=None)
    report = check([a, c, b])
    assert only(report) == {"G-single-realtime": 1}, report.lines()
    assert report.allowed == {"G2-item": 1}
    (text,) = cycles(report)
    assert text.startswith("G-single-realtime: a#1 (op) -> b#1 (op) -> a#1 (op)")
    assert "a#1 (op) was acknowledged 9.000 s before b#1 (op) began" in text
    assert report.level == (
        "strong-session snapshot isolation; not strict (1 G-single-realtime); "
        "not serializable (1 G2-item)"
    )


def test_a_write_cycle_does_not_hide_a_read_skew() -> None:
    """a and b overwrite each other (G0); c read x before a's write and z
    a wrote (G-single) in the same component: both named."""
    a = T("a", writes=(("x", 1), ("y", 2), ("z", 1)), tid=0x10)
    b = T("b", writes=(("x", 2), ("y", 1)), tid=0x11)
    c = T("c", reads=(("x", 0), ("z", 1)))
    report = check([a, b, c])
    assert only(report) == {"G0": 1, "G-single": 1}, report.lines()
    single = [t for t in cycles(report) if t.startswith("G-single")]
    assert single[0].startswith("G-single: a#1 (op) -> c#1 (op) -> a#1 (op)")


def test_the_shortest_witness_is_reported() -> None:
    """A G-single through three attempts and one through two in the same
    component: the two-attempt cycle is the witness."""
    a = T("a", writes=(("x", 1), ("y", 1), ("z", 1)), tid=0x10)
    b = T("b", reads=(("x", 0), ("w", 1)))
    c = T("c", reads=(("y", 1),), writes=(("w", 1),), tid=0x11)
    d = T("d", reads=(("y", 0), ("z", 1)))
    report = check([a, b, c, d])
    texts = [t for t in cycles(report) if t.startswith("G-single:")]
    assert texts and texts[0].startswith("G-single: a#1 (op) -> d#1 (op) -> a#1 (op)")


def test_g_nonadjacent_and_g2_item_apart() -> None:
    """Two anti-dependencies never consecutive: G-nonadjacent (ruling out
    snapshot isolation), not the G2-item a write skew is."""
    t1 = T("a", reads=(("x", 0), ("w", 1)), snapshot=None)
    t2 = T("b", writes=(("x", 1), ("y", 1)), tid=0x10, snapshot=None)
    t3 = T("c", reads=(("y", 1), ("z", 0)), snapshot=None)
    t4 = T("d", writes=(("z", 1), ("w", 1)), tid=0x11, snapshot=None)
    report = check([t1, t2, t3, t4])
    assert only(report) == {"G-nonadjacent": 1}, report.lines()
    assert report.allowed == {}
    assert report.level == (
        "strong read committed; not snapshot isolation (1 G-nonadjacent)"
    )


def test_two_cycles_glued_at_one_attempt_are_no_third() -> None:
    """c read-skews against a (c -rw-> a -wr-> c) and b against c (b -rw->
    c -wr-> b): two G-single cycles through c.  Walked one after the other
    they hold two anti-dependencies, but such a walk visits c twice: no
    G-nonadjacent, no G2-item.  (d, a third read skew against a, makes
    the component as large as that walk is long.)"""
    a = T("a", writes=(("x", 1), ("z", 1)), tid=0x10)
    c = T("c", reads=(("x", 0), ("z", 1)), writes=(("w", 1), ("y", 1)), tid=0x11)
    b = T("b", reads=(("w", 1), ("y", 0)))
    d = T("d", reads=(("x", 0), ("z", 1)))
    report = check([a, b, c, d])
    assert only(report) == {"G-single": 1}, report.lines()
    assert report.allowed == {}, report.notes


# -- session order: the history may still be serializable --------------------


def test_g_single_process_is_serializable_not_strong_session() -> None:
    """Two clients each read, in their second transaction, the version
    before their own first one's write: a serial order exists (the second
    first), a session order does not.  No snapshots recorded; b ran
    after a, so the two cycles are two components."""
    txns = []
    for client, name, t, at in (("a", "x", 0x10, 0.0), ("b", "y", 0x11, 10.0)):
        txns.append(
            T(
                client,
                1,
                writes=((name, 1),),
                start=at,
                end=at + 1,
                tid=t,
                snapshot=None,
            )
        )
        txns.append(
            T(client, 2, reads=((name, 0),), start=at + 2, end=at + 3, snapshot=None)
        )
    report = check(txns, realtime=False)
    assert only(report) == {"G-single-process": 2}, report.lines()
    assert report.level == "serializable; not strong-session (2 G-single-process)"
    assert "serializable" not in report.ruled_out
    assert "strong-session serializable" in report.ruled_out


def test_g1c_process_rules_out_only_strong_session_read_committed() -> None:
    """b read what a#2 wrote and a#1 read b's write: a cycle only through
    a's session order.  Serial order a#2, b#1, a#1 explains every read."""
    a1 = T("a", 1, reads=(("x", 1),), writes=(("x", 2),), tid=0x10, snapshot=None)
    a2 = T("a", 2, writes=(("y", 1),), start=2, end=3, tid=0x11, snapshot=None)
    b1 = T("b", reads=(("y", 1),), writes=(("x", 1),), end=4, tid=0x12, snapshot=None)
    report = check([a1, a2, b1], realtime=False)
    assert only(report) == {"G1c-process": 1}, report.lines()
    assert report.level == "serializable; not strong-session (1 G1c-process)"
    assert "strong-session read committed" in report.ruled_out
    assert "read committed" not in report.ruled_out


def test_g0_process() -> None:
    """b overwrote a#1's predecessor and a#2's write: ww edges through
    a's session order only."""
    b = T("b", writes=(("x", 1), ("y", 2)), tid=0x11, snapshot=None)
    a1 = T("a", 1, writes=(("x", 2),), tid=0x12, snapshot=None)
    a2 = T("a", 2, writes=(("y", 1),), start=2, end=3, tid=0x10, snapshot=None)
    report = check([b, a1, a2], realtime=False)
    assert only(report) == {"G0-process": 1}, report.lines()
    assert report.level == "serializable; not strong-session (1 G0-process)"


# -- violations without a cycle ------------------------------------------------


def test_a_read_of_a_value_nobody_wrote_rules_out_every_level() -> None:
    report = check([T("b", reads=(("x", 5),))])
    assert only(report) == {"inconsistent read": 1}, report.lines()
    assert report.level == (
        "no isolation level; not read uncommitted (1 inconsistent read)"
    )
    assert report.ruled_out == list(anomalies.LEVELS)


def test_an_aborted_read_rules_out_read_committed() -> None:
    report = check(
        [T("a", writes=(("x", 1),), outcome="failed"), T("b", reads=(("x", 1),))]
    )
    assert report.level == "strong read uncommitted; not read committed (1 G1a)"


# -- commit inferred from observation ------------------------------------------


def test_g1a_through_an_inferred_commit() -> None:
    """u's outcome is unknown, but b (committed) read its write of y: u
    committed, and it read x from f, whose commit failed."""
    f = T("f", writes=(("x", 1),), outcome="failed")
    u = T("u", reads=(("x", 1),), writes=(("y", 1),), outcome="unknown")
    b = T("b", reads=(("y", 1),), start=2, end=3)
    report = check([f, u, b])
    assert only(report) == {"G1a": 1}, report.lines()
    (v,) = report.violations
    assert "read by u#1 (op)" in v.text
    assert set(v.ops) == {"u#1 (op)", "f#1 (op)"}


def test_an_unknown_outcome_nobody_read_is_not_judged() -> None:
    """The same read of an aborted write by an attempt that may never
    have committed (nobody saw its write): nothing to blame."""
    f = T("f", writes=(("x", 1),), outcome="failed")
    u = T("u", reads=(("x", 1),), writes=(("y", 1),), outcome="unknown")
    report = check([f, u])
    assert report.violations == [], report.lines()


def test_every_reader_of_an_aborted_write_is_named() -> None:
    f = T("f", writes=(("x", 1),), outcome="failed")
    b = T("b", reads=(("x", 1),))
    c = T("c", reads=(("x", 1),))
    report = check([f, b, c])
    (v,) = report.violations
    assert v.anomaly == "G1a"
    assert v.text.endswith("(read by b#1 (op), c#1 (op))")
    assert set(v.ops) == {"b#1 (op)", "c#1 (op)", "f#1 (op)"}


def test_a_dirty_update() -> None:
    """c committed revision 2 of x, built on revision 1, which only f
    (whose commit failed) wrote."""
    f = T("f", writes=(("x", 1),), outcome="failed")
    c = T("c", writes=(("x", 2),), tid=0x10)
    report = check([f, c])
    assert only(report) == {"dirty update": 1}, report.lines()
    (v,) = report.violations
    assert v.text == (
        "capability 1's price revision 2 ($10.02) by c#1 (op) was built on "
        "revision 1, the write of f#1 (op), whose commit failed (a dirty update)"
    )
    assert report.level == (
        "strong read uncommitted; not read committed (1 dirty update)"
    )


# -- intermediate versions -----------------------------------------------------


def test_a_read_of_an_intermediate_version_draws_its_edges() -> None:
    """b read x1, which a overwrote with x2 in the same transaction (G1b),
    and a read b's write: a G1c through that read."""
    a = T("a", reads=(("y", 1),), writes=(("x", 1), ("x", 2)), tid=0x10)
    b = T("b", reads=(("x", 1),), writes=(("y", 1),), tid=0x11)
    report = check([a, b])
    assert only(report) == {"G1b": 1, "G1c": 1}, report.lines()


def test_an_intermediate_read_alone_is_no_cycle() -> None:
    """The edge from the intermediate version leads to its writer's next
    version only through another writer's: G1b alone."""
    a = T("a", writes=(("x", 1), ("x", 2)), tid=0x10)
    b = T("b", reads=(("x", 1),))
    report = check([a, b])
    assert only(report) == {"G1b": 1}, report.lines()


# -- the lattice, from the definitions -------------------------------------------


def test_the_level_of_each_suffix() -> None:
    level = anomalies.level
    assert level({}, {}, True) == ("strict serializable", [])
    assert level({}, {}, False)[0] == (
        "strong-session serializable; real time not recorded"
    )
    assert level({"G-single-realtime": 1}, {}, True)[0] == (
        "strong-session serializable; not strict (1 G-single-realtime)"
    )
    assert level({"G2-item": 3, "G-single-process": 1}, {}, True)[0] == (
        "snapshot isolation; not strong-session (1 G-single-process); "
        "not serializable (3 G2-item)"
    )
    assert level({"G1c": 1}, {}, True)[0] == (
        "strong read uncommitted; not read committed (1 G1c)"
    )
    assert level({}, {"lost update": 1}, True)[0].startswith(
        "strong read committed; not snapshot isolation (1 lost update)"
    )


def test_what_each_anomaly_rules_out() -> None:
    assert anomalies.ruled_out("G2-item") == {
        "strict serializable",
        "strong-session serializable",
        "serializable",
    }
    assert anomalies.ruled_out("G-single-process") == {
        "strict serializable",
        "strong-session serializable",
        "strong snapshot isolation",
        "strong-session snapshot isolation",
    }
    assert anomalies.ruled_out("G1c-realtime") == {
        "strict serializable",
        "strong snapshot isolation",
        "strong read committed",
    }
    assert anomalies.ruled_out("G0") == set(anomalies.LEVELS)
