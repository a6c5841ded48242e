"""The dependency graph of a history and the anomalies in its cycles, as
Elle finds them (scenarios.checker.graph has the machinery): which attempts
depend on which, every cycle named, explained step by step, with the
attempts and transactions on it.

The nodes are the committed attempts and the state before the run (the
baseline: it wrote every register's first version).  The edges:

- ww: b wrote the version of a register after the one a wrote;
- wr: b read a version a wrote;
- rw: a read a version, b wrote the next one (rw (readCurrent) when a
  named that read with readCurrent and committed);
- process: a and b are one client's, a first (a session sees its own
  commits);
- snapshot: a's commit (a read-only a: its snapshot) is in b's snapshot,
  by transaction ids (the storage's own order; Adya's start-dependency);
- realtime: a ended before b began, on the clients' shared clock, by more
  than the clocks' uncertainty.

A stale snapshot (b began after a's commit was acknowledged and its
snapshot does not hold it) needs no cycle and is found apart.
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Any

from scenarios.checker import graph as g
from scenarios.checker import shapes as sh
from scenarios.checker.anomalies import PROCESS, REALTIME
from scenarios.checker.index import INITIAL, Index
from scenarios.load.history import Access

#: Steps of cycle search (nodes visited) one check may spend: about a
#: second or two of Python; beyond, the check says the search was cut short.
SEARCH_BUDGET = 3_000_000

#: Cycles explained in words per anomaly (the rest are counted).
EXAMPLES = 3

#: Clocks this uncertain (seconds) order nothing in real time: the history
#: is then not called strict (a locust worker whose offset was not
#: measured says 1e9).
UNORDERED_S = 60.0


@dataclasses.dataclass(frozen=True)
class Cycle:
    """One cycle: its anomaly, its steps (attempts by index, INITIAL for
    the baseline) and each step explained."""

    anomaly: str
    steps: tuple[tuple[int, int, int], ...]  # (source, relation, target)
    explained: tuple[str, ...]

    def attempts(self) -> list[int]:
        return [s for s, _, _ in self.steps]


@dataclasses.dataclass
class Found:
    """What the graph showed: cycles per anomaly (the first EXAMPLES of
    each explained), stale snapshots, the graph's size, and whether the
    search was cut short."""

    cycles: dict[str, list[Cycle]] = dataclasses.field(default_factory=dict)
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    stale: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    stale_count: int = 0
    nodes: int = 0
    edges: int = 0
    cut_short: bool = False
    #: real time was recorded (every committed attempt has its times)
    timed: bool = False


class Builder:
    """The graph of *index*: attempts as nodes 0..k-1, then barriers.
    Each node's times and transaction ids are read once (the edges of
    both orders and the stale snapshots use them)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.graph = g.Graph()
        #: node -> attempt (INITIAL for the baseline)
        self.attempt: list[int] = [INITIAL, *sorted(index.committed)]
        self.node: dict[int, int] = {i: n for n, i in enumerate(self.attempt)}
        self.graph.grow(len(self.attempt))
        #: per node: start and end on the shared clock, the transaction
        #: that committed it, the snapshot it read at (as numbers), and
        #: whether it wrote (the baseline wrote every first version)
        places = index.places(self.attempt)
        self.start, self.end, self.tid = places.start, places.end, places.tid
        self.snapshot, self.writer = places.snapshot, places.writer

    def build(self) -> g.Graph:
        self._data()
        self._process()
        self._snapshot()
        self._realtime()
        return self.graph

    def _data(self) -> None:
        index, node, out = self.index, self.node, self.graph.out
        committed = index.committed
        ww, wr = g.WW, g.WR
        #: register -> (its committed revisions in order, their writers)
        versions: dict[Any, tuple[list[int], list[list[int]]]] = {}
        for register, revs in index.writes.items():
            order: list[tuple[int, list[int]]] = []
            if register[0] != "sequence":
                base = index.baseline.registers.get(register)
                if base is not None:
                    order.append((base[0], [INITIAL]))
            for r in sorted(revs):
                made = [i for i, _ in revs[r] if i in committed]
                if made:
                    order.append((r, made))
            versions[register] = ([r for r, _ in order], [w for _, w in order])
            for (_, before), (_, after) in zip(order, order[1:], strict=False):
                for a in before:
                    edges, na = out[node[a]], node[a]
                    for b in after:
                        nb = node[b]
                        if nb != na:  # (Graph.link, inlined: a million edges)
                            edges[nb] = edges.get(nb, 0) | ww
        #: read -> (the nodes of its version's writers, of the next
        #: version's): many reads are alike
        placed: dict[Access, tuple[list[int], list[int]]] = {}
        for i in committed:
            e = index.attempts[i]
            committed_writer = bool(e.writes)
            ni = node[i]
            mine = out[ni]
            for read in e.reads:
                if read.kind == "stock total":
                    continue
                known = placed.get(read)
                if known is None:
                    known = placed[read] = self._place(read, versions)
                for nw in known[0]:
                    if nw != ni:  # (Graph.link, inlined: a million edges)
                        edges = out[nw]
                        edges[ni] = edges.get(ni, 0) | wr
                if known[1]:
                    bits = g.RWC if read.current and committed_writer else g.RW
                    for nw in known[1]:
                        if nw != ni:
                            mine[nw] = mine.get(nw, 0) | bits

    def _place(
        self, read: Access, versions: dict[Any, tuple[list[int], list[list[int]]]]
    ) -> tuple[list[int], list[int]]:
        """The nodes that wrote the version *read* saw (wr edges from
        them), and those that wrote the next version (rw edges to them)."""
        source = self.index.source(read)
        if source.kind == "initial":
            writers: tuple[int, ...] = (INITIAL,)
        elif source.kind in ("written", "intermediate"):
            # an intermediate version is its writer's too (G1b, which a
            # rule reports, and the edges it makes)
            writers = source.writers
        else:
            return [], []  # a rule reports it; its place is not known
        node = self.node
        revisions, writers_of = versions.get((read.kind, read.key), ([], []))
        k = bisect.bisect_right(revisions, read.revision)
        # the next version is another writer's (the writer's own later
        # versions are the one read, for what follows it)
        while (
            k < len(revisions)
            and writers_of[k][0] in writers
            and all(w in writers for w in writers_of[k])
        ):
            k += 1
        after = [node[w] for w in writers_of[k]] if k < len(revisions) else []
        return [node[w] for w in writers if w in node], after

    def _process(self) -> None:
        node = self.node
        for attempts in self.index.by_client.values():
            mine = [node[i] for i in attempts if i in node]
            for a, b in zip(mine, mine[1:], strict=False):
                self.graph.link(a, b, g.PROCESS)

    def _snapshot(self) -> None:
        """Start order by transaction ids: a commit ends at its tid (a
        read-only attempt at its snapshot, after the commits it holds),
        an attempt begins at its snapshot (as numbers: tid * 4 + 0, 2 or
        1, in that order for one tid)."""
        ends: list[tuple[int, int]] = []
        starts: list[tuple[int, int]] = []
        for n, (tid, snap, writer) in enumerate(
            zip(self.tid, self.snapshot, self.writer, strict=True)
        ):
            if writer:
                if tid is not None:
                    ends.append((n, tid * 4))
            elif snap is not None:
                ends.append((n, snap * 4 + 2))
            if snap is not None:  # (never the baseline's)
                starts.append((n, snap * 4 + 1))
        self.graph.interval_order(ends, starts, g.SNAPSHOT)

    def _realtime(self) -> None:
        ends = [(n, t) for n, t in enumerate(self.end) if t is not None]
        starts = [(n, t) for n, t in enumerate(self.start) if t is not None]
        self.graph.interval_order(ends, starts, g.REALTIME, self.index.margin)

    def timed(self) -> bool:
        """Real time was recorded: every acknowledged attempt has its
        start and end."""
        attempts = self.index.attempts
        return all(
            self.start[n] is not None and self.end[n] is not None
            for n in range(1, len(self.attempt))
            if attempts[self.attempt[n]].outcome == "ok"
        )

    def stale_snapshots(self) -> tuple[list[tuple[int, int]], int]:
        """(the first EXAMPLES (reader, writer) pairs where the reader
        began after the writer's commit was acknowledged and its snapshot
        does not hold that commit; how many readers)."""
        writers = [
            (end, tid, i)
            for i, tid, end, writer in zip(
                self.attempt, self.tid, self.end, self.writer, strict=True
            )
            if tid is not None and end is not None and writer
        ]
        writers.sort()
        times = [end for end, _, _ in writers]
        best: list[tuple[int, int]] = []  # prefix: (highest tid, its writer)
        for _, tid, i in writers:
            best.append(max(best[-1], (tid, i)) if best else (tid, i))
        examples: list[tuple[int, int]] = []
        count = 0
        margin = self.index.margin
        for n in range(1, len(self.attempt)):
            start, snap = self.start[n], self.snapshot[n]
            if start is None or snap is None:
                continue
            k = bisect.bisect_left(times, start - margin) - 1
            if k >= 0 and best[k][0] > snap:
                count += 1
                if len(examples) < EXAMPLES:
                    examples.append((self.attempt[n], best[k][1]))
        return examples, count


