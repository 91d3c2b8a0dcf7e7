"""Aggregation: trial scores from check results, trial and case outcomes, pass rates and pass^k.

Rules (Lobu's, with its defects fixed):

* Trial score = weighted average of the scored checks of every turn (weights honoured; `error` and
  `skipped` checks are left out and counted, never scored as 0 or 1).
* With a rubric: 0.5 x assertions + 0.5 x rubric; the rubric alone when there are no scored assertions.
* A trial passes when its score >= `pass_threshold`. A trial with any `error` is `error`, not `failed`.
  A trial with nothing scored passes with a warning (no division by zero, no NaN).
* A case passes when its pass rate >= `min_pass_rate`. Errored trials are unknowns: the case is
  `passed` or `failed` only when that outcome holds whatever the errored trials would have been,
  else it is `error`.

The Go Eval Agent's confidence (the online service, `proctor.service`): `precheck_weight` x the mean
precheck score + `judge_weight` x the mean judge score, in bands: `pass` above 0.8, `review` above 0.5,
else `fail`. Checks that could not run are left out of both means, never averaged in as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from proctor.checks import CheckResult

__all__ = [
    "CaseOutcome",
    "TrialScore",
    "VerdictBand",
    "blend_confidence",
    "case_outcome",
    "mean_score",
    "pass_hat_k",
    "percentile",
    "score_trial",
    "verdict_band",
]

RUBRIC_SHARE = 0.5
"""The rubric's share of the trial score when both assertions and a rubric were scored."""

TrialStatus = Literal["passed", "failed", "error"]
CaseStatus = Literal["passed", "failed", "error"]


@dataclass(frozen=True, slots=True)
class TrialScore:
    """A trial's score and outcome."""

    score: float | None
    """0..1, or `None` when no check was scored."""
    status: TrialStatus
    """`passed`, `failed`, or `error` (a check or the conversation could not run)."""
    errored_checks: int
    """Checks with status `error`."""
    skipped_checks: int
    """Checks with status `skipped`."""
    warnings: tuple[str, ...] = ()
    """Things a reader should know, e.g. that nothing was scored."""


def _weighted(results: Iterable[CheckResult]) -> float | None:
    total = weight = 0.0
    for result in results:
        if result.score is not None:
            total += result.score * result.weight
            weight += result.weight
    return total / weight if weight > 0 else None


def score_trial(
    checks: Sequence[CheckResult], *, pass_threshold: float, conversation_error: str | None = None
) -> TrialScore:
    """Score one trial from all its check results.

    Args:
        checks: Every check result of the trial (turn checks and the rubric, whose type is `rubric`).
        pass_threshold: Minimum score for the trial to pass.
        conversation_error: Set when the conversation itself failed (target error): the trial is `error`.
    """
    errored = sum(1 for c in checks if c.status == "error")
    skipped = sum(1 for c in checks if c.status == "skipped")
    assertions = _weighted(c for c in checks if c.type != "rubric")
    rubric = _weighted(c for c in checks if c.type == "rubric")
    if assertions is not None and rubric is not None:
        score: float | None = (1 - RUBRIC_SHARE) * assertions + RUBRIC_SHARE * rubric
    else:
        score = assertions if assertions is not None else rubric
    warnings: list[str] = []
    if score is not None and not math.isfinite(score):  # defensive: never report NaN
        score = None
    if conversation_error is not None or errored:
        return TrialScore(score, "error", errored, skipped)
    if score is None:
        warnings.append(
            "no check was scored (no checks, or all skipped): the trial passes with nothing verified"
            if checks
            else "the case has no checks: the trial passes with nothing verified"
        )
        return TrialScore(None, "passed", errored, skipped, tuple(warnings))
    status: TrialStatus = "passed" if score >= pass_threshold else "failed"
    return TrialScore(score, status, errored, skipped)


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """A case's outcome over its trials."""

    status: CaseStatus
    """`passed`, `failed`, or `error` when errored trials leave the outcome undecided."""
    pass_rate: float | None
    """Passed / scored trials (errored trials excluded); `None` when every trial errored."""
    pass_k: float | None
    """pass^k with k = number of trials: the chance that k trials all pass (1 or 0 when all ran)."""


def case_outcome(statuses: Sequence[str], *, min_pass_rate: float) -> CaseOutcome:
    """Decide a case from its trials' statuses (`passed`, `failed`, `error`)."""
    n = len(statuses)
    passed = statuses.count("passed")
    failed = statuses.count("failed")
    errored = n - passed - failed
    scored = passed + failed
    pass_rate = passed / scored if scored else None
    pass_k = pass_hat_k(scored, passed, scored) if scored else None
    if n == 0 or scored == 0:
        return CaseOutcome("error", pass_rate, pass_k)
    worst, best = passed / n, (passed + errored) / n
    if worst >= min_pass_rate:
        status: CaseStatus = "passed"
    elif best < min_pass_rate:
        status = "failed"
    else:
        status = "error"
    return CaseOutcome(status, pass_rate, pass_k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the probability that k trials drawn from n (c of which passed) all pass.

    Equals C(c, k) / C(n, k); with k = n it is 1 when every trial passed, else 0.
    """
    if k <= 0 or k > n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    return math.comb(c, k) / math.comb(n, k)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation; `None` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


VerdictBand = Literal["pass", "review", "fail"]
"""A confidence band (the online service adds `error` when no judge could run)."""
PASS_ABOVE = 0.8
"""Confidence above this is `pass`."""
REVIEW_ABOVE = 0.5
"""Confidence above this (and not above `PASS_ABOVE`) is `review`; the rest is `fail`."""


def mean_score(results: Iterable[CheckResult]) -> float | None:
    """The unweighted mean of the scored results; `None` when none was scored (errors never count as 0)."""
    scores = [result.score for result in results if result.score is not None]
    return sum(scores) / len(scores) if scores else None


def blend_confidence(
    prechecks: float | None, judges: float, *, precheck_weight: float = 0.3, judge_weight: float = 0.7
) -> float:
    """The Go Eval Agent's confidence: `precheck_weight` x prechecks + `judge_weight` x judges.

    Args:
        prechecks: Mean precheck score; `None` when no precheck could be scored (the judges' mean then
            stands alone rather than counting the missing prechecks as 0).
        judges: Mean judge score.
        precheck_weight: Share of the prechecks.
        judge_weight: Share of the judges.

    Returns:
        The confidence, 0..1 when the weights sum to 1.
    """
    if prechecks is None:
        return judges
    return precheck_weight * prechecks + judge_weight * judges


def verdict_band(
    confidence: float, *, pass_above: float = PASS_ABOVE, review_above: float = REVIEW_ABOVE
) -> VerdictBand:
    """`pass` above `pass_above`, `review` above `review_above`, else `fail` (both bounds exclusive)."""
    if confidence > pass_above:
        return "pass"
    if confidence > review_above:
        return "review"
    return "fail"
