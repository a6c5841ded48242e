"""Statistics for timings on a noisy machine: the statistic a table shows
with its bootstrap interval, and whether two sets of raw samples differ (a
permutation test of that statistic: every split up to EXACT_SPLITS, the
Monte Carlo form with a fixed seed above, scenarios.results.permutation;
p-values adjusted across the cells).  Why these, and what was measured to
choose them: docs/internals.md.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from scenarios.results import arrays
from scenarios.results.formatter import seconds

# The test's two forms, re-exported: significance is where callers look.
from scenarios.results.permutation import EXACT_SPLITS as EXACT_SPLITS
from scenarios.results.permutation import PERMUTATION_SEED as PERMUTATION_SEED
from scenarios.results.permutation import PERMUTATIONS as PERMUTATIONS
from scenarios.results.permutation import exact as exact
from scenarios.results.permutation import exact_p as exact_p
from scenarios.results.permutation import sampled_p as sampled_p
from scenarios.results.permutation import which_test as which_test
from vfab.codec import Derived, Json

#: Two-sided level of the tests, and 1 - confidence of every interval.
ALPHA = 0.05
#: Bootstrap resamples per interval.
RESAMPLES = 2000
#: The bootstrap's seed: the same samples always give the same interval.
SEED = 2000
#: A cell is marked "!" when its interval's half-width is above this share of
#: the statistic: differences smaller than that cannot be told apart there.
WIDE = 0.10
#: A value under this is too short to compare between runs (pyperf's rule).
SHORT_S = 0.001
#: Exact U distribution up to this many samples on either side (beyond it,
#: and with ties, the normal approximation, which is good there).
EXACT_MAX = 30


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) of sorted values, linear interpolation
    between closest ranks (numpy's default)."""
    if not ordered:
        raise ValueError("no values")
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    if h == lo:
        return ordered[lo]
    return ordered[lo] + (h - lo) * (ordered[lo + 1] - ordered[lo])


@dataclasses.dataclass(frozen=True)
class Statistic:
    """A quantile of the samples (the minimum is the 0-quantile): its short
    name, its name in prose and q."""

    name: str
    label: str
    q: float

    def of_sorted(self, ordered: Sequence[float]) -> float:
        return percentile(ordered, self.q)

    def __call__(self, values: Sequence[float]) -> float:
        return self.of_sorted(sorted(values))


#: name -> statistic, lowest first; DEFAULT_STATISTIC is the one shown.
STATISTICS: dict[str, Statistic] = {
    s.name: s
    for s in (
        Statistic("min", "minimum", 0.0),
        Statistic("p10", "10th percentile", 0.10),
        Statistic("p25", "25th percentile", 0.25),
        Statistic("median", "median", 0.50),
    )
}
DEFAULT_STATISTIC = "min"


def statistic(name: str | Statistic) -> Statistic:
    """The statistic called *name*; ValueError listing the known ones."""
    if isinstance(name, Statistic):
        return name
    try:
        return STATISTICS[name]
    except KeyError:
        raise ValueError(
            f"unknown statistic {name!r}; choose from {', '.join(STATISTICS)}"
        ) from None


def recorded(metadata: Mapping[str, object]) -> str:
    """The statistic a file's run chose (its metadata's config), or the
    default for files that did not say."""
    config = metadata.get("config")
    name = config.get("statistic") if isinstance(config, Mapping) else None
    return name if isinstance(name, str) and name in STATISTICS else DEFAULT_STATISTIC


def _resampled(
    ordered: Sequence[float], stat: Statistic, seed: int = SEED
) -> list[float]:
    """*stat* of RESAMPLES bootstrap resamples of *ordered*, in resample
    order (numpy's generator with a fixed seed: the same samples, the same
    interval; a report's few hundred cells take milliseconds, not seconds)."""
    numpy = arrays.numpy()

    n = len(ordered)
    rng = numpy.random.default_rng(seed)
    rows = numpy.asarray(ordered, dtype=float)[rng.integers(0, n, (RESAMPLES, n))]
    rows.sort(axis=1)
    h = (n - 1) * stat.q
    lo = math.floor(h)
    column = rows[:, lo]
    if h > lo:
        column = column + (h - lo) * (rows[:, lo + 1] - column)
    return [float(v) for v in column]


@dataclasses.dataclass(frozen=True)
class Interval(Json):
    """A statistic of n samples and its bootstrap interval [low, high].

    With one sample there is no interval (low == high == estimate and
    *known* is False).  The interval of the minimum is one-sided by nature:
    low is the minimum itself, high says how far the next-lowest samples
    lie.
    """

    statistic: str
    estimate: float
    low: float
    high: float
    n: int
    confidence: float = 1 - ALPHA

    @property
    def known(self) -> bool:
        return self.n > 1

    @property
    def relative_half_width(self) -> float | None:
        """(high - low) / 2 over the estimate; None with one sample."""
        if not self.known:
            return None
        half = (self.high - self.low) / 2
        if half == 0:
            return 0.0
        return half / self.estimate if self.estimate > 0 else math.inf

    @property
    def wide(self) -> bool:
        rel = self.relative_half_width
        return rel is not None and rel > WIDE


