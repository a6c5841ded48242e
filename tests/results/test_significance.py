"""scenarios.results.significance: intervals, the tests, the cell text."""

from __future__ import annotations

import math
import random

import pytest

from scenarios.results import significance as S


def noisy(rng: random.Random, n: int, cost: float, slow_share: float) -> list[float]:
    """This machine's noise (docs/results.md, "Timing on this machine"): a
    fast and a slow mode (x1.7), and
    jitter that only ever adds time."""
    return [
        cost * (1 + 0.15 * rng.random()) * (1.7 if rng.random() < slow_share else 1)
        for _ in range(n)
    ]


def test_percentile_interpolates() -> None:
    assert S.percentile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert S.percentile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0
    assert S.percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert S.percentile([5.0], 0.1) == 5.0


@pytest.mark.parametrize("name", list(S.STATISTICS))
def test_interval_contains_the_statistic_and_is_deterministic(name: str) -> None:
    values = noisy(random.Random(1), 12, 0.005, 0.4)
    iv = S.interval(values, name)
    assert iv.low <= iv.estimate <= iv.high
    assert iv.estimate == S.STATISTICS[name](values)
    assert S.interval(values, name) == iv  # fixed seed
    assert S.interval(list(reversed(values)), name) == iv
    assert iv.n == 12 and iv.known


def test_interval_of_the_minimum_starts_at_the_minimum() -> None:
    values = [5.0, 5.1, 5.3, 8.5, 8.9]
    iv = S.interval(values, "min")
    assert iv.low == 5.0 and iv.estimate == 5.0 and 5.0 < iv.high <= 8.9


def test_unknown_statistic_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="choose from min, p10, p25, median"):
        S.interval([1.0], "mean")


def test_cell_text_marks_only_wide_intervals() -> None:
    tight = [0.0123, 0.0124, 0.0125, 0.0123, 0.0126]
    assert S.cell_text(tight, "min") == "0.0123 ±0% "
    spread = [0.010, 0.017, 0.016, 0.018, 0.011]
    cell = S.cell_text(spread, "median")
    assert cell.endswith("!") and S.interval(spread, "median").wide
    assert S.cell_text([0.5]) == "0.5000 1 trial "
    assert S.cell_text([2.0, 2.0]) == "2.00 ±0% "
    ms = S.cell_text(tight, "min", fmt=lambda v: f"{v * 1e3:.1f} ms")
    assert ms == "12.3 ms ±0% "
    assert f"±{S.WIDE:.0%}" in S.legend()


def test_mann_whitney_exact_and_approximate() -> None:
    u, p = S.mann_whitney([1, 2, 3, 4], [5, 6, 7, 8])
    assert u == 0 and p == pytest.approx(2 / 70)
    assert S.mann_whitney([1, 2, 3], [4, 5, 6])[1] == pytest.approx(0.1)
    assert S.mann_whitney([5, 6, 7, 8], [1, 2, 3, 4])[1] == pytest.approx(2 / 70)
    # ties: the normal approximation; identical samples do not differ
    assert S.mann_whitney([1, 1, 1], [1, 1, 1])[1] == 1.0
    rng = random.Random(3)
    a = [rng.random() for _ in range(40)]
    b = [rng.random() + 0.5 for _ in range(40)]
    assert S.mann_whitney(a, b)[1] < 1e-6
    assert S.mann_whitney([], [1.0]) == (0.0, 1.0)


def test_permutation_p_exact_and_sampled() -> None:
    # every split of 5 + 5: the old side holding the five lowest is 2 of 252
    old, new = [1.0, 1.1, 1.2, 1.3, 1.4], [2.0, 2.1, 2.2, 2.3, 2.4]
    assert S.permutation_p(old, new, "min") == pytest.approx(2 / 252)
    # the 25th percentile (the 2nd lowest of 5) moves in 8 splits of 252
    assert S.permutation_p(old, new, "p25") == pytest.approx(8 / 252)
    assert S.permutation_p(old, old) == 1.0
    rng = random.Random(4)
    a, b = noisy(rng, 15, 1.0, 0.2), noisy(rng, 15, 2.0, 0.2)
    p = S.permutation_p(a, b)
    assert p < 0.01 and p == S.permutation_p(a, b)


