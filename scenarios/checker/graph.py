"""A dependency graph between transactions and its strongly connected
components (Tarjan's, iterative): the machinery of scenarios.checker.cycles,
which knows what the nodes are (scenarios.checker.shapes searches the
components for cycles of each shape).

Edges carry a bit set of relations (WW, WR, RW, RWC, PROCESS, SNAPSHOT,
REALTIME).  Two of them are interval orders ("a ended before b began", in
real time or in the storage's commit order), which relate every pair of
attempts far enough apart: n**2 edges if drawn directly.  They are drawn
through *barrier* nodes instead, one per end, chained in time order: a
reaches b through barriers exactly when a ended before b began, with 2n
edges (Elle draws the transitive reduction instead, which still grows with
the concurrency).  A cycle found through barriers is reported with each
barrier path folded into one edge of its relation.

Cost: a history of n attempts makes about 3n nodes and 10n edges (100,000
attempts: 277,000 and 920,000), held as one dict per node.  Tarjan's
algorithm runs once over all of them (on lists and the dicts' own
iterators: a clean history has no component, and this pass is all its
search costs).  Each component with a cycle then becomes a Part, a graph
of its own with its nodes renumbered and its edges as lists; every class
searched in it (a dozen or more) asks the Part for its sub-components
under one edge mask, and each mask's are computed once, whichever class
asks.  The order of roots and successors is kept throughout: it decides
which of several equally short cycles a search meets first.
"""

from __future__ import annotations

import bisect
import dataclasses
import operator
from collections.abc import Iterable, Sequence
from typing import Any

#: write-write: b wrote the version after a's of some register
WW = 1
#: write-read: b read a version a wrote
WR = 2
#: read-write (anti-dependency): a read a version, b wrote the next one
RW = 4
#: the same, where a named its read with readCurrent
RWC = 8
#: session order: a and b are one client's, a first
PROCESS = 16
#: start order in the storage's commit order: a's commit (or, for a
#: read-only attempt, its snapshot) precedes b's snapshot
SNAPSHOT = 32
#: real time: a ended before b began
REALTIME = 64

ALL = WW | WR | RW | RWC | PROCESS | SNAPSHOT | REALTIME
ANTI = RW | RWC

#: Names of the relations, for explanations (and the order an edge's
#: relations are tried in).
NAMES = (
    (WW, "ww"),
    (WR, "wr"),
    (PROCESS, "process"),
    (SNAPSHOT, "snapshot"),
    (REALTIME, "realtime"),
    (RWC, "rw (readCurrent)"),
    (RW, "rw"),
)


def name_of(bit: int) -> str:
    return next(name for b, name in NAMES if b == bit)


class Budget:
    """Work a cycle search may still do (nodes visited), shared by every
    search of one check; exhausted() once spent."""

    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self, n: int = 1) -> bool:
        self.left -= n
        return self.left >= 0

    def exhausted(self) -> bool:
        return self.left < 0


class Graph:
    """Nodes 0..n-1 (attempts first, then barriers), out[u] = {v: bits}."""

    def __init__(self) -> None:
        self.out: list[dict[int, int]] = []
        self.barrier: list[bool] = []

    def __len__(self) -> int:
        return len(self.out)

    def add(self, barrier: bool = False) -> int:
        self.out.append({})
        self.barrier.append(barrier)
        return len(self.out) - 1

    def grow(self, n: int) -> None:
        """Add *n* nodes that are no barriers."""
        self.out.extend({} for _ in range(n))
        self.barrier.extend([False] * n)

    def link(self, u: int, v: int, bits: int) -> None:
        if u != v:
            edges = self.out[u]
            edges[v] = edges.get(v, 0) | bits

    def interval_order(
        self,
        ends: Iterable[tuple[int, Any]],
        starts: Iterable[tuple[int, Any]],
        bits: int,
        margin: float = 0.0,
    ) -> None:
        """Draw *bits* from every node of *ends* (node, its end) to every
        node of *starts* (node, its start) that began more than *margin*
        after that end (ends and starts compare with each other: numbers,
        or tuples with margin 0), through one barrier per end."""
        ordered = sorted(ends, key=operator.itemgetter(1))
        times = [t for _, t in ordered]
        out = self.out
        first = len(out)
        # the barriers are new: their edges need no merging
        out.extend({first + k + 1: bits} for k in range(len(ordered)))
        if ordered:
            out[-1].clear()
        self.barrier.extend([True] * len(ordered))
        for barrier, (node, _) in enumerate(ordered, first):
            out[node][barrier] = bits
        bisect_left = bisect.bisect_left
        for node, start in starts:
            i = bisect_left(times, start - margin if margin else start) - 1
            if i >= 0:
                edges = out[first + i]
                edges[node] = edges.get(node, 0) | bits

    def components(self) -> list[list[int]]:
        """The strongly connected components with a cycle, of every edge
        (see tarjan())."""
        return tarjan(self.out, range(len(self.out)))


