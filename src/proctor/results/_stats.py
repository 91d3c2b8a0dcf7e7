"""Statistics for pass rates and paired comparisons, in pure Python (no NumPy or SciPy needed).

* `wilson_interval`: a confidence interval for a pass rate that behaves at 0/n and n/n.
* `pass_at_k`: the chance that at least one of k trials passes (the unbiased estimator of Chen et al.,
  2021); `pass_hat_k`: the chance that all k pass. These three live in `proctor.scoring` (one
  implementation for the results JSON, the console and the reports) and are re-exported here.
* `mcnemar_exact`: McNemar's exact test on paired pass/fail outcomes.
* `paired_bootstrap`: a seeded percentile-bootstrap interval on the mean of paired differences.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from proctor.scoring import pass_at_k, pass_hat_k, wilson_interval

__all__ = ["BootstrapInterval", "mcnemar_exact", "paired_bootstrap", "pass_at_k", "pass_hat_k", "wilson_interval"]


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
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
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