#: The anomaly classes, each the shape of its cycle without session or
#: real-time edges (scenarios.checker.shapes): the storage's own commit
#: order (snapshot edges) is part of every level; session order makes
#: "-process", real time "-realtime".
DATA = g.WW | g.WR
_CLASSES = (
    ("G0", sh.Shape(g.WW, g.WW)),
    ("G1c", sh.Shape(g.WR, DATA)),
    ("G-single", sh.Shape(g.ANTI, DATA)),
    ("G-nonadjacent", sh.Shape(g.ANTI, DATA | g.ANTI, sh.NONADJACENT)),
    ("G2-item (readCurrent)", sh.Shape(g.RWC, DATA | g.RWC, sh.CURRENT)),
    ("G2-item", sh.Shape(g.ANTI, DATA | g.ANTI, sh.ADJACENT)),
    # order edges alone: a snapshot older than one before it
    ("non-monotonic snapshot", sh.Shape(g.SNAPSHOT | g.PROCESS | g.REALTIME, 0)),
)
#: suffix -> (the order edges the cycle may use, the one it must use)
_ORDERS = (
    ("", g.SNAPSHOT, 0),
    (PROCESS, g.SNAPSHOT | g.PROCESS, g.PROCESS),
    (REALTIME, g.SNAPSHOT | g.PROCESS | g.REALTIME, g.REALTIME),
)


