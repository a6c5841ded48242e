"""The consistency check itself: a pure function of the history, the
baseline and the data read back (judge()), giving a ConsistencyReport.

It indexes the history (scenarios.checker.index), applies the rules that
need no graph (scenarios.checker.rules), builds the dependency graph and
names the anomaly of every cycle (scenarios.checker.cycles), finds stale
snapshots, and then calls a violation only what the storage promised
(scenarios.checker.anomalies, scenarios.load.promises): the rest is counted
as allowed.  The report says which isolation level the history satisfies.

The cyclic garbage collector is off while judge() runs (and back on
after): it allocates millions of objects and frees none before it
returns, and the collector's passes over them and the history were a
tenth of its time on 100,000 attempts (tools/bench_checker.py).

When the history is incomplete (a client's history was lost, or the
storage's log holds transactions of another writer), a finding such a
writer could explain is not counted as a violation: the report says what
could not be checked, and why.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Mapping

from scenarios.checker import anomalies, cycles
from scenarios.checker.index import INITIAL, Index, tid_int
from scenarios.checker.readback import FinalRead
from scenarios.checker.rules import Rules
from scenarios.checker.violations import KINDS, Baseline, ConsistencyReport, Violation
from scenarios.load.history import Event, Session

#: A transaction note of an attempt (scenarios.load.session.note).
_NOTE = re.compile(r"vfab (\S*) (\S+)#(\d+)")


def judge(
    events: Iterable[Event],
    baseline: Baseline,
    final: FinalRead,
    sessions: Mapping[str, Session] | None = None,
    lost: Mapping[str, str] | None = None,
    budget: int = cycles.SEARCH_BUDGET,
) -> ConsistencyReport:
    """The report on *final* (read after the run) against *baseline* and
    the run's history (*events* and each client's *sessions* record).
    *lost*: client-name prefix -> how to name it ("worker w3f2a1"), for
    clients whose history was lost in part (a killed locust worker)."""
    # The judgement allocates millions of small objects and frees almost
    # none until it returns: the collector's full passes over them and
    # the history found nothing to free and took a tenth of its time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _judge(events, baseline, final, sessions, lost, budget)
    finally:
        if collecting:
            gc.enable()


def _judge(
    events: Iterable[Event],
    baseline: Baseline,
    final: FinalRead,
    sessions: Mapping[str, Session] | None,
    lost: Mapping[str, str] | None,
    budget: int,
) -> ConsistencyReport:
    index = Index(events, baseline, dict(sessions or {}))
    lost = dict(lost or {})
    report = ConsistencyReport()
    tally = report.checked
    ops = {(e.client, e.n): e.op for e in index.attempts}
    for e in index.attempts:
        tally["attempts"] = tally.get("attempts", 0) + 1
        tally[e.outcome] = tally.get(e.outcome, 0) + 1
        if e.outcome == "failed" and ops.get((e.client, e.n + 1)) == e.op:
            # its client's next attempt ran the same operation: a conflict
            # retried, not an operation that failed
            tally["retried"] = tally.get("retried", 0) + 1
    found: list[Violation] = []
    foreign = _attribute_log(index, final, lost, found)
    rules = Rules(index, final)
    found += rules.run()
    tally.update(rules.tally)
    graph = cycles.find(index, budget)
    tally["nodes"], tally["edges"] = graph.nodes, graph.edges
    realtime, report.promise = _promise(index)
    for anomaly, examples in graph.cycles.items():
        count = graph.counts[anomaly]
        if anomalies.promised(anomaly, realtime):
            found += [_cycle_violation(index, c) for c in examples]
            if count > len(examples):
                found.append(
                    Violation(
                        "dependency cycle",
                        f"{count - len(examples)} more cycles showing {anomaly} "
                        "(the first are explained above)",
                        anomaly=anomaly,
                    )
                )
        else:
            report.allowed[anomaly] = count
            report.notes.append(
                f"allowed: {count} {anomaly} (first: {_cycle_text(index, examples[0])})"
            )
    if graph.stale_count:
        if anomalies.promised("stale snapshot", realtime):
            found += [_stale_violation(index, r, w) for r, w in graph.stale]
            extra = graph.stale_count - len(graph.stale)
            if extra > 0:
                found.append(
                    Violation(
                        "stale read",
                        f"{extra} more attempts began with a stale snapshot",
                        anomaly="stale snapshot",
                    )
                )
        else:
            report.allowed["stale snapshot"] = graph.stale_count
            r, w = graph.stale[0]
            report.notes.append(
                f"allowed: {graph.stale_count} stale snapshots (first: "
                f"{_stale_text(index, r, w)})"
            )
    missing: list[str] = [f"{name} lost" for name in lost.values()]
    if foreign:
        tid, text = foreign[0]
        missing.append(
            f"another writer: {len(foreign)} transaction"
            f"{'s' * (len(foreign) != 1)} since the baseline carry no attempt of "
            f"this run (first: {tid}, {text[:60]!r})"
        )
    reasons = list(missing)
    reasons += [f"could not read all of {what}" for what in final.unread]
    if graph.cut_short:
        reasons.append(
            "the cycle search was cut short (the graph's strongly connected "
            "components are counted, some not named)"
        )
    kept = found
    if missing:
        kept = [v for v in found if not v.foreign]
        report.unexplained = [v for v in found if v.foreign]
    order = {k: i for i, k in enumerate(KINDS)}
    kept.sort(key=lambda v: order[v.kind])
    report.violations = kept
    report.not_checked = reasons
    # the level from everything found (as far as the history tells it):
    # every cycle and stale snapshot, allowed or not, and the rules'
    # violations, named or by kind
    seen = dict(graph.counts)
    if graph.stale_count:
        seen["stale snapshot"] = graph.stale_count
    kinds: dict[str, int] = {}
    for v in kept:
        if v.kind in ("dependency cycle", "stale read"):
            continue  # counted above, with the examples they stand for
        tally_of = seen if v.anomaly else kinds
        key = v.anomaly or v.kind
        tally_of[key] = tally_of.get(key, 0) + 1
    report.level, report.ruled_out = anomalies.level(seen, kinds, graph.timed)
    report.needs_log = final.log is None and _wants_log(index, final, found)
    return report


def _promise(index: Index) -> tuple[bool, str]:
    """(whether every client's storage promises real-time order; why)."""
    sessions = list(index.sessions.values())
    if not sessions:
        return False, "no session records: real-time order not checked"
    whys = sorted({s.why for s in sessions})
    realtime = all(s.realtime for s in sessions)
    return realtime, "; ".join(whys)


def _attribute_log(
    index: Index, final: FinalRead, lost: Mapping[str, str], found: list[Violation]
) -> list[tuple[str, str]]:
    """Match the storage's log since the baseline with the history: a
    transaction is an acknowledged attempt's by its tid, else an attempt's
    by its note; a failed attempt's transaction in it is a phantom write
    (its abort committed), an unknown one's resolves to committed; the
    transactions of no attempt of this run are another writer's
    (returned).  A storage that keeps no notes (RelStorage history-free)
    cannot say whose the others are: as many as the attempts of unknown
    outcome could have made are theirs, the rest another writer's."""
    if final.log is None:
        return []
    runs = {s.run for s in index.sessions.values()} or {""}
    attempt_of = {(e.client, e.n): i for i, e in enumerate(index.attempts)}
    base = tid_int(index.baseline.tid) or 0
    noted = any(text for _, text in final.log)
    foreign: list[tuple[str, str]] = []
    silent: list[tuple[str, str]] = []
    for tid, text in final.log:
        if int(tid, 16) <= base or tid in index.by_tid:
            continue
        m = _NOTE.search(text)
        if m is None or m.group(1) not in runs:
            (foreign if noted else silent).append((tid, text))
            continue
        client, n = m.group(2), int(m.group(3))
        i = attempt_of.get((client, n))
        if i is None:
            if not any(client.startswith(prefix) for prefix in lost):
                foreign.append((tid, text))
            continue
        e = index.attempts[i]
        if e.outcome == "failed":
            found.append(
                Violation(
                    "phantom write",
                    f"transaction {tid} in the storage's log is {e.name}'s, whose "
                    f"commit failed ({e.error}): its abort committed",
                    (e.name,),
                    (tid,),
                    anomaly="G1a",
                )
            )
        elif e.outcome == "unknown":
            index.log_tids[i] = tid
            index.observe([i])
    unknown = sum(1 for e in index.attempts if e.outcome == "unknown" and e.writes)
    if len(silent) > unknown:
        foreign += silent
    return foreign


def _wants_log(index: Index, final: FinalRead, found: list[Violation]) -> bool:
    """Whether the storage's log could change the verdict: a finding
    another writer could explain, an unknown outcome it could resolve, or
    a stored object whose transaction no attempt was acknowledged with."""
    if any(v.foreign for v in found):
        return True
    if any(e.outcome == "unknown" and e.writes for e in index.attempts):
        return True
    base = tid_int(index.baseline.tid) or 0
    stored = [s.serial for s in final.registers.values()]
    stored += [s.serial for s in final.sequences.values()]
    return any(
        serial not in index.by_tid and int(serial, 16) > base for serial in stored
    )


def _cycle_text(index: Index, cycle: cycles.Cycle) -> str:
    names = [index.name(a) for a in cycle.attempts()] + [index.name(cycle.steps[0][0])]
    return f"{cycle.anomaly}: {' -> '.join(names)}: " + "; ".join(cycle.explained)


def _cycle_violation(index: Index, cycle: cycles.Cycle) -> Violation:
    attempts = [a for a in cycle.attempts() if a != INITIAL]
    tids = [index.tid(a) for a in attempts]
    return Violation(
        "dependency cycle",
        f"{_cycle_text(index, cycle)} ({anomalies.ruled_out_text(cycle.anomaly)})",
        tuple(index.name(a) for a in attempts),
        tuple(t for t in tids if t),
        anomaly=cycle.anomaly,
    )


def _stale_text(index: Index, reader: int, writer: int) -> str:
    e = index.attempts[reader]
    end, start = index.end(writer), index.start(reader)
    gap = "" if end is None or start is None else f"{start - end:.3f} s "
    return (
        f"{e.name} began {gap}after {index.name(writer)}'s commit "
        f"{index.tid(writer)} was acknowledged, but read at {e.snapshot}"
    )


def _stale_violation(index: Index, reader: int, writer: int) -> Violation:
    return Violation(
        "stale read",
        _stale_text(index, reader, writer),
        (index.attempts[reader].name, index.name(writer)),
        tuple(t for t in (index.tid(writer), index.attempts[reader].snapshot) if t),
        anomaly="stale snapshot",
    )
