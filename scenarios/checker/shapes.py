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
at that attempt, each maybe of another class): the search skips it.  It
keeps one walk per (node, state), so where the shortest walk to a state
visits an attempt twice, a longer simple walk to it is not looked for:
a cycle can be missed that way (tests/checker/test_search.py has one).

What it costs (a broken storage's history has hundreds of components of
thousands of nodes, each searched for a dozen shapes or more): a shape
is not searched where it cannot be found (possible(): the component has
no edge to start with, none of the relation the shape must use, not two
anti-dependencies where it needs them, or no cycle at all among the
widest edges of the shape's order, shared by every class of that order);
nor in a sub-component without a first edge.  Inside the search, each
(state, edge bits) step comes from a table built once per shape (Moves).
None of this changes which cycle is found; the tests compare with and
without.
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
_STATE_BITS = 4
_STATES = 1 << _STATE_BITS


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


def _relations(bits: int) -> tuple[int, ...]:
    """The single relations of an edge's *bits*: an edge carrying two
    (a read that is also session order) may be taken as either."""
    return _RELATIONS[bits]


_RELATIONS = tuple(
    tuple(bit for bit, _ in g.NAMES if bits & bit) for bits in range(g.ALL + 1)
)

#: One row per state of a shape's search (scenarios.checker.shapes
#: Moves): for an edge's bits, the (relation, state after) it may be
#: taken as, in the order of graph.NAMES.
Row = list[tuple[tuple[int, int], ...]]


class Moves:
    """The steps *shape* allows from each state, for every edge's bits:
    _step() once per (state, bits), not once per edge of a search."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.rows: list[Row | None] = [None] * _STATES
        self.opening: list[Row | None] = [None] * _STATES

    def row(self, state: int, opening: bool = False) -> Row:
        rows = self.opening if opening else self.rows
        row = rows[state]
        if row is None:
            row = []
            for bits in range(g.ALL + 1):
                moves = []
                for relation in _RELATIONS[bits & self.shape.rest]:
                    if opening and not relation & g.ANTI:
                        continue
                    after = _step(self.shape, state, relation)
                    if after is not None:
                        moves.append((relation, after))
                row.append(tuple(moves))
            rows[state] = row
        return row


_MOVES: dict[Shape, Moves] = {}


def _moves(shape: Shape) -> Moves:
    moves = _MOVES.get(shape)
    if moves is None:
        moves = _MOVES[shape] = Moves(shape)
    return moves


#: First edges tried after the first cycle of a shape is found, for a
#: shorter one (each search bounded by the best so far): a search from
#: every first edge of a large component costs a pass over it each.
IMPROVE = 16


def possible(part: g.Part, shape: Shape) -> bool:
    """Whether *part* has the edges a cycle of *shape* needs: one to
    start with, one of the relation it must use, and, where the rule
    wants two anti-dependencies or more, one more among the rest."""
    bits = part.bits
    if not part.parts(shape.mask() | g.WW | g.WR | g.ANTI):
        # the edges of every class with this order hold no cycle: neither
        # do any fewer (one search of them, not one a class)
        return False
    if not bits & shape.first:
        return False
    if shape.need and not bits & shape.need:
        return False
    if shape.rule == NO_ANTI:
        return True
    if not bits & shape.rest & g.ANTI:
        return False
    # two adjacent ones start the search: an attempt's anti-dependency
    # to a node that has one too
    return shape.rule != ADJACENT or any(
        bits & g.ANTI and part.anti_out(v)
        for u, edges in enumerate(part.out)
        if not part.barrier[u]
        for v, bits in edges
    )


def shortest(
    part: g.Part, shape: Shape, budget: g.Budget, improve: int = IMPROVE
) -> list[g.Step] | None:
    """A shortest cycle of *shape* inside the component *part* through the
    first of its first edges that has one, or a shorter through the next
    *improve* first edges (0: any cycle will do, it is only counted), as
    Steps between attempts (None when there is none, or *budget* ran out:
    see budget.exhausted())."""
    if not possible(part, shape):
        return None  # no search would find one: spend nothing
    best: list[g.Step] | None = None
    moves = _moves(shape)
    tries = 0
    # one attempt's own order edge can lead back to it (a commit before
    # its own snapshot); other cycles hold two attempts or more
    least = 1 if shape.first & (g.SNAPSHOT | g.REALTIME) else 2
    for sub in part.parts(shape.mask()):
        if not sub.bits & shape.first:
            continue  # no first edge to try
        # v reaches u over the rest's edges only if v's component of them
        # comes no earlier than u's in Tarjan's (reverse topological) order
        rank = sub.ranks(shape.rest)
        barrier = sub.barrier
        for u, edges in enumerate(sub.out):
            if barrier[u]:
                continue
            for v, bits in edges:
                if not bits & shape.first or rank[v] < rank[u]:
                    continue
                if shape.rule == ADJACENT and not sub.anti_out(v):
                    continue  # its pair of anti-dependencies starts the cycle
                for relation in _RELATIONS[bits & shape.first]:
                    limit = len(best) - 1 if best is not None else len(sub)
                    found = _back(sub, moves, u, v, relation, limit, budget)
                    if found is not None:
                        best = found
                    if best is not None:
                        tries += 1
                    if budget.exhausted() or tries > improve:
                        return best
                    if best is not None and len(best) == least:
                        return best  # no cycle is shorter
    return best


def _back(
    part: g.Part,
    moves: Moves,
    u: int,
    v: int,
    first: int,
    limit: int,
    budget: g.Budget,
) -> list[g.Step] | None:
    """A shortest cycle u -first-> v -> ... -> u of the shape of *moves*
    with at most *limit* edges between attempts: a 0-1 breadth-first
    search (edges leaving a barrier cost nothing)."""
    shape = moves.shape
    start = v * _STATES + _initial(shape, first)
    cost = {start: 1}  # edges leaving an attempt, the first one's included
    parent: dict[int, tuple[int, int]] = {}
    queue = deque([start])
    best: list[g.Step] | None = None
    out, barrier = part.out, part.barrier
    # a cycle with two consecutive anti-dependencies, turned to start
    # with them: the edge after the first is the second
    opening = moves.row(start % _STATES, shape.rule == ADJACENT)
    rows = moves.rows
    while queue:
        state_id = queue.popleft()
        here = cost[state_id]
        if here > limit:
            break  # popped in order of cost: nothing shorter is left
        budget.left -= 1  # budget.spend(), inlined: the search's inner loop
        if budget.left < 0:
            return best
        node, state = state_id >> _STATE_BITS, state_id & (_STATES - 1)
        step_cost = 0 if barrier[node] else 1
        if here + step_cost > limit:
            continue
        if state_id == start:
            row = opening
        else:
            row = rows[state] or moves.row(state)
        reached = here + step_cost
        for w, bits in out[node]:
            for relation, after in row[bits]:
                if w == u:
                    if _closes(shape, after, first):
                        steps = _unwind(part, parent, state_id, relation, u, v, first)
                        if steps is not None:
                            best, limit = steps, len(steps) - 1
                    continue
                target = w * _STATES + after
                known = cost.get(target)
                if known is not None and known <= reached:
                    continue
                cost[target] = reached
                parent[target] = (state_id, relation)
                if step_cost:
                    queue.append(target)
                else:
                    queue.appendleft(target)
    return best


def _unwind(
    part: g.Part,
    parent: dict[int, tuple[int, int]],
    last: int,
    closing: int,
    u: int,
    v: int,
    first: int,
) -> list[g.Step] | None:
    """The cycle's Steps (barriers folded, nodes by their number in the
    Graph), or None when the walk visits an attempt twice."""
    hops: list[tuple[int, int]] = [(last // _STATES, closing)]  # (from, relation)
    state_id = last
    while state_id in parent:
        state_id, relation = parent[state_id]
        hops.append((state_id // _STATES, relation))
    hops.reverse()
    # hops[k] = (node, the relation of the edge leaving it)
    nodes = [u] + [node for node, _ in hops] + [u]
    relations = [first] + [relation for _, relation in hops]
    barrier, glob = part.barrier, part.glob
    attempts = [n for n in nodes[:-1] if not barrier[n]]
    if len(set(attempts)) != len(attempts):
        return None
    steps: list[g.Step] = []
    k = 0
    while k < len(nodes) - 1:
        j = k + 1
        while barrier[nodes[j]]:
            j += 1
        steps.append(g.Step(glob[nodes[k]], relations[k], glob[nodes[j]]))
        k = j
    return steps
