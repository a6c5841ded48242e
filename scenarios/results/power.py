"""What a comparison's samples can decide at all: the smallest p-value the
permutation test can give for a number of trials, and how many trials a
side a change needs ("inconclusive", never "not significant", when too
few; docs/internals.md).
"""

from __future__ import annotations

import functools

from scenarios.results import significance
from scenarios.results.significance import ALPHA, Statistic

#: The most trials a side trials_needed() looks at.
MOST_TRIALS = 60


@functools.cache
def _attainable(m: int, n: int, stat: str) -> float:
    if m == 0 or n == 0:
        return 1.0
    old = [float(i) for i in range(m)]
    new = [float(1000 + i) for i in range(n)]
    return significance.permutation_p(old, new, stat)


def attainable_p(m: int, n: int, stat: str | Statistic) -> float:
    """The smallest p-value the permutation test of *stat* gives for *m*
    and *n* trials: that of two samples as far apart as samples go."""
    return _attainable(m, n, significance.statistic(stat).name)


def decidable(m: int, n: int, stat: str | Statistic, cells: int = 1) -> bool:
    """Whether *m* vs *n* trials can call a change that moved alone among
    *cells* cells significant at ALPHA."""
    return attainable_p(m, n, stat) * max(cells, 1) < ALPHA


@functools.cache
def _needed(stat: str, cells: int) -> int | None:
    for trials in range(2, MOST_TRIALS + 1):
        if decidable(trials, trials, stat, cells):
            return trials
    return None


def trials_needed(stat: str | Statistic, cells: int = 1) -> int | None:
    """The fewest trials a side with which a change that moved alone among
    *cells* cells can be significant; None when no number up to
    MOST_TRIALS can (the sampled test's floor, 1 / (PERMUTATIONS + 1),
    times the cells is not below ALPHA)."""
    return _needed(significance.statistic(stat).name, max(cells, 1))


def inconclusive_words(m: int, n: int, stat: str | Statistic, cells: int) -> str:
    """ "inconclusive (5 vs 5 trials; at least 8 needed)"."""
    needed = trials_needed(stat, cells)
    if needed is None:
        more = f"more than {MOST_TRIALS} needed among {cells} cells"
    else:
        more = f"at least {needed} needed"
    return f"inconclusive ({m} vs {n} trials; {more})"