@pytest.mark.parametrize("stat", list(S.STATISTICS))
def test_the_monte_carlo_test_agrees_with_the_exact_one_where_both_run(
    stat: str,
) -> None:
    """On sizes whose splits can all be tried (7 + 7: 3,432; 5 + 9: 2,002;
    4 + 11: 1,365), the sampled p-value of the same samples lies within
    4.5 standard errors of the exact one (its own sampling error, binomial
    over PERMUTATIONS splits, plus its +1), for same-code pairs and shifted
    ones, in this machine's two-mode noise; and on average it is not off
    in either direction."""
    s = S.statistic(stat)
    rng = random.Random(28)
    errors = []
    for m, n in ((7, 7), (5, 9), (4, 11)):
        assert S.exact(m, n)
        for shift in (1.0, 1.0, 1.15, 1.3, 1.6):
            old = noisy(rng, m, 1.0, 0.3)
            new = noisy(rng, n, shift, 0.3)
            exact_p = S.permutation_p(old, new, stat)
            pooled = sorted(old + new)
            tolerance = 1e-12 * pooled[-1]
            observed = abs(s(new) - s(old))
            sampled = S.sampled_p(pooled, m, observed - tolerance, s.q)
            spread = math.sqrt(exact_p * (1 - exact_p) / S.PERMUTATIONS)
            assert abs(sampled - exact_p) <= 4.5 * spread + 2 / S.PERMUTATIONS, (
                m, n, shift, exact_p, sampled,
            )  # fmt: skip
            errors.append(sampled - exact_p)
    mean = sum(errors) / len(errors)
    assert abs(mean) < 0.01, errors


def test_past_the_exact_test_the_monte_carlo_one_runs_reproducibly_and_says_so() -> (
    None
):
    rng = random.Random(6)
    old, new = noisy(rng, 500, 1.0, 0.3), noisy(rng, 500, 1.01, 0.3)
    assert not S.exact(500, 500)
    d = S.difference(old, new)
    assert d == S.difference(old, new)
    assert d.to_json()["test"] == {
        "kind": "monte carlo",
        "splits": S.PERMUTATIONS,
        "seed": S.PERMUTATION_SEED,
    }
    assert S.which_test(500, 500).startswith("Monte Carlo, 2,000 random splits")
    assert S.tests_used([d]) == "Monte Carlo: 2,000 random splits, seed 2000"
    small = S.difference([1.0, 1.1, 1.2], [1.3, 1.4, 1.5])
    assert small.to_json()["test"] == {"kind": "exact", "splits": 20}
    assert S.tests_used([small, d]).startswith("exact on 1 cell, every split; ")


def test_a_known_difference_is_significant() -> None:
    rng = random.Random(5)
    old, new = noisy(rng, 10, 0.005, 0.3), noisy(rng, 10, 0.0075, 0.3)
    d = S.difference(old, new)
    assert d.significant and d.slower and not d.faster
    assert d.ratio is not None and 1.3 < d.ratio < 1.7
    assert d.ratio_low is not None and d.ratio_low <= d.ratio <= d.ratio_high  # type: ignore[operator]
    assert d.words().endswith("x slower (+" + f"{(d.ratio - 1) * 100:.0f}%)")
    back = S.difference(new, old)
    assert back.faster and back.words().endswith("x faster (-" + back.words()[-4:])


def test_samples_of_one_distribution_mostly_do_not_differ() -> None:
    rng = random.Random(6)
    pairs = 200
    called = sum(
        S.difference(noisy(rng, 8, 0.005, 0.4), noisy(rng, 8, 0.005, 0.4)).significant
        for _ in range(pairs)
    )
    assert called <= 0.08 * pairs, called


def test_fewer_slow_trials_alone_is_not_a_difference() -> None:
    # The same code, run once when the machine was mostly fast and once when
    # it was mostly slow: the minimum has not moved.
    old = [5.0, 5.2, 5.1, 5.3, 8.6, 5.05, 5.15, 8.7]
    new = [5.1, 8.5, 8.8, 8.6, 5.02, 8.9, 8.55, 5.25]
    assert not S.difference(old, new).significant
    assert S.difference(old, new, "median").ratio > 1.3  # type: ignore[operator]


def test_ratio_words_as_pyperf_writes_them() -> None:
    assert S.ratio_words(1.25) == "1.25x slower (+25%)"
    assert S.ratio_words(0.8) == "1.25x faster (-20%)"
    assert S.ratio_words(None) == "no ratio (old value 0)"


def test_a_zero_old_value_has_no_ratio() -> None:
    d = S.difference([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0])
    assert d.ratio is None and not d.significant


def test_benjamini_hochberg() -> None:
    base = S.difference([1.0, 1.1, 1.2, 1.3, 1.4], [2.0, 2.1, 2.2, 2.3, 2.4])
    ps = [0.01, 0.04, 0.03, 0.2]
    diffs = [
        S.Difference(base.old, base.new, 2.0, 1.5, 2.5, p, p, p < 0.05) for p in ps
    ]
    adjusted = S.adjust(diffs)
    q = [d.q_value for d in adjusted]
    assert q == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    assert [d.significant for d in adjusted] == [True, False, False, False]
    assert all(not math.isnan(x) for x in q if x is not None)
