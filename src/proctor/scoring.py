"""Aggregation: trial scores from check results, trial and case outcomes, pass rates and pass^k.

Rules (Lobu's, with its defects fixed):

* Trial score = weighted average of the scored checks of every turn (weights honoured; `error` and
  `skipped` checks are left out and counted, never scored as 0 or 1).
* With a rubric: 0.5 x assertions + 0.5 x rubric; the rubric alone when there are no scored assertions.
* A trial passes when its score >= `pass_threshold`. A trial with any `error` is `error`, not `failed`.
  A trial with nothing scored (no checks, all skipped, or only weight 0) is `skipped` with the reason
  (e.g. no judge model configured): nothing unchecked passes, and there is no division by zero or NaN.
* `strict` (promptfoo's semantics): any failed check fails its trial, whatever the score.
* A case passes when its pass rate >= `min_pass_rate`. Errored trials are unknowns: the case is
  `passed` or `failed` only when that outcome holds whatever the errored trials would have been,
  else it is `error`. A case whose every trial was skipped is `skipped`.
* An error budget (`--max-errors N|RATE`) stops a run once more trials errored than it allows.
* Statistics over the n scored trials of a case, c of them passed (`pass_statistics`): pass@k =
  1 - C(n-c, k) / C(n, k) (at least one of k passes; Chen et al., 2021), pass^k = C(c, k) / C(n, k)
  (all k pass; tau-bench), both the unbiased estimators from n >= k trials, and the 95 % Wilson score
  interval of the pass rate c / n.

The Go Eval Agent's confidence (the online service, `proctor.service`): `precheck_weight` x the mean
precheck score + `judge_weight` x the mean judge score, in bands: `pass` above 0.8, `review` above 0.5,
else `fail`. Checks that could not run are left out of both means, never averaged in as 0.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from proctor._slots import slot_init
from proctor.checks import CheckResult

__all__ = [
    "ERROR_BUDGET_EXCEEDED",
    "CaseOutcome",
    "Composite",
    "ErrorBudget",
    "ErrorLimit",
    "PassStatistics",
    "RunningStat",
    "TrialScore",
    "VerdictBand",
    "arm_status",
    "blend_confidence",
    "case_outcome",
    "composite_score",
    "early_exit",
    "mean_score",
    "nothing_scored_reason",
    "parse_error_limit",
    "pass_at_k",
    "pass_hat_k",
    "pass_statistics",
    "percentile",
    "score_trial",
    "timing_score",
    "verdict_band",
    "weighted_score",
    "wilson_interval",
]

RUBRIC_SHARE = 0.5
"""The rubric's share of the trial score when both assertions and a rubric were scored."""

TrialStatus = Literal["passed", "failed", "error", "skipped"]
CaseStatus = Literal["passed", "failed", "error", "inconclusive", "skipped", "incomplete"]
"""Every case status. `case_outcome` decides a case from its trials and never gives `incomplete`: a case is
that when the run stopped before all its planned trials ran (`results._aggregate.incomplete_case`)."""


@slot_init  # one per trial: built ~3x sooner than by the frozen dataclass's own `__init__`
@dataclass(frozen=True, slots=True)
class TrialScore:
    """A trial's score and outcome."""

    score: float | None
    """0..1, or `None` when no check was scored."""
    status: TrialStatus
    """`passed`, `failed`, `error` (a check or the conversation could not run), or `skipped` (nothing was
    scored: see `reason`)."""
    errored_checks: int
    """Checks with status `error`."""
    skipped_checks: int
    """Checks with status `skipped`."""
    warnings: tuple[str, ...] = ()
    """Things a reader should know, e.g. that `strict` failed a trial whose score passed."""
    reason: str | None = None
    """Why the trial is `skipped` (nothing was scored); `None` otherwise."""


def weighted_score(results: Iterable[CheckResult]) -> float | None:
    """The weighted mean score of the scored results (`error`/`skipped` left out); `None` when none scored."""
    total = weight = 0.0
    for result in results:
        if result.score is not None:
            total += result.score * result.weight
            weight += result.weight
    return total / weight if weight > 0 else None


