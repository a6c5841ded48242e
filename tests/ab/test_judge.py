"""The paired verdict (scenarios.ab.judge), on samples made here: what a
machine that drifts does to paired and to unpaired comparisons."""

from __future__ import annotations

import random

from scenarios.ab.judge import judge, judge_cell, sign_flip_p, verdict
from scenarios.ab.model import PairedCell
from scenarios.results.significance import difference


def cell(a: list[float], b: list[float], row: str = "commit processes") -> PairedCell:
    return PairedCell("rows", "file", row, tuple(a), tuple(b))


def drifting(pairs: int, factor: float, seed: int) -> tuple[list[float], list[float]]:
    """A machine whose speed moves anywhere in 1x-3x from round to round (as
    this one does, docs/ab.md); B *factor* times A; each trial 0.2% jitter."""
    rng = random.Random(seed)
    a, b = [], []
    for _ in range(pairs):
        speed = rng.uniform(1.0, 3.0)
        a.append(0.010 * speed * (1 + rng.uniform(-0.002, 0.002)))
        b.append(0.010 * factor * speed * (1 + rng.uniform(-0.002, 0.002)))
    return a, b


def test_a_change_smaller_than_the_drift_is_found_in_pairs_not_unpaired() -> None:
    a, b = drifting(12, 1.03, seed=1)
    judged = judge_cell(cell(a, b))
    assert judged.significant
    assert judged.words == "1.03x slower (+3%)"
    assert judged.low is not None and judged.high is not None
    assert 1.02 < judged.low < 1.03 < judged.high < 1.04
    # The same trials taken unpaired, as compare takes two runs: the drift
    # hides the change.
    assert not difference(a, b).significant


def test_the_same_environment_twice_is_not_significant() -> None:
    a, b = drifting(12, 1.0, seed=2)
    judged = judge_cell(cell(a, b))
    assert not judged.significant
    assert judged.words == "not significant"
    assert judged.half_width is not None and judged.half_width < 0.01


def test_too_few_pairs_are_inconclusive_not_insignificant() -> None:
    a, b = drifting(5, 1.5, seed=3)
    judged = judge_cell(cell(a, b))
    assert not judged.decidable and not judged.significant
    assert judged.words == "inconclusive (5 pairs)"
    a, b = drifting(6, 1.5, seed=3)
    assert judge_cell(cell(a, b)).words == "1.50x slower (+50%)"


def test_sign_flip_p_exact_and_sampled() -> None:
    # Every one of 6 pairs the same way: 2 sign vectors of 64 are as extreme.
    assert sign_flip_p([0.1] * 6) == 2 / 64
    assert sign_flip_p([0.1, -0.1] * 3) == 1.0
    # Above EXACT_PAIRS: random sign vectors, (hits + 1) / (FLIPS + 1).
    assert sign_flip_p([0.1] * 30) < 0.001
    assert sign_flip_p([0.1, -0.1] * 15) == 1.0


def test_cells_adjusted_together_largest_change_first() -> None:
    cells = [cell(*drifting(10, 1.0, seed=s), row=f"null {s}") for s in range(6)]
    cells.append(cell(*drifting(10, 0.8, seed=9), row="faster"))
    cells.append(cell(*drifting(10, 1.10, seed=10), row="slower"))
    judged = judge(cells)
    assert [j.cell.row for j in judged[:2]] == ["faster", "slower"]
    assert all(j.significant for j in judged[:2])
    assert not any(j.significant for j in judged[2:])
    assert all(j.q_value >= j.p_value for j in judged)
    line = verdict(judged)
    assert line.startswith("B 1 cell slower (most: file slower, 1.10x slower (+10%))")
    assert "1 cell faster (most: file faster, 1.25x faster (-20%))" in line
    assert line.endswith("6 not significant")


def test_a_cell_under_a_millisecond_is_too_short_to_compare() -> None:
    a, b = drifting(10, 2.0, seed=4)
    judged = judge_cell(cell([x / 100 for x in a], [x / 100 for x in b]))
    assert not judged.significant
    assert judged.words == "too short to compare (under 1 ms)"
    assert verdict([judged]) == (
        "no significant difference on 1 cell (1 too short to compare)"
    )


def test_a_zero_sample_has_no_ratio() -> None:
    judged = judge_cell(cell([0.0, 0.01], [0.01, 0.01]))
    assert judged.ratio is None and not judged.significant
    assert judged.words == "no ratio (a value of 0)"


def test_each_source_is_its_own_family_of_tests() -> None:
    # One micro-benchmark changed beside 30 rows that did not: adjusted
    # with the rows, its 10 pairs (p = 2/1024) would not be enough.
    cells = [cell(*drifting(10, 1.0, seed=s), row=f"row {s}") for s in range(30)]
    a, b = drifting(10, 1.2, seed=99)
    changed = PairedCell("micro", "file", "add", tuple(a), tuple(b))
    judged = {j.cell.row: j for j in judge([*cells, changed])}
    assert judged["add"].p_value == 2 / 1024
    assert judged["add"].q_value == 2 / 1024 and judged["add"].significant
    assert not any(j.significant for row, j in judged.items() if row != "add")


def test_a_micro_benchmark_is_a_median_of_rounds_not_too_short() -> None:
    a, b = drifting(10, 2.0, seed=4)
    micro = PairedCell("micro", "file", "hot read", tuple(x / 100 for x in a),
                       tuple(x / 100 for x in b))  # fmt: skip
    assert judge_cell(micro).words == "2.00x slower (+100%)"
