"""Statistics against known values (textbook examples and closed forms)."""

from __future__ import annotations

import math

import pytest

from proctor.results import mcnemar_exact, paired_bootstrap, pass_at_k, wilson_interval
from proctor.scoring import pass_hat_k


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),  # the classic example: Wilson 95 % for 8/10
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_interval_known_values(successes: int, n: int, low: float, high: float) -> None:
    interval = wilson_interval(successes, n)
    assert interval is not None
    assert interval[0] == pytest.approx(low, abs=1e-4)
    assert interval[1] == pytest.approx(high, abs=1e-4)


def test_wilson_interval_edges() -> None:
    assert wilson_interval(0, 0) is None
    narrow, wide = wilson_interval(8, 10, 0.80), wilson_interval(8, 10, 0.99)
    assert narrow is not None and wide is not None
    assert wide[0] < narrow[0] < 0.8 < narrow[1] < wide[1]
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 10, 1.0)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),  # pass@1 is the pass rate
        (5, 2, 2, 1 - math.comb(3, 2) / math.comb(5, 2)),  # 0.7
        (5, 0, 3, 0.0),
        (5, 3, 3, 1.0),  # fewer failures than k: some passing trial is always drawn
        (10, 1, 10, 1.0),
    ],
)
def test_pass_at_k_formula(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_hat_k_is_all_k_pass() -> None:
    assert pass_hat_k(5, 3, 2) == pytest.approx(math.comb(3, 2) / math.comb(5, 2))  # 0.3
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_hat_k(3, 2, 3) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (1, 9, 0.021484375),  # 2 x (C(10,0) + C(10,1)) / 2^10 = 2 x 11 / 1024
        (9, 1, 0.021484375),  # symmetric
        (0, 6, 0.03125),  # 2 / 2^6
        (5, 5, 1.0),
        (0, 0, 1.0),  # no discordant pairs: no evidence either way
        (3, 2, 1.0),  # capped at 1
        (12, 1, 2 * 14 / 8192),  # 0.0034
    ],
)
def test_mcnemar_exact_known_tables(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p)


def test_paired_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    differences = [-0.2, -0.1, 0.0, -0.3, 0.1, -0.2, -0.15, -0.05, -0.25, 0.05]
    first = paired_bootstrap(differences, seed=7)
    again = paired_bootstrap(differences, seed=7)
    other = paired_bootstrap(differences, seed=8)
    assert first is not None and other is not None
    assert first == again  # the same seed gives the same interval
    assert first.mean == pytest.approx(sum(differences) / len(differences))
    assert first.low < first.mean < first.high < 0  # a consistent drop: the interval is below zero
    assert (other.low, other.high) != (first.low, first.high)
    constant = paired_bootstrap([0.25] * 6)
    assert constant is not None and constant.low == constant.high == pytest.approx(0.25)
    assert paired_bootstrap([]) is None
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], resamples=0)


def test_paired_bootstrap_interval_matches_the_normal_approximation_on_a_large_sample() -> None:
    # 400 differences alternating -1/+1 around a 0.1 shift: mean 0.1, sd ~1, se ~0.05.
    differences = [0.1 + (1 if i % 2 else -1) for i in range(400)]
    interval = paired_bootstrap(differences, resamples=4000, seed=1)
    assert interval is not None
    se = math.sqrt(sum((d - 0.1) ** 2 for d in differences) / 399 / 400)
    assert interval.low == pytest.approx(0.1 - 1.96 * se, abs=0.015)
    assert interval.high == pytest.approx(0.1 + 1.96 * se, abs=0.015)