def interval(
    values: Sequence[float], stat: str | Statistic = DEFAULT_STATISTIC
) -> Interval:
    """*stat* of *values* with its percentile bootstrap interval at
    1 - ALPHA (fixed seed: reproducible)."""
    s = statistic(stat)
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    estimate = s.of_sorted(ordered)
    if len(ordered) == 1 or ordered[0] == ordered[-1]:
        return Interval(s.name, estimate, estimate, estimate, len(ordered))
    boot = sorted(_resampled(ordered, s))
    return Interval(
        s.name,
        estimate,
        min(estimate, percentile(boot, ALPHA / 2)),
        max(estimate, percentile(boot, 1 - ALPHA / 2)),
        len(ordered),
    )


def cell_text(
    values: Sequence[float],
    stat: str | Statistic = DEFAULT_STATISTIC,
    fmt: Callable[[float], str] = seconds,
) -> str:
    """A table cell: the statistic and its interval's relative half-width,
    e.g. "0.0123 ±3% "; "!" instead of the trailing space where the interval
    is wide (above WIDE), "1 trial" with one sample (no interval)."""
    iv = interval(values, stat)
    rel = iv.relative_half_width
    if rel is None:
        return f"{fmt(iv.estimate)} 1 trial "
    width = "inf" if math.isinf(rel) else f"{rel * 100:.0f}"
    return f"{fmt(iv.estimate)} ±{width}%" + ("!" if iv.wide else " ")


def legend(stat: str | Statistic = DEFAULT_STATISTIC) -> str:
    """One sentence explaining cell_text's cells."""
    s = statistic(stat)
    return (
        f"A time cell is the {s.label} over the trials; ± is half the width of "
        f"its {1 - ALPHA:.0%} bootstrap interval as % of it; ! marks an "
        f"interval wider than ±{WIDE:.0%} (differences smaller than that "
        'cannot be told apart there); a single trial has no interval ("1 trial").'
    )


# -- two samples ---------------------------------------------------------------


def _ranks(pooled: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) of *pooled*, and the sizes of its tie groups."""
    order = sorted(range(len(pooled)), key=pooled.__getitem__)
    ranks = [0.0] * len(pooled)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


@functools.cache
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """counts[u]: orderings of m and n distinct values whose U statistic (of
    the m side) is u.  f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u)."""
    if m == 0 or n == 0:
        return (1,)
    a, b = _u_counts(m - 1, n), _u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(a):
        out[u + n] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """(U of *a*, two-sided p-value) of the Mann-Whitney U test: do a and b
    come from one distribution?  p is 1 when either side is empty."""
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        return 0.0, 1.0
    ranks, ties = _ranks([*a, *b])
    u = sum(ranks[:m]) - m * (m + 1) / 2
    if not ties and max(m, n) <= EXACT_MAX:
        counts = _u_counts(m, n)
        k = int(round(min(u, m * n - u)))
        tail = sum(counts[: k + 1]) / sum(counts)
        return u, min(1.0, 2 * tail)
    total = m + n
    tie_term = sum(t**3 - t for t in ties) / (total * (total - 1))
    sigma = math.sqrt(m * n / 12 * ((total + 1) - tie_term))
    if sigma == 0:
        return u, 1.0
    z = max(0.0, abs(u - m * n / 2) - 0.5) / sigma
    return u, math.erfc(z / math.sqrt(2))


@dataclasses.dataclass(frozen=True)
class Difference(Derived):
    """How *new* compares with *old*: the ratio new/old of the statistic with
    its bootstrap interval, the permutation test's p-value (the verdict),
    and the Mann-Whitney U test's (whole distributions, for reference).

    ratio is None when the old statistic is 0 (no ratio to form)."""

    old: Interval
    new: Interval
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    p_value: float
    u_p_value: float
    significant: bool
    #: p_value adjusted for the other cells compared with it (adjust), which
    #: then decides *significant*; None when compared alone.
    q_value: float | None = None
    #: The permutation test that gave p_value: every split (exact), or
    #: PERMUTATIONS random ones drawn with PERMUTATION_SEED.
    exact: bool = True

    @property
    def slower(self) -> bool:
        return self.significant and self.ratio is not None and self.ratio > 1

    @property
    def faster(self) -> bool:
        return self.significant and self.ratio is not None and self.ratio < 1

    @property
    def change(self) -> float | None:
        """ratio - 1: +0.25 for 25% slower, -0.2 for 20% faster."""
        return None if self.ratio is None else self.ratio - 1

    def words(self) -> str:
        """pyperf's words: "1.25x slower (+25%)", "1.25x faster (-20%)"."""
        return ratio_words(self.ratio)

    #: Its JSON (codec.derived): the fields, which test gave p_value in
    #: "test" rather than *exact*.
    JSON_SKIP: ClassVar[tuple[str, ...]] = ("exact",)
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("test",)

    @property
    def test(self) -> dict[str, object]:
        """The permutation test, as the JSON records it."""
        m, n = self.old.n, self.new.n
        if self.exact:
            return {"kind": "exact", "splits": math.comb(m + n, m)}
        return {"kind": "monte carlo", "splits": PERMUTATIONS, "seed": PERMUTATION_SEED}