def tarjan(
    succ: Sequence[Iterable[int]], roots: Iterable[int], every: bool = False
) -> list[list[int]]:
    """Strongly connected components with a cycle (two nodes or more;
    with *every*, single nodes too) of the graph whose node u's successors
    are succ[u] (nodes 0..len(succ)-1), searched from *roots* in their
    order: Tarjan's algorithm without recursion.  They come in reverse
    topological order: a component reaches only components listed before
    it.  The order of roots and successors decides the order of the
    components and of their nodes (and so which cycle a search finds
    first): keep both when changing a caller."""
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    found: list[list[int]] = []
    counter = 0
    for root in roots:
        if index[root] >= 0:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, iter(succ[root]))]
        while work:
            u, it = work[-1]
            for v in it:
                if index[v] < 0:
                    index[v] = low[v] = counter
                    counter += 1
                    stack.append(v)
                    on_stack[v] = True
                    work.append((v, iter(succ[v])))
                    break
                if on_stack[v] and index[v] < low[u]:
                    low[u] = index[v]
            else:  # u's successors are all done
                work.pop()
                if work:
                    parent = work[-1][0]
                    if low[u] < low[parent]:
                        low[parent] = low[u]
                if low[u] != index[u]:
                    continue
                if stack[-1] == u:  # a single node: the common case
                    stack.pop()
                    on_stack[u] = False
                    if every:
                        found.append([u])
                    continue
                component = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    component.append(w)
                    if w == u:
                        break
                found.append(component)
    return found


class Part:
    """A strongly connected component as a graph of its own: its nodes
    renumbered 0..m-1 (*glob* gives each one's number in the Graph), its
    edges as lists of (node, bits), *bits* the union of its edges' bits.
    The searches of every anomaly class share one Part, and its
    components under each mask (parts(), ranks()) are computed once."""

    def __init__(
        self, glob: list[int], barrier: list[bool], out: list[list[tuple[int, int]]]
    ) -> None:
        self.glob = glob
        self.barrier = barrier
        self.out = out
        self.bits = 0
        for edges in out:
            for _, bits in edges:
                self.bits |= bits
        self._parts: dict[int, list[Part]] = {}
        self._ranks: dict[int, list[int]] = {}
        self._anti: list[bool] | None = None

    @classmethod
    def of(cls, graph: Graph, nodes: list[int]) -> Part:
        """The Part of *nodes* of *graph* (in that order: the order of the
        roots of its searches), with the edges between them."""
        pos = {x: k for k, x in enumerate(nodes)}
        out = []
        for x in nodes:
            edges = []
            for v, bits in graph.out[x].items():
                k = pos.get(v)
                if k is not None:
                    edges.append((k, bits))
            out.append(edges)
        return cls(nodes, [graph.barrier[x] for x in nodes], out)

    def __len__(self) -> int:
        return len(self.out)

    def parts(self, mask: int) -> list[Part]:
        """The strongly connected components with a cycle of the edges
        with a bit of *mask*, each a Part of those edges (in tarjan()'s
        order, roots in this Part's order)."""
        key = mask & self.bits  # masks that keep the same edges agree
        found = self._parts.get(key)
        if found is None:
            succ = [[v for v, bits in edges if bits & key] for edges in self.out]
            found = [self._sub(c, key) for c in tarjan(succ, range(len(succ)))]
            self._parts[key] = found
        return found

    def _sub(self, nodes: list[int], mask: int) -> Part:
        pos = [-1] * len(self.out)
        for k, x in enumerate(nodes):
            pos[x] = k
        mine = self.out
        out = [
            [(pos[v], bits) for v, bits in mine[x] if bits & mask and pos[v] >= 0]
            for x in nodes
        ]
        glob = self.glob
        return Part([glob[x] for x in nodes], [self.barrier[x] for x in nodes], out)

    def ranks(self, mask: int) -> list[int]:
        """Each node's component of the edges with a bit of *mask* (single
        nodes included), numbered in tarjan()'s reverse topological order:
        v reaches u over those edges only if rank[v] >= rank[u].  The
        roots are taken in the order of a set of the Graph's numbers, as
        the search always took them (the order decides the numbering,
        and with it which fruitless searches are skipped)."""
        key = mask & self.bits
        rank = self._ranks.get(key)
        if rank is None:
            rank = [0] * len(self.out)
            if key != self.bits:  # else every edge is kept: one component
                pos = {x: k for k, x in enumerate(self.glob)}
                succ = [[v for v, bits in edges if bits & key] for edges in self.out]
                roots = [pos[x] for x in set(self.glob)]
                for k, part in enumerate(tarjan(succ, roots, every=True)):
                    for x in part:
                        rank[x] = k
            self._ranks[key] = rank
        return rank

    def anti_out(self, v: int) -> bool:
        """Whether node *v* has an anti-dependency edge (in this Part)."""
        if self._anti is None:
            self._anti = [any(bits & ANTI for _, bits in edges) for edges in self.out]
        return self._anti[v]


@dataclasses.dataclass(frozen=True)
class Step:
    """One edge of a cycle between two attempts (barriers folded in): its
    relation and the attempts."""

    source: int
    relation: int
    target: int
