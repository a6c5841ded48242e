"""Each anomaly class as the shape of a cycle, and the search for the
shortest cycle of one shape inside a strongly connected component (Elle's
way, Kingsbury and Alvaro, VLDB 2020: every class on its own edge set, so
that one anomaly never hides another).

A shape is a first edge (the relations it may be taken as: WW for G0, WR
for G1c, an anti-dependency for the G-single and G2 classes), the
relations the rest of the cycle may use, a rule on the anti-dependencies
of the whole cycle, and a relation the cycle must use at least once (the
process edge of a "-process" class, the real-time edge of a "-realtime"
one).  The search runs breadth first over (node, state) pairs, the state
remembering what the rule needs (was the last edge an anti-dependency,
has one more been taken, have two been adjacent, was the needed relation
used), from the first edge's target back to its source: the cycle it
returns is a shortest through its first edge, the shortest of those
through the first edges tried (every one up to the first that has a
cycle, and IMPROVE more, each search bounded by the best so far; Elle
stops at the first).  A cycle with two consecutive anti-dependencies is
turned to start with them, so that only first edges followed by another
anti-dependency are tried.  Barrier nodes (scenarios.checker.graph) cost
nothing: a cycle's length is counted in attempts.

A closed walk that visits an attempt twice is no cycle (two cycles glued
at that attempt, each maybe of another class): the search skips it.
"""

from __future__ import annotations

import dataclasses
from collections import deque

from scenarios.checker import graph as g

#: the rules on a cycle's anti-dependencies (RW or RWC edges)
NO_ANTI = "none"  # none but the first edge's (G-single), or none at all
NONADJACENT = "nonadjacent"  # two or more, no two consecutive
ADJACENT = "adjacent"  # two or more, two of them consecutive
CURRENT = "current"  # two or more, every one named with readCurrent

#: state bits
_LAST_ANTI = 1
_MORE_ANTI = 2
_ADJACENT = 4
_NEEDED = 8
_STATES = 16


@dataclasses.dataclass(frozen=True)
class Shape:
    """A class of cycle: its *first* edge's relations, the relations of
    the *rest*, the *rule* on anti-dependencies, and a relation it must
    use (*need*, 0 for none)."""

    first: int
    rest: int
    rule: str = NO_ANTI
    need: int = 0

    def mask(self) -> int:
        return self.first | self.rest


def _initial(shape: Shape, relation: int) -> int:
    state = _LAST_ANTI if relation & g.ANTI else 0
    return state | (_NEEDED if relation & shape.need else 0)


def _step(shape: Shape, state: int, relation: int) -> int | None:
    """The state after taking an edge as *relation*, or None where the
    shape forbids it."""
    if relation & shape.need:
        state |= _NEEDED
    if not relation & g.ANTI:
        return state & ~_LAST_ANTI
    if shape.rule == NO_ANTI:
        return None
    if shape.rule == NONADJACENT and state & _LAST_ANTI:
        return None
    if state & _LAST_ANTI:
        state |= _ADJACENT
    return state | _LAST_ANTI | _MORE_ANTI


def _closes(shape: Shape, state: int, first: int) -> bool:
    """Whether a walk back at the first edge's source in *state* closes a
    cycle of *shape* (its last edge and the *first* are consecutive)."""
    if shape.need and not state & _NEEDED:
        return False
    last_anti = bool(state & _LAST_ANTI)
    first_anti = bool(first & g.ANTI)
    if shape.rule == NO_ANTI:
        return True
    if not state & _MORE_ANTI:
        return False
    if shape.rule == NONADJACENT:
        return not (last_anti and first_anti)
    if shape.rule == ADJACENT:
        return bool(state & _ADJACENT) or (last_anti and first_anti)
    return True  # CURRENT: the rest's anti-dependencies are RWC by its mask


def _relations(bits: int) -> list[int]:
    """The single relations of an edge's *bits*: an edge carrying two
    (a read that is also session order) may be taken as either."""
    return [bit for bit, _ in g.NAMES if bits & bit]


#: First edges tried after the first cycle of a shape is found, for a
#: shorter one (each search bounded by the best so far): a search from
#: every first edge of a large component costs a pass over it each.
IMPROVE = 16