def shapes() -> list[tuple[str, str, sh.Shape]]:
    """(class, suffix, shape) of every search, the weaker variants of a
    class after the stronger."""
    out = []
    for name, shape in _CLASSES:
        for suffix, order, need in _ORDERS:
            first = shape.first & (g.ALL & ~(g.SNAPSHOT | g.PROCESS | g.REALTIME))
            if not first:  # order edges alone
                first = order
            if name == "non-monotonic snapshot" and not need:
                need = g.SNAPSHOT
            out.append(
                (name, suffix, sh.Shape(first, shape.rest | order, shape.rule, need))
            )
    return out


_SHAPES = shapes()


def _search(
    part: g.Part, budget: g.Budget, shown: set[str]
) -> list[tuple[str, list[g.Step]]]:
    """Every class's shortest cycle in the component *part* (a class's
    weaker variant skipped where a stronger one was found: it rules out
    nothing more; any cycle of the anomalies *shown* EXAMPLES times
    already: it is only counted)."""
    found: list[tuple[str, list[g.Step]]] = []
    have: set[str] = set()
    for name, suffix, shape in _SHAPES:
        if name in have:
            continue
        improve = 0 if name + suffix in shown else sh.IMPROVE
        cycle = sh.shortest(part, shape, budget, improve)
        if cycle is not None:
            found.append((name + suffix, cycle))
            have.add(name)
        if budget.exhausted():
            break
    return found


