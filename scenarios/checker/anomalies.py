"""The anomalies the checker names, the isolation levels each one rules
out, and which of them a ZODB storage promises never to show (Adya's
phenomena as Elle names them; docs/consistency.md has the table).

A cycle's anomaly follows from its edges: only write-write (and order)
edges: G0; with a write-read edge: G1c; exactly one read-write
(anti-dependency) edge: G-single; two or more: G2-item, or G-nonadjacent
when no two of them are consecutive; "-realtime" when the cycle needs a
real-time edge; order edges alone (a session's snapshot that went back):
"non-monotonic snapshot" (-realtime).
G1a (a read of an aborted write), G1b (a read of an
intermediate one), a lost update (two committed read-modify-writes of one
version) and a stale snapshot (a transaction that began after a commit
was acknowledged and does not see it) are found without cycles.
"""

from __future__ import annotations

LEVELS = (
    "strict serializable",
    "serializable",
    "strong snapshot isolation",
    "snapshot isolation",
    "read committed",
    "read uncommitted",
)
_ALL = frozenset(LEVELS)
_ABOVE_RC = _ALL - {"read uncommitted"}
_ABOVE_SI = frozenset(LEVELS[:4])
_SERIAL = frozenset({"strict serializable", "serializable"})
_STRICT = frozenset({"strict serializable", "strong snapshot isolation"})

#: anomaly (without "-realtime") -> the levels it rules out
RULES_OUT: dict[str, frozenset[str]] = {
    "G0": _ALL,
    "G1a": _ABOVE_RC,
    "G1b": _ABOVE_RC,
    "G1c": _ABOVE_RC,
    "G-single": _ABOVE_SI,
    "G-nonadjacent": _ABOVE_SI,
    "lost update": _ABOVE_SI,
    "G2-item": _SERIAL,
    # A write skew whose reads were all named with readCurrent: ZODB
    # promises it cannot commit (each readCurrent is checked at commit).
    "G2-item (readCurrent)": _SERIAL,
    "stale snapshot": _STRICT,
    # A snapshot older than one before it in a session (or in real time).
    "non-monotonic snapshot": _ABOVE_SI,
}

#: What every ZODB storage promises never to show: snapshot isolation
#: with first-committer-wins, and readCurrent's reads serializable.
NEVER = frozenset(
    {
        "G0",
        "G1a",
        "G1b",
        "G1c",
        "G-single",
        "G-nonadjacent",
        "lost update",
        "G2-item (readCurrent)",
        "non-monotonic snapshot",
    }
)

REALTIME = "-realtime"


def base(anomaly: str) -> str:
    return anomaly.removesuffix(REALTIME)


def ruled_out(anomaly: str) -> frozenset[str]:
    """The levels *anomaly* rules out: a "-realtime" one only the strict
    levels (with its base's strength)."""
    levels = RULES_OUT[base(anomaly)]
    return levels & _STRICT if anomaly.endswith(REALTIME) else levels


def promised(anomaly: str, realtime: bool) -> bool:
    """Whether a ZODB storage promises never to show *anomaly* (so that
    seeing it is a violation): the snapshot-isolation ones always, their
    real-time variants and stale snapshots where the storage promises
    real-time order (*realtime*: scenarios.load.promises)."""
    if anomaly == "stale snapshot":
        return realtime
    if anomaly.endswith(REALTIME):
        return realtime and base(anomaly) in NEVER
    return anomaly in NEVER


def level(anomalies: set[str], realtime_known: bool) -> tuple[str, list[str]]:
    """(the strongest level the history satisfies, in words; the levels
    its *anomalies* rule out, strongest first).  Without real-time data
    (*realtime_known* false) nothing is called strict."""
    out: set[str] = set()
    for a in anomalies:
        out |= ruled_out(a)
    if not realtime_known:
        out |= _STRICT
    kept = [name for name in LEVELS if name not in out]
    why = "" if realtime_known else " (real time not recorded)"
    if "strict serializable" in kept:
        return "strict serializable", _ordered(out)
    if "serializable" in kept:
        return f"serializable, not strict in real time{why}", _ordered(out)
    if "strong snapshot isolation" in kept:
        return "snapshot isolation (strong: strict in real time)", _ordered(out)
    if "snapshot isolation" in kept:
        return f"snapshot isolation, not strict in real time{why}", _ordered(out)
    if "read committed" in kept:
        return "neither serializable nor snapshot isolation (read committed)", (
            _ordered(out)
        )
    return "neither serializable nor snapshot isolation", _ordered(out)


def _ordered(levels: set[str]) -> list[str]:
    return [name for name in LEVELS if name in levels]
