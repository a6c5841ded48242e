"""The anomalies the checker names, the isolation levels each one rules
out, and which of them a ZODB storage promises never to show (Adya's
phenomena as Elle names them; docs/consistency.md has the table).

A cycle's anomaly follows from its edges (scenarios.checker.cycles searches
each class on its own): only write-write edges: G0; with a write-read
edge: G1c; exactly one read-write (anti-dependency) edge: G-single; two or
more, none consecutive: G-nonadjacent; two consecutive: G2-item.  Each
again with session edges ("-process": the history may still be
serializable, only not strong-session) and with real-time edges
("-realtime": only not strict).  Order edges alone (a snapshot older than
one before it): "non-monotonic snapshot".  G1a (a read of an aborted
write), G1b (a read of an intermediate one), a dirty update (a write built
on an aborted one), a lost update (two committed read-modify-writes of one
version), a read skew no cycle pins (a stock audit whose sum moved) and a
stale snapshot (a transaction that began after a commit was acknowledged
and does not see it) are found without cycles.

The levels form a lattice: read uncommitted < read committed < snapshot
isolation < serializable, each plain, strong-session (a session's order
respected) or strong in real time (strict serializable; strong snapshot
isolation ...), the real-time form above the session one.
"""

from __future__ import annotations

#: The base levels, strongest first.
BASES = ("serializable", "snapshot isolation", "read committed", "read uncommitted")
#: The qualifiers, strongest first: real-time order, session order, none.
STRICT, SESSION, PLAIN = "strict", "strong-session", ""
QUALIFIERS = (STRICT, SESSION, PLAIN)

REALTIME = "-realtime"
PROCESS = "-process"

#: anomaly (without its suffix) -> the weakest base level it rules out
#: (with every level above it)
WEAKEST: dict[str, str] = {
    "G0": "read uncommitted",
    "G1a": "read committed",
    "G1b": "read committed",
    "G1c": "read committed",
    "dirty update": "read committed",
    "G-single": "snapshot isolation",
    "G-nonadjacent": "snapshot isolation",
    "lost update": "snapshot isolation",
    "read skew": "snapshot isolation",
    # A snapshot older than one before it in a session (or in real time).
    "non-monotonic snapshot": "snapshot isolation",
    "G2-item": "serializable",
    # A write skew whose reads were all named with readCurrent: ZODB
    # promises it cannot commit (each readCurrent is checked at commit).
    "G2-item (readCurrent)": "serializable",
    # Began after a commit was acknowledged, and its snapshot misses it:
    # real-time order broken (as a "-realtime" anomaly).
    "stale snapshot": "snapshot isolation",
}

#: Violations without an anomaly's name, by kind: the weakest level each
#: contradicts.  A lost or invented write, a record that cannot be
#: loaded, fields nobody wrote, an index or a BTree out of step: no
#: execution of the run's transactions, at any level, reads back that.
KIND_WEAKEST: dict[str, str] = {
    "lost write": "read uncommitted",
    "lost record": "read uncommitted",
    "phantom write": "read uncommitted",
    "corrupt value": "read uncommitted",
    "index drift": "read uncommitted",
    "invalid data": "read uncommitted",
    "inconsistent read": "read uncommitted",
    "lost update": "snapshot isolation",
    "stale read": "snapshot isolation",
    "dependency cycle": "read uncommitted",
}

#: What every ZODB storage promises never to show: snapshot isolation
#: with first-committer-wins, readCurrent's reads serializable, and a
#: session that sees its own commits (so their "-process" forms too).
NEVER = frozenset(
    {
        "G0",
        "G1a",
        "G1b",
        "G1c",
        "dirty update",
        "G-single",
        "G-nonadjacent",
        "lost update",
        "read skew",
        "G2-item (readCurrent)",
        "non-monotonic snapshot",
    }
)


def base(anomaly: str) -> str:
    return anomaly.removesuffix(REALTIME).removesuffix(PROCESS)


def suffix(anomaly: str) -> str:
    if anomaly == "stale snapshot" or anomaly.endswith(REALTIME):
        return REALTIME
    return PROCESS if anomaly.endswith(PROCESS) else ""


