"""The paired verdict: each cell judged by its ratios B/A, pair by pair.

A pair is A's and B's trial k, taken in the same round (interleaved) or
at the same moment (duet), so whatever slowed the machine then slowed
both; the log of the ratio cancels it.  Per cell: the geometric mean of
the ratios (the exponential of the mean log ratio), its percentile
bootstrap interval over pairs (RESAMPLES, fixed seed), and a sign-flip
permutation test of the mean log ratio (under "no difference" each log
ratio is as likely negative as positive: every sign vector up to
EXACT_PAIRS pairs, FLIPS random ones with a fixed seed above), the
p-values adjusted across the cells of each source (Benjamini-Hochberg).  The words are
compare's: "1.25x slower (+25%)", "not significant", "inconclusive"; a
cell both sides time under SHORT_S is too short to compare, as in compare.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from scenarios.ab.model import PairedCell
from scenarios.results import arrays
from scenarios.results.formatter import plural
from scenarios.results.significance import (
    ALPHA,
    RESAMPLES,
    SEED,
    SHORT_S,
    ratio_words,
)

#: Every sign vector up to this many pairs (2**16 = 65,536 of them).
EXACT_PAIRS = 16
#: Random sign vectors above it, drawn with SEED.
FLIPS = 20_000
#: The cell sources whose values are one timing each (a phase of a trial),
#: to which the too-short rule applies.
SINGLE_TIMINGS = frozenset({"rows"})


@dataclasses.dataclass(frozen=True)
class Judged:
    """One cell judged: the geometric mean ratio B/A with its interval,
    the test's p-value and its adjusted q-value."""

    cell: PairedCell
    pairs: int
    ratio: float | None
    low: float | None
    high: float | None
    p_value: float
    q_value: float = 1.0

    @property
    def name(self) -> str:
        return f"{self.cell.column} {self.cell.row}"

    @property
    def decidable(self) -> bool:
        """Whether this many pairs can give p < ALPHA at all (the exact
        test's smallest p is 2 / 2**n: 6 pairs at least)."""
        return self.pairs > 0 and 2 / 2**self.pairs < ALPHA

    @property
    def short(self) -> bool:
        """A single timing whose median is under SHORT_S on both sides: too
        short to time well (pyperf's rule, as compare's "~"); never called
        a change.  A micro-benchmark's value is already the median of its
        rounds (the hot read's, of rounds looped to 10 ms)."""
        if self.cell.source not in SINGLE_TIMINGS:
            return False
        return (
            max(statistics.median(self.cell.a), statistics.median(self.cell.b))
            < SHORT_S
        )

    @property
    def significant(self) -> bool:
        return (
            self.decidable
            and not self.short
            and self.ratio is not None
            and self.q_value < ALPHA
            and self.ratio != 1
        )

    @property
    def half_width(self) -> float | None:
        """The interval's half-width over the ratio: 0.02 for ±2%."""
        if self.ratio is None or self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2 / self.ratio

    @property
    def words(self) -> str:
        if self.ratio is None:
            return "no ratio (a value of 0)"
        if self.short:
            return "too short to compare (under 1 ms)"
        if not self.decidable:
            return f"inconclusive ({plural(self.pairs, 'pair')})"
        return ratio_words(self.ratio) if self.significant else "not significant"

    @property
    def size(self) -> float:
        """How large the change is, either way (for ordering)."""
        return abs(math.log(self.ratio)) if self.ratio else 0.0


def judge_cell(cell: PairedCell) -> Judged:
    """*cell* judged alone (q-value = p-value until adjust())."""
    logs = [
        math.log(b / a) for a, b in zip(cell.a, cell.b, strict=True) if a > 0 and b > 0
    ]
    if not logs or len(logs) < len(cell.a):
        return Judged(cell, len(cell.a), None, None, None, 1.0, 1.0)
    numpy = arrays.numpy()
    d = numpy.asarray(logs, dtype=float)
    mean = float(d.mean())
    rng = numpy.random.default_rng(SEED)
    means = d[rng.integers(0, len(d), (RESAMPLES, len(d)))].mean(axis=1)
    low, high = (
        float(v) for v in numpy.percentile(means, [50 * ALPHA, 100 - 50 * ALPHA])
    )
    p = sign_flip_p(logs)
    return Judged(
        cell,
        len(logs),
        math.exp(mean),
        math.exp(min(low, mean)),
        math.exp(max(high, mean)),
        p,
        p,
    )


def sign_flip_p(logs: Sequence[float]) -> float:
    """Two-sided p-value of the mean of *logs* under random signs."""
    numpy = arrays.numpy()
    d = numpy.abs(numpy.asarray(logs, dtype=float))
    n = len(d)
    observed = abs(float(numpy.mean(logs))) - 1e-12 * max(float(d.max()), 1e-300)
    if n <= EXACT_PAIRS:
        codes = numpy.arange(2**n, dtype=numpy.int64)[:, None]
        signs = 1 - 2 * ((codes >> numpy.arange(n)) & 1)
        return float(numpy.mean(numpy.abs(signs @ d) / n >= observed))
    rng = numpy.random.default_rng(SEED)
    signs = rng.choice(numpy.array([-1.0, 1.0]), size=(FLIPS, n))
    hits = int(numpy.sum(numpy.abs(signs @ d) / n >= observed))
    return (hits + 1) / (FLIPS + 1)


def judge(cells: Sequence[PairedCell]) -> list[Judged]:
    """Every cell judged, q-values adjusted across the cells of each source
    (Benjamini-Hochberg; a source is one family of tests: with every cell
    of every source in one family, a change on one cell alone would need
    ever more pairs as sources are added), largest change first."""
    out = []
    for source in dict.fromkeys(c.source for c in cells):
        out += adjusted([judge_cell(c) for c in cells if c.source == source])
    return sorted(out, key=lambda j: (not j.significant, -j.size, j.name))


def adjusted(judged: list[Judged]) -> list[Judged]:
    """*judged* with Benjamini-Hochberg q-values."""
    m = len(judged)
    order = sorted(range(m), key=lambda i: judged[i].p_value, reverse=True)
    running = 1.0
    q = [1.0] * m
    for position, i in enumerate(order):
        rank = m - position
        running = min(running, judged[i].p_value * m / rank)
        q[i] = running
    return [dataclasses.replace(j, q_value=v) for j, v in zip(judged, q, strict=True)]


def verdict(judged: Sequence[Judged]) -> str:
    """The first line: what changed, in compare's words."""
    slower = [j for j in judged if j.significant and (j.ratio or 1) > 1]
    faster = [j for j in judged if j.significant and (j.ratio or 1) < 1]
    unsure = [j for j in judged if not j.decidable and not j.short]
    short = sum(j.short for j in judged)
    quiet = len(judged) - len(slower) - len(faster) - len(unsure) - short
    if not slower and not faster:
        text = f"no significant difference on {plural(len(judged), 'cell')}"
        notes = [f"{len(unsure)} inconclusive"] if unsure else []
        notes += [f"{short} too short to compare"] if short else []
        return text + (f" ({', '.join(notes)})" if notes else "")
    parts = []
    for what, group in (("slower", slower), ("faster", faster)):
        if group:
            top = group[0]
            parts.append(
                f"{plural(len(group), 'cell')} {what} (most: {top.name}, {top.words})"
            )
    parts.append(f"{quiet} not significant")
    if unsure:
        parts.append(f"{len(unsure)} inconclusive")
    if short:
        parts.append(f"{short} too short to compare")
    return "B " + ", ".join(parts)