def shortest(
    graph: g.Graph,
    within: set[int],
    shape: Shape,
    budget: g.Budget,
    improve: int = IMPROVE,
) -> list[g.Step] | None:
    """A shortest cycle of *shape* inside *within* through the first of
    its first edges that has one, or a shorter through the next *improve*
    first edges (0: any cycle will do, it is only counted), as Steps
    between attempts (None when there is none, or *budget* ran out: see
    budget.exhausted())."""
    best: list[g.Step] | None = None
    for component in graph.components(shape.mask(), within):
        inside = set(component)
        # v reaches u over the rest's edges only if v's component of them
        # comes no earlier than u's in Tarjan's (reverse topological) order
        rank: dict[int, int] = {}
        for k, part in enumerate(graph.components(shape.rest, inside, every=True)):
            for n in part:
                rank[n] = k
        tries = 0
        for u in component:
            if graph.barrier[u]:
                continue
            for v, bits in graph.out[u].items():
                if v not in inside or not bits & shape.first or rank[v] < rank[u]:
                    continue
                if shape.rule == ADJACENT and not _anti_out(graph, v, inside):
                    continue  # its pair of anti-dependencies starts the cycle
                for relation in _relations(bits & shape.first):
                    limit = len(best) - 1 if best is not None else len(inside)
                    found = _back(graph, inside, shape, u, v, relation, limit, budget)
                    if found is not None:
                        best = found
                    if best is not None:
                        tries += 1
                    if budget.exhausted() or tries > improve:
                        return best
                    if best is not None and len(best) == 2:
                        return best  # no cycle is shorter
    return best


def _anti_out(graph: g.Graph, v: int, inside: set[int]) -> bool:
    return any(bits & g.ANTI and w in inside for w, bits in graph.out[v].items())


def _back(
    graph: g.Graph,
    inside: set[int],
    shape: Shape,
    u: int,
    v: int,
    first: int,
    limit: int,
    budget: g.Budget,
) -> list[g.Step] | None:
    """A shortest cycle u -first-> v -> ... -> u of *shape* with at most
    *limit* edges between attempts: a 0-1 breadth-first search (edges
    leaving a barrier cost nothing)."""
    start = v * _STATES + _initial(shape, first)
    cost = {start: 1}  # edges leaving an attempt, the first one's included
    parent: dict[int, tuple[int, int]] = {}
    queue = deque([start])
    best: list[g.Step] | None = None
    while queue:
        state_id = queue.popleft()
        here = cost[state_id]
        if here > limit:
            break  # popped in order of cost: nothing shorter is left
        if not budget.spend():
            return best
        node, state = divmod(state_id, _STATES)
        # a cycle with two consecutive anti-dependencies, turned to start
        # with them: the edge after the first is the second
        opening = shape.rule == ADJACENT and state_id == start
        step_cost = 0 if graph.barrier[node] else 1
        if here + step_cost > limit:
            continue
        for w, bits in graph.out[node].items():
            if w not in inside or not bits & shape.rest:
                continue
            for relation in _relations(bits & shape.rest):
                if opening and not relation & g.ANTI:
                    continue
                after = _step(shape, state, relation)
                if after is None:
                    continue
                if w == u:
                    if _closes(shape, after, first):
                        steps = _unwind(graph, parent, state_id, relation, u, v, first)
                        if steps is not None:
                            best, limit = steps, len(steps) - 1
                    continue
                target = w * _STATES + after
                known = cost.get(target)
                if known is not None and known <= here + step_cost:
                    continue
                cost[target] = here + step_cost
                parent[target] = (state_id, relation)
                if step_cost:
                    queue.append(target)
                else:
                    queue.appendleft(target)
    return best


def _unwind(
    graph: g.Graph,
    parent: dict[int, tuple[int, int]],
    last: int,
    closing: int,
    u: int,
    v: int,
    first: int,
) -> list[g.Step] | None:
    """The cycle's Steps (barriers folded), or None when the walk visits
    an attempt twice."""
    hops: list[tuple[int, int]] = [(last // _STATES, closing)]  # (from, relation)
    state_id = last
    while state_id in parent:
        state_id, relation = parent[state_id]
        hops.append((state_id // _STATES, relation))
    hops.reverse()
    # hops[k] = (node, the relation of the edge leaving it)
    nodes = [u] + [node for node, _ in hops] + [u]
    relations = [first] + [relation for _, relation in hops]
    attempts = [n for n in nodes[:-1] if not graph.barrier[n]]
    if len(set(attempts)) != len(attempts):
        return None
    steps: list[g.Step] = []
    k = 0
    while k < len(nodes) - 1:
        j = k + 1
        while graph.barrier[nodes[j]]:
            j += 1
        steps.append(g.Step(nodes[k], relations[k], nodes[j]))
        k = j
    return steps
