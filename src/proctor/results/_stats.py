"""Statistics for pass rates and paired comparisons, in pure Python (no NumPy or SciPy needed).

* `wilson_interval`: a confidence interval for a pass rate that behaves at 0/n and n/n.
* `pass_at_k`: the chance that at least one of k trials passes (the unbiased estimator of Chen et al.,
  2021); `pass_hat_k` (from `proctor.scoring`): the chance that all k pass.
* `mcnemar_exact`: McNemar's exact test on paired pass/fail outcomes.
* `paired_bootstrap`: a seeded percentile-bootstrap interval on the mean of paired differences.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from proctor.scoring import pass_hat_k

__all__ = ["BootstrapInterval", "mcnemar_exact", "paired_bootstrap", "pass_at_k", "pass_hat_k", "wilson_interval"]


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    from statistics import NormalDist  # on first use: `statistics` costs ~10 ms to import

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion of `successes` out of `n`.

    Unlike the normal ("Wald") interval it stays inside 0..1 and is not zero-width at 0/n or n/n,
    which matters with the handful of trials an agent eval has.

    Returns:
        `(low, high)`, or `None` when `n` is 0.

    Raises:
        ValueError: `successes` is outside 0..n, or `confidence` outside (0, 1).
    """
    if n == 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..{n}, got {successes}")
    z = _z(confidence)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k: the probability that at least one of k trials drawn from n (c of which passed) passes.

    Equals 1 - C(n - c, k) / C(n, k) (Chen et al., 2021); with k = 1 it is the pass rate c / n.

    Raises:
        ValueError: `k` is outside 1..n or `c` outside 0..n.
    """
    if k <= 0 or k > n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"c must be in 0..{n}, got {c}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided p-value of McNemar's exact test.

    Args:
        b: Pairs where the first run passed and the second failed.
        c: Pairs where the first run failed and the second passed.

    Returns:
        The probability, if neither run is better, of a split of the `b + c` discordant pairs at least
        as lopsided as the one seen (twice the smaller binomial tail with p = 1/2, capped at 1). It is 1
        when there are no discordant pairs.
    """
    if b < 0 or c < 0:
        raise ValueError(f"counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / (1 << n)
    return min(1.0, 2 * tail)


@dataclass(frozen=True, slots=True)
class BootstrapInterval:
    """A bootstrap confidence interval for a mean difference."""

    mean: float
    """The observed mean difference."""
    low: float
    """Lower bound."""
    high: float
    """Upper bound."""
    n: int
    """How many paired differences it rests on."""
    confidence: float
    """The interval's confidence level."""
    resamples: int
    """Bootstrap resamples drawn."""


def paired_bootstrap(
    differences: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> BootstrapInterval | None:
    """Percentile-bootstrap interval for the mean of paired differences (e.g. per-case score B - A).

    Resampling is over the pairs (cases), so trials of one case move together. The same `seed` gives
    the same interval.

    Returns:
        The interval, or `None` for no differences.
    """
    _z(confidence)  # validates it
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    n = len(differences)
    if n == 0:
        return None
    values = list(differences)
    mean = math.fsum(values) / n
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    alpha = 1 - confidence
    low = means[max(0, math.floor(alpha / 2 * resamples))]
    high = means[min(resamples - 1, math.ceil((1 - alpha / 2) * resamples) - 1)]
    return BootstrapInterval(mean, low, high, n, confidence, resamples)