def name(level: str, qualifier: str) -> str:
    """A level's name: "strict serializable", "strong snapshot isolation",
    "strong-session read committed", "serializable"..."""
    if qualifier == STRICT:
        return "strict serializable" if level == "serializable" else f"strong {level}"
    return f"{qualifier} {level}" if qualifier else level


#: Every level, strongest first.
LEVELS = tuple(name(b, q) for b in BASES for q in QUALIFIERS)


def _below_or_at(level: str) -> list[str]:
    """The base levels at or above *level* (the ones an anomaly at
    *level* rules out)."""
    return list(BASES[: BASES.index(level) + 1])


def ruled_out(anomaly: str, weakest: str | None = None) -> frozenset[str]:
    """The levels *anomaly* rules out: its base level and those above;
    a "-process" one only their strong-session and strict forms, a
    "-realtime" one only their strict forms.  *weakest*: the base level,
    for a violation named by its kind."""
    level = weakest or WEAKEST[base(anomaly)]
    kept = {
        REALTIME: (STRICT,),
        PROCESS: (STRICT, SESSION),
        "": QUALIFIERS,
    }[suffix(anomaly) if weakest is None else ""]
    return frozenset(name(b, q) for b in _below_or_at(level) for q in kept)


def ruled_out_text(anomaly: str) -> str:
    """What *anomaly* rules out, in words: the weakest level and "every
    level above" (stronger base levels, stronger qualifiers)."""
    qualifier = {"": PLAIN, PROCESS: SESSION, REALTIME: STRICT}[suffix(anomaly)]
    weakest = name(WEAKEST[base(anomaly)], qualifier)
    if weakest == "strict serializable":
        return "rules out strict serializable"
    if weakest == "read uncommitted":
        return "rules out every level"
    return f"rules out {weakest} and every level above"


def promised(anomaly: str, realtime: bool) -> bool:
    """Whether a ZODB storage promises never to show *anomaly* (so that
    seeing it is a violation): the snapshot-isolation ones always, with
    session edges too; their real-time forms and stale snapshots where
    the storage promises real-time order (*realtime*:
    scenarios.load.promises)."""
    if anomaly == "stale snapshot":
        return realtime
    if anomaly.endswith(REALTIME):
        return realtime and base(anomaly) in NEVER
    return base(anomaly) in NEVER


def level(
    seen: dict[str, int], kinds: dict[str, int], realtime_known: bool
) -> tuple[str, list[str]]:
    """(the strongest level the history satisfies, stated with what rules
    out the next one up: "serializable; not strong-session (2
    G-single-process)"; every level ruled out, strongest first).  *seen*:
    anomaly -> how many; *kinds*: violations without an anomaly's name,
    kind -> how many.  Without real-time data (*realtime_known* false)
    nothing is called strict."""
    why: dict[str, list[str]] = {}  # level -> what rules it out
    for anomaly, n in sorted(seen.items()):
        for lv in ruled_out(anomaly):
            why.setdefault(lv, []).append(f"{n} {anomaly}")
    for kind, n in sorted(kinds.items()):
        for lv in ruled_out(kind, KIND_WEAKEST.get(kind, "read uncommitted")):
            why.setdefault(lv, []).append(f"{n} {kind}")
    out = [lv for lv in LEVELS if lv in why]
    if not realtime_known:
        out += [name(b, STRICT) for b in BASES if name(b, STRICT) not in why]
        out = [lv for lv in LEVELS if lv in out]
    held = next((b for b in BASES if name(b, PLAIN) not in why), None)
    if held is None:
        return (
            f"no isolation level; not read uncommitted ({_list(why, LEVELS[-1])})",
            out,
        )
    qualifier = next(q for q in QUALIFIERS if name(held, q) not in out)
    parts = [name(held, qualifier)]
    if qualifier != STRICT:
        up = QUALIFIERS[QUALIFIERS.index(qualifier) - 1]
        upper = name(held, up)
        if upper in why:
            parts.append(
                f"not {'strict' if up == STRICT else up} ({_list(why, upper)})"
            )
        else:
            parts.append("real time not recorded")
    if held != BASES[0]:
        above = BASES[BASES.index(held) - 1]
        parts.append(f"not {above} ({_list(why, name(above, PLAIN))})")
    return "; ".join(parts), out


def _list(why: dict[str, list[str]], level: str) -> str:
    return ", ".join(why[level])