def nothing_scored_reason(checks: Sequence[CheckResult]) -> str:
    """Why a trial with no scored check verified nothing.

    No checks, every check skipped (with their reasons), or only checks of weight 0.
    """
    if not checks:
        return "nothing was scored: the case has no checks"
    skipped = [c for c in checks if c.status == "skipped"]
    if len(skipped) == len(checks):
        reasons = "; ".join(dict.fromkeys(c.reason for c in skipped if c.reason)) or "no reason given"
        noun = "check was" if len(skipped) == 1 else "checks were"
        return f"nothing was scored: {len(skipped)} {noun} skipped ({reasons})"
    return "nothing was scored: every check that ran has weight 0"


def score_trial(
    checks: Sequence[CheckResult],
    *,
    pass_threshold: float,
    conversation_error: str | None = None,
    strict: bool = False,
) -> TrialScore:
    """Score one trial from all its check results.

    Args:
        checks: Every check result of the trial (turn checks and the rubric, whose type is `rubric`).
        pass_threshold: Minimum score for the trial to pass.
        conversation_error: Set when the conversation itself failed (target error): the trial is `error`.
        strict: Any `failed` check fails the trial, whatever its score (promptfoo's semantics).

    Returns:
        The score and status: `error` when a check errored or the conversation failed, `skipped` (with the
        reason) when nothing was scored, else `passed` or `failed`.
    """
    errored = skipped = 0
    total = weight = rubric_total = rubric_weight = 0.0
    for check in checks:  # one pass (this is on every trial's path): counts, and both weighted means
        if check.status == "error":
            errored += 1
        elif check.status == "skipped":
            skipped += 1
        if check.score is not None:
            if check.type == "rubric":
                rubric_total += check.score * check.weight
                rubric_weight += check.weight
            else:
                total += check.score * check.weight
                weight += check.weight
    assertions = total / weight if weight > 0 else None  # as `weighted_score`
    rubric = rubric_total / rubric_weight if rubric_weight > 0 else None
    if assertions is not None and rubric is not None:
        score: float | None = (1 - RUBRIC_SHARE) * assertions + RUBRIC_SHARE * rubric
    else:
        score = assertions if assertions is not None else rubric
    if score is not None and not math.isfinite(score):  # defensive: never report NaN
        score = None
    if conversation_error is not None or errored:
        return TrialScore(score, "error", errored, skipped)
    if score is None:
        return TrialScore(None, "skipped", errored, skipped, reason=nothing_scored_reason(checks))
    status: TrialStatus = "passed" if score >= pass_threshold else "failed"
    failed = [c.name for c in checks if c.status == "failed"] if strict and status == "passed" else None
    if failed:
        names = ", ".join(failed[:3])
        note = f"strict: failed because {len(failed)} check(s) failed ({names}) although the score passed"
        return TrialScore(score, "failed", errored, skipped, (note,))
    return TrialScore(score, status, errored, skipped)


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """A case's outcome over its trials."""

    status: CaseStatus
    """`passed`, `failed`, `error` when errored trials leave the outcome undecided (`inconclusive` when
    only inconclusive ones do), or `skipped` when every trial was skipped."""
    pass_rate: float | None
    """Passed / scored trials (errored trials excluded); `None` when every trial errored."""
    pass_k: float | None
    """pass^k with k = number of trials: the chance that k trials all pass (1 or 0 when all ran)."""


