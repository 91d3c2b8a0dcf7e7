"""Statistics for pass rates and paired comparisons, in pure Python (no NumPy or SciPy needed).

* `wilson_interval`: a confidence interval for a pass rate that behaves at 0/n and n/n.
* `pass_at_k`: the chance that at least one of k trials passes (the unbiased estimator of Chen et al.,
  2021); `pass_hat_k`: the chance that all k pass. These three live in `proctor.scoring` (one
  implementation for the results JSON, the console and the reports) and are re-exported here.
* `mcnemar_exact`: McNemar's exact test on paired pass/fail outcomes.
* `cohen_kappa`, `kendall_tau_b`: agreement of two raters (a judge and a human) beyond chance, and the
  rank correlation of their verdicts or scores (`proctor calibrate`).
* `paired_bootstrap`: a seeded percentile-bootstrap interval on the mean of paired differences.
"""

from __future__ import annotations

import importlib
import math
import random
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from proctor.scoring import pass_at_k, pass_hat_k, wilson_interval

__all__ = [
    "BootstrapInterval",
    "cohen_kappa",
    "kendall_tau_b",
    "mcnemar_exact",
    "paired_bootstrap",
    "pass_at_k",
    "pass_hat_k",
    "tau_b_exact",
    "wilson_interval",
]


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


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items: (p_o - p_e) / (1 - p_e).

    p_o is the share of items they label alike; p_e the agreement expected by chance from each rater's
    own label frequencies (summed over the labels either used).

    Returns:
        kappa in -1..1; `None` when undefined (no items, or p_e = 1: both gave one and the same label
        to every item, so agreement beyond chance cannot be told).

    Raises:
        ValueError: The sequences differ in length.
    """
    if len(first) != len(second):
        raise ValueError(f"samples differ in length: {len(first)} and {len(second)}")
    n = len(first)
    if n == 0:
        return None
    # in integers, scaled by n^2 (one division at the end): a kappa of exactly 0.4 is 0.4, not 0.39999...
    agreed = sum(1 for a, b in zip(first, second, strict=True) if a == b)
    counts_a, counts_b = Counter(first), Counter(second)
    chance = sum(counts_a[label] * counts_b[label] for label in counts_a)
    if chance == n * n:
        return None
    return (n * agreed - chance) / (n * n - chance)


def kendall_tau_b(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's tau-b (ties corrected) of two paired samples.

    Uses `scipy.stats.kendalltau` when SciPy is installed; otherwise counts concordant and discordant
    pairs over the contingency table, which is exact and fast for few distinct values (as verdicts).

    Returns:
        tau-b in -1..1; `None` when undefined (fewer than 2 pairs, or one side constant).
    """
    if len(xs) != len(ys):
        raise ValueError(f"samples differ in length: {len(xs)} and {len(ys)}")
    n = len(xs)
    if n < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    try:
        stats = importlib.import_module("scipy.stats")  # optional: not a dependency
    except ImportError:
        return tau_b_exact(xs, ys)
    tau = float(stats.kendalltau(xs, ys)[0])
    return None if math.isnan(tau) else tau


def tau_b_exact(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's tau-b by counting pairs over the contingency table (what runs without SciPy)."""
    cells = list(Counter(zip(xs, ys, strict=True)).items())
    concordant = discordant = 0
    for (x1, y1), c1 in cells:
        for (x2, y2), c2 in cells:
            if x1 < x2:
                if y1 < y2:
                    concordant += c1 * c2
                elif y1 > y2:
                    discordant += c1 * c2
    n = len(xs)
    pairs = n * (n - 1) // 2
    ties_x = sum(c * (c - 1) // 2 for c in Counter(xs).values())
    ties_y = sum(c * (c - 1) // 2 for c in Counter(ys).values())
    denominator = math.sqrt((pairs - ties_x) * (pairs - ties_y))
    return None if denominator == 0 else (concordant - discordant) / denominator