def ratio_words(ratio: float | None) -> str:
    if ratio is None:
        return "no ratio (old value 0)"
    if ratio == 1:
        return "1.00x (no change)"
    if ratio > 1:
        return f"{ratio:.2f}x slower (+{(ratio - 1) * 100:.0f}%)"
    if ratio == 0:
        return "no ratio (new value 0)"
    return f"{1 / ratio:.2f}x faster (-{(1 - ratio) * 100:.0f}%)"


def permutation_p(
    old: Sequence[float],
    new: Sequence[float],
    stat: str | Statistic = DEFAULT_STATISTIC,
) -> float:
    """Two-sided p-value of |stat(new) - stat(old)| over the splits of the
    pooled samples into groups of the same sizes (see the module docstring):
    every split where exact(), else PERMUTATIONS random ones
    (scenarios.results.permutation)."""
    s = statistic(stat)
    m, n = len(old), len(new)
    if m == 0 or n == 0:
        return 1.0
    pooled = sorted([*old, *new])
    observed = abs(s(new) - s(old))
    # Sums and differences of floats: allow for rounding when comparing.
    tolerance = 1e-12 * max(abs(pooled[0]), abs(pooled[-1]), 1e-300)
    if exact(m, n):
        return exact_p(pooled, m, observed - tolerance, s.of_sorted)
    return sampled_p(pooled, m, observed - tolerance, s.q)


def difference(
    old: Sequence[float],
    new: Sequence[float],
    stat: str | Statistic = DEFAULT_STATISTIC,
) -> Difference:
    """Compare two cells' raw samples (see the module docstring)."""
    s = statistic(stat)
    old_iv, new_iv = interval(old, s), interval(new, s)
    _, u_p = mann_whitney(old, new)
    p = permutation_p(old, new, s)
    whole = exact(len(old), len(new))
    if old_iv.estimate <= 0:
        return Difference(old_iv, new_iv, None, None, None, p, u_p, False, exact=whole)
    ratio = new_iv.estimate / old_iv.estimate
    ratios = sorted(
        numerator / denominator if denominator > 0 else math.inf
        for denominator, numerator in zip(
            _resampled(sorted(old), s, SEED),
            _resampled(sorted(new), s, SEED + 1),
            strict=True,
        )
    )
    low = min(ratio, percentile(ratios, ALPHA / 2))
    high = max(ratio, percentile(ratios, 1 - ALPHA / 2))
    significant = p < ALPHA and ratio != 1
    return Difference(
        old_iv, new_iv, ratio, low, high, p, u_p, significant, exact=whole
    )


def tests_used(differences: Sequence[Difference]) -> str:
    """Which permutation tests gave *differences*' p-values, in words:
    "exact" or "Monte Carlo: 2,000 random splits, seed 2000", and on how
    many cells each when both."""
    exact_cells = sum(d.exact for d in differences)
    sampled = len(differences) - exact_cells
    monte_carlo = (
        f"Monte Carlo: {PERMUTATIONS:,} random splits, seed {PERMUTATION_SEED}"
    )
    if not sampled:
        return "exact: every split"
    if not exact_cells:
        return monte_carlo
    return (
        f"exact on {exact_cells} cell{'s' * (exact_cells != 1)}, every split; "
        f"{monte_carlo} on {sampled}"
    )


def adjust(differences: Sequence[Difference]) -> list[Difference]:
    """*differences* with Benjamini-Hochberg q-values, significant where
    q < ALPHA: the cells of one comparison, tested together."""
    m = len(differences)
    order = sorted(range(m), key=lambda i: differences[i].p_value)
    q = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, differences[i].p_value * m / rank)
        q[i] = running
    return [
        dataclasses.replace(
            d,
            q_value=q[i],
            significant=q[i] < ALPHA and d.ratio is not None and d.ratio != 1,
        )
        for i, d in enumerate(differences)
    ]