def case_outcome(statuses: Sequence[str], *, min_pass_rate: float) -> CaseOutcome:
    """Decide a case from its trials' statuses (`passed`, `failed`, `error`, `inconclusive`, `skipped`).

    Skipped trials are left out; a case whose every trial was skipped is `skipped`. Inconclusive trials
    (the simulated user misbehaved) are unknowns like errored ones, but a case left undecided by them
    alone is `inconclusive`, not `error`: never the agent's failure.
    """
    skipped = statuses.count("skipped")
    n = len(statuses) - skipped
    passed = statuses.count("passed")
    failed = statuses.count("failed")
    inconclusive = statuses.count("inconclusive")
    errored = n - passed - failed - inconclusive
    unknown: CaseStatus = "error" if errored else "inconclusive"
    scored = passed + failed
    pass_rate = passed / scored if scored else None
    pass_k = pass_hat_k(scored, passed, scored) if scored else None
    if n == 0 and skipped:
        return CaseOutcome("skipped", None, None)
    if n == 0 or scored == 0:
        return CaseOutcome("error" if n == 0 else unknown, pass_rate, pass_k)
    worst, best = passed / n, (passed + errored + inconclusive) / n
    if worst >= min_pass_rate:
        status: CaseStatus = "passed"
    elif best < min_pass_rate:
        status = "failed"
    else:
        status = unknown
    return CaseOutcome(status, pass_rate, pass_k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the probability that k trials drawn from n (c of which passed) all pass.

    Equals C(c, k) / C(n, k); with k = n it is 1 when every trial passed, else 0.
    """
    if k <= 0 or k > n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    return math.comb(c, k) / math.comb(n, k)


ERROR_BUDGET_EXCEEDED = "error budget exceeded"
"""How the reason of a run stopped by `--max-errors` begins (the CLI then exits with the errored code)."""


@dataclass(frozen=True, slots=True)
class ErrorLimit:
    """How many errored trials a run tolerates: a count, or a share of the planned trials."""

    count: int | None = None
    """At most this many errored trials (0: stop at the first error)."""
    rate: float | None = None
    """At most this share (0..1, exclusive of 0) of the planned trials may error."""

    def __post_init__(self) -> None:
        if (self.count is None) == (self.rate is None):
            raise ValueError("an error limit is either a count or a rate")
        if self.count is not None and self.count < 0:
            raise ValueError(f"the error count must be >= 0, got {self.count}")
        if self.rate is not None and not 0 < self.rate < 1:
            raise ValueError(f"the error rate must be between 0 and 1 (exclusive), got {self.rate}")

    def __str__(self) -> str:
        return str(self.count) if self.count is not None else f"{self.rate:g}"


def parse_error_limit(text: str) -> ErrorLimit:
    """Read `--max-errors`: an integer count (`0`, `5`), a rate (`0.1`) or a percentage (`10%`).

    Raises:
        ValueError: Not a count >= 0, a rate in (0, 1) or a percentage in (0, 100); the message says which.
    """
    value = text.strip()
    try:
        if value.endswith("%"):
            return ErrorLimit(rate=float(value[:-1]) / 100)
        if value.isdigit():
            return ErrorLimit(count=int(value))
        return ErrorLimit(rate=float(value))
    except ValueError as exc:
        detail = str(exc) if "error" in str(exc) else "not a number"
        raise ValueError(
            f"expected a count of errored trials (e.g. 3), a rate (0.1) or a percentage (10%); found {text!r}: {detail}"
        ) from None


class ErrorBudget:
    """Counts errored trials against an `ErrorLimit`; the run stops once `exceeded`.

    As τ²-bench's `--max-errors` and Inspect's `fail_on_error`.

    Args:
        limit: The limit.
        planned: Trials the run planned (a rate is a share of these).

    Example:
        ```python
        budget = ErrorBudget(parse_error_limit("1"), planned=10)
        budget.record("error"); budget.record("passed"); budget.record("error")
        assert budget.exceeded and budget.reason().startswith(ERROR_BUDGET_EXCEEDED)
        ```
    """

    def __init__(self, limit: ErrorLimit, planned: int) -> None:
        self.limit = limit
        self.planned = planned
        self.errors = 0
        """Errored trials recorded so far."""
        self.finished = 0
        """Trials recorded so far."""

    @property
    def allowed(self) -> int:
        """The most errored trials the limit tolerates."""
        if self.limit.count is not None:
            return self.limit.count
        return math.floor((self.limit.rate or 0.0) * self.planned + 1e-9)

    def record(self, trial_status: str) -> None:
        """Count one finished trial (only `error` counts against the budget)."""
        self.finished += 1
        if trial_status == "error":
            self.errors += 1

    @property
    def exceeded(self) -> bool:
        """Whether more trials errored than the limit allows."""
        return self.errors > self.allowed

    def reason(self) -> str:
        """The run's stop reason, beginning with `ERROR_BUDGET_EXCEEDED`."""
        return (
            f"{ERROR_BUDGET_EXCEEDED}: {self.errors} of {self.finished} finished trials errored, "
            f"more than --max-errors {self.limit} allows ({self.allowed} of {self.planned} planned)"
        )


@dataclass(slots=True)
class RunningStat:
    """Running totals of one check over many rows (`proctor score`: per scorer, overall or within a group)."""

    count: int = 0
    """Rows scored (passed or failed)."""
    total: float = 0.0
    """Sum of the scores."""
    raw_total: float = 0.0
    """Sum of the raw scores (a scorer's own scale), the score where there is none."""
    passed: int = 0
    """Rows that passed."""
    errors: int = 0
    """Rows where the scorer could not score (missing fields, judge failure)."""
    skipped: int = 0
    """Rows not scored (no judge, agent not exited)."""

    def add(self, entry: Mapping[str, Any]) -> None:
        """Count one row's result for this scorer."""
        status = entry.get("status")
        if status == "error":
            self.errors += 1
        elif status == "skipped" or entry.get("score") is None:
            self.skipped += 1
        else:
            self.count += 1
            self.total += float(entry["score"])
            raw = entry.get("raw_score")
            self.raw_total += float(raw if raw is not None else entry["score"])
            self.passed += status == "passed"

    def to_dict(self) -> dict[str, Any]:
        """The summary's form: means over scored rows (`None` when none was scored)."""
        return {
            "mean": round(self.total / self.count, 6) if self.count else None,
            "raw_mean": round(self.raw_total / self.count, 6) if self.count else None,
            "count": self.count,
            "passed": self.passed,
            "errors": self.errors,
            "skipped": self.skipped,
        }


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation; `None` for no values."""
    if not values:
        return None
    if len(values) == 1:  # what the interpolation below gives for one value (~3x sooner: most cases have one)
        value = values[0]
        return value + (value - value) * 0.0
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


@dataclass(frozen=True, slots=True)
class Composite:
    """Embabel's composite score of one simulated conversation, with every component."""

    overall: float | None
    """max(0, weighted mean of the scored dimensions - penalty), rounded to 2; `None` when nothing scored."""
    timing: float | None
    """min(1, aspirational average / mean response time); `None` without a target or a reply."""
    tasks: float | None
    """The transcript judge's mean task score; `None` when not judged."""
    assertions: float | None
    """The weighted pass rate of the assertions; `None` when there were none (or none could run)."""
    penalty: float
    """min(penalty_per_failure x failures, max_penalty)."""
    failures: int
    """Failed agent call attempts."""
    weights: dict[str, float]
    """The weights used, renormalised over the scored dimensions (they sum to 1, or are empty)."""

    def to_dict(self) -> dict[str, object]:
        """The JSON form kept in results."""
        return {
            "overall": self.overall,
            "timing": _round6(self.timing),
            "tasks": _round6(self.tasks),
            "assertions": _round6(self.assertions),
            "penalty": round(self.penalty, 6),
            "failures": self.failures,
            "weights": {k: round(v, 6) for k, v in self.weights.items()},
        }


def _round6(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def arm_status(
    stop: str, composite: Composite, checks: Sequence[CheckResult], faults: Sequence[str], *, pass_threshold: float
) -> tuple[str, str | None]:
    """A simulated arm's status from how its conversation ended, its checks and its composite score.

    `error` when the agent failed (or a check could not run), `inconclusive` when the simulator
    misbehaved (never the agent's failure), `skipped` when nothing was scored (never `passed`), else
    `passed` when the composite reaches `pass_threshold`.

    Returns:
        The status, and the reason when it is `skipped`.
    """
    if stop == "error":
        return "error", None
    if faults or stop == "simulator_error":
        return "inconclusive", None
    if any(c.status == "error" for c in checks):
        return "error", None
    if composite.overall is None:
        return "skipped", "nothing was scored (no timing target, tasks judged or assertions)"
    return ("passed" if composite.overall >= pass_threshold else "failed"), None


def early_exit(precheck_mean: float | None, threshold: float) -> bool:
    """The Go Eval Agent's early exit: the prechecks' mean is strictly below the threshold (no judge runs)."""
    return precheck_mean is not None and precheck_mean < threshold


def timing_score(aspirational_ms: float | None, latencies_ms: Sequence[float]) -> float | None:
    """min(1, aspirational / mean latency); `None` without a target or without any latency."""
    if aspirational_ms is None or not latencies_ms:
        return None
    mean = sum(latencies_ms) / len(latencies_ms)
    return 1.0 if mean <= 0 else min(1.0, aspirational_ms / mean)


def composite_score(
    *,
    timing: float | None,
    tasks: float | None,
    assertions: float | None,
    failures: int,
    weights: dict[str, float] | None = None,
    penalty_per_failure: float = 0.3,
    max_penalty: float = 0.5,
) -> Composite:
    """Embabel's composite: max(0, (timing x 1 + tasks x 2 + assertions x 4) / 7 - penalty), rounded to 2.

    A dimension that is `None` (nothing to score) is left out and the other weights renormalised, so the
    score is never NaN; with nothing scored at all, `overall` is `None`.

    Args:
        timing: The timing score.
        tasks: The mean task score.
        assertions: The assertions' weighted pass rate.
        failures: Failed agent call attempts.
        weights: Weights by dimension (default timing 1, tasks 2, assertions 4).
        penalty_per_failure: Subtracted per failure.
        max_penalty: The most the penalty subtracts.
    """
    given = weights or {"timing": 1.0, "tasks": 2.0, "assertions": 4.0}
    values = {"timing": timing, "tasks": tasks, "assertions": assertions}
    scored = {k: v for k, v in values.items() if v is not None and math.isfinite(v) and given.get(k, 0) > 0}
    total = sum(given[k] for k in scored)
    penalty = min(penalty_per_failure * failures, max_penalty)
    if total <= 0:
        return Composite(None, timing, tasks, assertions, penalty, failures, {})
    mean = sum(scored[k] * given[k] for k in scored) / total
    overall = round(max(0.0, mean - penalty), 2)
    return Composite(overall, timing, tasks, assertions, penalty, failures, {k: given[k] / total for k in scored})


@functools.lru_cache(maxsize=8)  # one confidence level per run, asked for every case: computed once
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


@dataclass(frozen=True, slots=True)
class PassStatistics:
    """A case's pass statistics over its scored trials."""

    n: int
    """Scored trials (`passed` + `failed`; errored, skipped and inconclusive ones left out)."""
    c: int
    """Passed trials."""
    k: int | None
    """The k of pass@k and pass^k: the one asked for, else n; `None` when n is 0."""
    pass_at_k: float | None
    """The chance that at least one of k trials passes; `None` when n < k or n is 0."""
    pass_hat_k: float | None
    """The chance that all k trials pass; `None` when n < k or n is 0."""
    interval: tuple[float, float] | None
    """The 95 % Wilson score interval of c / n; `None` when n is 0."""

    def to_dict(self) -> dict[str, object]:
        """The JSON form kept in results (`pass_rate_ci` is `[low, high]`)."""
        return {
            "k": self.k,
            "pass_at_k": _round6(self.pass_at_k),
            "pass_hat_k": _round6(self.pass_hat_k),
            "pass_rate_ci": None if self.interval is None else [round(v, 6) for v in self.interval],
        }


def pass_statistics(statuses: Sequence[str], k: int | None = None) -> PassStatistics:
    """pass@k, pass^k and the Wilson interval of a case from its trials' statuses.

    Args:
        statuses: Each trial's status; only `passed` and `failed` trials count.
        k: Trials per draw (`--k`); default the number of scored trials, so pass^k is "every trial
            passed". With fewer scored trials than k, pass@k and pass^k are `None` (no unbiased
            estimate exists), never a number for a smaller k.

    Raises:
        ValueError: `k` is below 1.
    """
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    c = sum(1 for status in statuses if status == "passed")
    n = c + sum(1 for status in statuses if status == "failed")
    if n == 0:
        return PassStatistics(0, 0, k, None, None, None)
    chosen = n if k is None else k
    if chosen > n:
        return PassStatistics(n, c, chosen, None, None, wilson_interval(c, n))
    return PassStatistics(n, c, chosen, pass_at_k(n, c, chosen), pass_hat_k(n, c, chosen), wilson_interval(c, n))
