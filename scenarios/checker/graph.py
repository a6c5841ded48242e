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
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Iterator
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
        ordered = sorted(ends, key=lambda item: item[1])
        times = [t for _, t in ordered]
        barriers = [self.add(barrier=True) for _ in ordered]
        for (node, _), barrier in zip(ordered, barriers, strict=True):
            self.link(node, barrier, bits)
        for a, b in zip(barriers, barriers[1:], strict=False):
            self.link(a, b, bits)
        for node, start in starts:
            i = bisect.bisect_left(times, start - margin if margin else start) - 1
            if i >= 0:
                self.link(barriers[i], node, bits)

    def components(
        self, mask: int = ALL, within: set[int] | None = None, every: bool = False
    ) -> list[list[int]]:
        """Strongly connected components with a cycle (two nodes or more;
        with *every*, single nodes too) of the edges with a bit of *mask*,
        among the nodes *within* (all when None): Tarjan's algorithm
        without recursion.  They come in reverse topological order: a
        component reaches only components listed before it."""
        out = self.out
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        on_stack: set[int] = set()
        stack: list[int] = []
        found: list[list[int]] = []
        counter = 0
        nodes: Iterable[int] = range(len(out)) if within is None else within

        def successors(u: int) -> Iterator[int]:
            for v, bits in out[u].items():
                if bits & mask and (within is None or v in within):
                    yield v

        for root in nodes:
            if root in index:
                continue
            work = [(root, successors(root))]
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                u, it = work[-1]
                advanced = False
                for v in it:
                    if v not in index:
                        index[v] = low[v] = counter
                        counter += 1
                        stack.append(v)
                        on_stack.add(v)
                        work.append((v, successors(v)))
                        advanced = True
                        break
                    if v in on_stack and index[v] < low[u]:
                        low[u] = index[v]
                if advanced:
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    if low[u] < low[parent]:
                        low[parent] = low[u]
                if low[u] == index[u]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == u:
                            break
                    if every or len(component) > 1:
                        found.append(component)
        return found


@dataclasses.dataclass(frozen=True)
class Step:
    """One edge of a cycle between two attempts (barriers folded in): its
    relation and the attempts."""

    source: int
    relation: int
    target: int
