"""The cycle search against its definition, on small histories drawn
at random (each a few attempts of checker_histories' kind):

- what the search skips (a component without an edge a class needs, or
  whose widest edge set of a class's order holds no cycle) loses
  nothing: the search without those skips reports the same, witnesses
  included;
- every witness is a simple cycle of its class (each step a relation
  its edge carries, held against the class's shape) and a shortest one,
  by a search of every simple cycle of the component, every relation of
  each edge and every rotation; every class reported has such a cycle.

Completeness is not asserted: the search keeps one walk per (attempt,
state), and where the shortest walk to a state visits an attempt twice
a longer simple one is not looked for (draw 57 of the seed below: a
G-nonadjacent-realtime through five attempts is missed).
"""

from __future__ import annotations

import itertools
import random

import pytest

from scenarios.checker import cycles, shapes
from scenarios.checker import graph as g
from scenarios.checker.graph import Step
from scenarios.checker.index import Index
from scenarios.checker.rules import Rules
from scenarios.load.clock import Clock
from scenarios.load.history import Session
from tests.support.checker_histories import BASE_TID, T, baseline, final

Found = tuple[str, list[Step]]

#: Histories tried (each a few attempts: the reference's cost grows with
#: the number of cycles).
HISTORIES = 300


def random_history(rng: random.Random) -> list[T]:
    """2 to 6 attempts of 1 to 3 clients over x, y, z: reads of any
    revision written so far, writes of the next, times and snapshots at
    random (sometimes none), now and then one that failed."""
    revisions = {"x": 0, "y": 0, "z": 0}
    clients = ["a", "b", "c"][: rng.randint(1, 3)]
    done: dict[str, int] = {}
    txns = []
    for k in range(rng.randint(2, 6)):
        client = rng.choice(clients)
        done[client] = done.get(client, 0) + 1
        reads = tuple(
            (r, rng.randint(0, revisions[r]))
            for r in rng.sample(sorted(revisions), rng.randint(0, 2))
        )
        writes = []
        for r in rng.sample(sorted(revisions), rng.randint(0, 2)):
            revisions[r] += 1
            writes.append((r, revisions[r]))
        start = rng.uniform(0.0, 6.0)
        txns.append(
            T(
                client,
                done[client],
                reads,
                tuple(writes),
                "failed" if rng.random() < 0.1 else "ok",
                start,
                start + rng.uniform(0.1, 3.0),
                rng.choice([None, rng.randint(BASE_TID, 0x18)]),
                0x10 + k if writes else None,
                tuple(r for r, _ in reads if rng.random() < 0.3),
            )
        )
    return txns


def graph_of(txns: list[T]) -> tuple[g.Graph, int]:
    """The dependency graph judge() builds for *txns*, and how many of
    its nodes are attempts (the rest are barriers)."""
    sessions = {
        t.client: Session(t.client, Clock(0.0, 0.0, "h"), "Test", True, "test", "r")
        for t in txns
    }
    index = Index([t.event() for t in txns], baseline(), sessions)
    Rules(index, final(txns)).run()  # it settles which attempts committed
    builder = cycles.Builder(index)
    return builder.build(), len(builder.attempt)


def relations(graph: g.Graph, k: int) -> list[list[int]]:
    """rel[a][b]: the relations from attempt a to attempt b, a path
    through barriers (all of one order) folded into one."""
    rel = [[0] * k for _ in range(k)]
    for a in range(k):
        for b, bits in graph.out[a].items():
            if b < k:
                rel[a][b] |= bits
        for order in (g.SNAPSHOT, g.REALTIME):
            todo = [b for b, bits in graph.out[a].items() if b >= k and bits & order]
            seen: set[int] = set()
            while todo:
                x = todo.pop()
                if x in seen:
                    continue
                seen.add(x)
                for y, bits in graph.out[x].items():
                    if bits & order:
                        if y >= k:
                            todo.append(y)
                        else:
                            rel[a][y] |= order
    return rel


def accepts(shape: shapes.Shape, rels: tuple[int, ...]) -> bool:
    """Whether a cycle taking its edges as *rels* (the first first) is of
    *shape*, by the definitions in scenarios.checker.shapes."""
    if not rels[0] & shape.first or not all(r & shape.rest for r in rels[1:]):
        return False
    if shape.need and not any(r & shape.need for r in rels):
        return False
    if shape.rule == shapes.NO_ANTI:
        return not any(r & g.ANTI for r in rels[1:])
    if not any(r & g.ANTI for r in rels[1:]):
        return False
    m = len(rels)
    adjacent = any(rels[i] & g.ANTI and rels[(i + 1) % m] & g.ANTI for i in range(m))
    if shape.rule == shapes.NONADJACENT:
        return not adjacent
    if shape.rule == shapes.ADJACENT:
        return adjacent
    return True  # CURRENT: the rest's anti-dependencies are RWC by its mask


def shortest(rel: list[list[int]], inside: frozenset[int], shape: shapes.Shape) -> int:
    """The fewest attempts on a simple cycle of *shape* inside *inside*
    (0: none), trying every cycle, relation and rotation."""
    singles = [bit for bit, _ in g.NAMES]
    for m in range(1, len(inside) + 1):
        for path in itertools.permutations(sorted(inside), m):
            if path[0] != min(path):
                continue  # one rotation of each cycle: all are tried below
            steps = [rel[path[i]][path[(i + 1) % m]] for i in range(m)]
            if not all(steps):
                continue
            choices = [[b for b in singles if bits & b] for bits in steps]
            for rels in itertools.product(*choices):
                if any(accepts(shape, rels[i:] + rels[:i]) for i in range(m)):
                    return m
    return 0


def searched(graph: g.Graph, k: int) -> dict[frozenset[int], list[Found]]:
    """Each component's attempts -> what cycles._search reports in it."""
    out = {}
    for component in graph.components():
        part = g.Part.of(graph, list(set(component)))
        found = cycles._search(part, g.Budget(10**6), set())
        out[frozenset(n for n in component if n < k)] = found
    return out


def test_what_the_search_skips_loses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(32)
    histories = [graph_of(random_history(rng)) for _ in range(HISTORIES)]
    skipping = [searched(graph, k) for graph, k in histories]
    monkeypatch.setattr(shapes, "possible", lambda part, shape: True)
    assert [searched(graph, k) for graph, k in histories] == skipping
    assert sum(bool(found) for found in skipping) > HISTORIES // 4  # cycles, often


def test_every_witness_is_a_shortest_cycle_of_its_class() -> None:
    rng = random.Random(32)
    variants = {name + suffix: shape for name, suffix, shape in cycles.shapes()}
    for _ in range(HISTORIES):
        txns = random_history(rng)
        graph, k = graph_of(txns)
        rel = relations(graph, k)
        for inside, found in searched(graph, k).items():
            for anomaly, steps in found:
                shape = variants[anomaly]
                attempts = [st.source for st in steps]
                assert len(set(attempts)) == len(attempts), (txns, anomaly)
                assert all(
                    st.target == nxt.source
                    for st, nxt in zip(steps, steps[1:] + steps[:1], strict=True)
                ), (txns, anomaly)
                assert all(rel[st.source][st.target] & st.relation for st in steps)
                assert accepts(shape, tuple(st.relation for st in steps)), (
                    txns,
                    anomaly,
                )
                assert len(steps) == shortest(rel, inside, shape), (txns, anomaly)