def find(index: Index, budget_steps: int = SEARCH_BUDGET) -> Found:
    """Every anomaly the graph of *index* shows (see Found)."""
    builder = Builder(index)
    graph = builder.build()
    found = Found()
    found.nodes = len(builder.attempt)
    found.edges = sum(map(len, graph.out))
    found.timed = (
        bool(index.committed) and index.margin < UNORDERED_S and builder.timed()
    )
    found.stale, found.stale_count = builder.stale_snapshots()
    budget = g.Budget(budget_steps)
    for component in graph.components():
        # its nodes in the order of a set of them: the order the search
        # has always taken its roots in (and so found the same cycles)
        part = g.Part.of(graph, list(set(component)))
        shown = {a for a, examples in found.cycles.items() if len(examples) >= EXAMPLES}
        for anomaly, cycle in _search(part, budget, shown):
            found.counts[anomaly] = found.counts.get(anomaly, 0) + 1
            examples = found.cycles.setdefault(anomaly, [])
            if len(examples) < EXAMPLES:
                steps = _rotated(
                    [
                        (
                            builder.attempt[st.source],
                            st.relation,
                            builder.attempt[st.target],
                        )
                        for st in cycle
                    ]
                )
                examples.append(
                    Cycle(anomaly, steps, tuple(explain(index, st) for st in steps))
                )
        if budget.exhausted():
            found.cut_short = True
            break
    return found


def _rotated(steps: list[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    """The cycle *steps* from its first attempt in the history's order
    (by client and attempt number; the baseline last), so that one cycle
    always reads the same."""
    first = min(range(len(steps)), key=lambda k: (steps[k][0] == INITIAL, steps[k][0]))
    return tuple(steps[first:] + steps[:first])


def explain(index: Index, step: tuple[int, int, int]) -> str:
    """Why attempt a precedes b on one edge of a cycle, in words."""
    a, relation, b = step
    name_a, name_b = index.name(a), index.name(b)
    if relation == g.PROCESS:
        return f"{name_a} ran before {name_b} in the same session"
    if relation == g.SNAPSHOT:
        what = (
            f"committed as {index.tid(a)}"
            if index.writes_anything(a)
            else f"read at {index.attempts[a].snapshot}"
        )
        return (
            f"{name_a} {what}, and {name_b}'s snapshot "
            f"{index.attempts[b].snapshot} is later"
        )
    if relation == g.REALTIME:
        end, start = index.end(a), index.start(b)
        gap = "" if end is None or start is None else f" {start - end:.3f} s"
        return f"{name_a} was acknowledged{gap} before {name_b} began"
    writes_a = _accesses(index, a, writes=True)
    reads_b = _accesses(index, b, writes=False)
    writes_b = _accesses(index, b, writes=True)
    if relation == g.WW:
        for register, rev in writes_a.items():
            if register in writes_b and writes_b[register] > rev:
                return (
                    f"{name_a} wrote {_reg(register)} revision {rev} and {name_b} "
                    f"the next one, revision {writes_b[register]}"
                )
    if relation == g.WR:
        for register, rev in writes_a.items():
            if reads_b.get(register) == rev:
                return (
                    f"{name_b} read {_reg(register)} revision {rev}, which "
                    f"{name_a} wrote"
                )
    if relation & g.ANTI:
        reads_a = _accesses(index, a, writes=False)
        for register, rev in reads_a.items():
            if register in writes_b and writes_b[register] > rev:
                how = " with readCurrent" if relation == g.RWC else ""
                return (
                    f"{name_a} read {_reg(register)} revision {rev}{how}, and "
                    f"{name_b} wrote a later one, revision {writes_b[register]}"
                )
    return f"{name_a} precedes {name_b} ({g.name_of(relation)})"


def _accesses(index: Index, i: int, writes: bool) -> dict[Any, int]:
    if i == INITIAL:
        if not writes:
            return {}
        return {r: v[0] for r, v in index.baseline.registers.items()}
    e = index.attempts[i]
    return {(a.kind, a.key): a.revision for a in (e.writes if writes else e.reads)}


def _reg(register: Any) -> str:
    kind, key = register
    if kind == "price":
        return f"capability {key}'s price"
    if kind == "stock":
        return f"lab {key}'s stock"
    return f"sequence {key}"
