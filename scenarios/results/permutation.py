"""The permutation test's two forms, for scenarios.results.significance:
every split of the pooled samples where there are at most EXACT_SPLITS,
else PERMUTATIONS random ones drawn with PERMUTATION_SEED (Monte Carlo:
the same samples, the same p-value, on any machine with the same numpy).

Both take the pooled samples sorted and count the splits into m and the
rest whose statistics differ by at least a bound; the caller gives the
bound (the observed difference less a rounding tolerance) and the
statistic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

from scenarios.results import arrays

#: Every split up to this many, else PERMUTATIONS random ones drawn with
#: PERMUTATION_SEED (numpy's generator).
EXACT_SPLITS = 5000
PERMUTATIONS = 2000
PERMUTATION_SEED = 2000
#: Values of pooled samples held at once while splits are drawn (memory).
SPLIT_BLOCK = 2_000_000


def exact(m: int, n: int) -> bool:
    """Whether the permutation test of *m* and *n* samples tries every split
    (else it draws PERMUTATIONS of them)."""
    return math.comb(m + n, m) <= EXACT_SPLITS


def which_test(m: int, n: int) -> str:
    """Which permutation test *m* against *n* samples get, in words."""
    if exact(m, n):
        return f"exact, every one of the {math.comb(m + n, m):,} splits"
    return (
        f"Monte Carlo, {PERMUTATIONS:,} random splits of the "
        f"{m + n:,} samples, seed {PERMUTATION_SEED}"
    )


def exact_p(
    pooled: Sequence[float],
    m: int,
    at_least: float,
    of_sorted: Callable[[Sequence[float]], float],
) -> float:
    """The share of every split of the sorted *pooled* samples into m and
    the rest whose statistics (*of_sorted*) differ by at least *at_least*."""
    as_large = total = 0
    everything = range(len(pooled))
    for chosen in itertools.combinations(everything, m):
        picked = set(chosen)
        a = [pooled[i] for i in chosen]
        b = [pooled[i] for i in everything if i not in picked]
        total += 1
        if abs(of_sorted(b) - of_sorted(a)) >= at_least:
            as_large += 1
    return as_large / total


def sampled_p(
    pooled: Sequence[float],
    m: int,
    at_least: float,
    q: float,
    splits: int = PERMUTATIONS,
    seed: int = PERMUTATION_SEED,
) -> float:
    """The Monte Carlo p-value: (the random splits of the sorted *pooled*
    samples into m and the rest whose q-quantiles differ by at least
    *at_least*, + 1) / (*splits* + 1), the splits drawn with *seed*.

    A split is a row of m marks among the pooled positions, shuffled; since
    the samples are sorted, the k-th marked position holds the k-th
    smallest sample of the first group (the k-th unmarked one, of the
    second), so a quantile of each group needs no sorting.  Rows are drawn
    in blocks of at most SPLIT_BLOCK values, in order: the same draws
    whatever the block."""
    numpy = arrays.numpy()

    values = numpy.asarray(pooled, dtype=float)
    total = len(values)
    n = total - m
    rng = numpy.random.default_rng(seed)
    row = numpy.zeros(total, dtype=bool)
    row[:m] = True
    positions = numpy.arange(1, total + 1)
    per_block = max(1, SPLIT_BLOCK // total)
    as_large = 0
    done = 0
    while done < splits:
        rows = min(per_block, splits - done)
        marks = rng.permuted(numpy.broadcast_to(row, (rows, total)), axis=1)
        first = numpy.cumsum(marks, axis=1)
        second = positions - first
        a = _quantiles(values, first, m, q)
        b = _quantiles(values, second, n, q)
        as_large += int(numpy.count_nonzero(numpy.abs(b - a) >= at_least))
        done += rows
    return (as_large + 1) / (splits + 1)


def _quantiles(values: Any, counts: Any, size: int, q: float) -> Any:
    """Per row, the q-quantile (significance.percentile's interpolation) of
    the *size* samples of *values* (sorted) a row's running *counts* mark:
    the k-th smallest is where the count first reaches k + 1."""
    numpy = arrays.numpy()

    h = (size - 1) * q
    lo = math.floor(h)

    def kth(k: int) -> Any:
        return values[numpy.argmax(counts >= k + 1, axis=1)]

    low = kth(lo)
    if h == lo:
        return low
    return low + (h - lo) * (kth(lo + 1) - low)
