from __future__ import annotations

import math

import pytest

from proctor.checks import CheckResult
from proctor.scoring import (
    ERROR_BUDGET_EXCEEDED,
    ErrorBudget,
    PassStatistics,
    case_outcome,
    parse_error_limit,
    pass_hat_k,
    pass_statistics,
    percentile,
    score_trial,
    wilson_interval,
)


def result(status: str, score: float | None, weight: float = 1.0, kind: str = "contains") -> CheckResult:
    return CheckResult("c", kind, status, score, weight)  # type: ignore[arg-type]


def test_weights_are_honoured_across_turns() -> None:
    checks = [result("passed", 1.0, 3.0), result("failed", 0.0, 1.0), result("passed", 1.0, 0.0)]
    scored = score_trial(checks, pass_threshold=0.8)
    assert scored.score == pytest.approx(0.75)
    assert scored.status == "failed"
    assert score_trial(checks, pass_threshold=0.75).status == "passed"


def test_errors_and_skips_are_excluded_and_counted() -> None:
    checks = [result("passed", 1.0), result("skipped", None, 5.0, "llm-rubric"), result("error", None, 5.0)]
    scored = score_trial(checks, pass_threshold=0.8)
    assert scored.score == 1.0
    assert scored.status == "error"  # a trial with an error is error, not failed or passed
    assert (scored.errored_checks, scored.skipped_checks) == (1, 1)


def test_rubric_blend_half_and_half_or_alone() -> None:
    assertions = [result("passed", 1.0), result("failed", 0.0)]
    rubric = [result("passed", 0.9, kind="rubric")]
    assert score_trial(assertions + rubric, pass_threshold=0.8).score == pytest.approx(0.5 * 0.5 + 0.5 * 0.9)
    assert score_trial(rubric, pass_threshold=0.8).score == pytest.approx(0.9)


def test_nothing_scored_is_skipped_with_the_reason_never_passed() -> None:
    # Was "passes with a warning" (issue 14): nothing unchecked passes.
    none = score_trial([], pass_threshold=0.8)
    assert (none.status, none.score, none.reason) == ("skipped", None, "nothing was scored: the case has no checks")
    no_judge = CheckResult("polite", "llm-rubric", "skipped", None, 1.0, "no judge model configured: pass --judge")
    skipped = score_trial([no_judge], pass_threshold=0.8)
    assert skipped.status == "skipped"
    assert skipped.reason == "nothing was scored: 1 check was skipped (no judge model configured: pass --judge)"
    zero_weight = score_trial([result("passed", 1.0, 0.0)], pass_threshold=0.8)
    assert (zero_weight.status, zero_weight.score) == ("skipped", None)
    assert zero_weight.reason is not None and "weight 0" in zero_weight.reason
    errored = score_trial([no_judge, result("error", None)], pass_threshold=0.8)
    assert errored.status == "error"  # a check that errored makes it an error, not a skip


def test_strict_fails_a_trial_with_any_failed_check() -> None:
    checks = [result("passed", 1.0, 9.0), result("failed", 0.0, 1.0)]
    assert score_trial(checks, pass_threshold=0.8).status == "passed"
    strict = score_trial(checks, pass_threshold=0.8, strict=True)
    assert (strict.status, strict.score) == ("failed", pytest.approx(0.9))
    assert "1 check(s) failed (c)" in strict.warnings[0]
    assert score_trial(checks[:1], pass_threshold=0.8, strict=True).status == "passed"


def test_a_case_whose_trials_were_all_skipped_is_skipped() -> None:
    assert case_outcome(["skipped", "skipped"], min_pass_rate=0.8).status == "skipped"
    assert case_outcome(["skipped", "passed"], min_pass_rate=0.8).status == "passed"  # decided by what was scored


@pytest.mark.parametrize(
    ("text", "planned", "statuses", "exceeded"),
    [
        ("0", 10, ["passed", "error"], True),
        ("2", 10, ["error", "error"], False),
        ("2", 10, ["error", "error", "failed", "error"], True),
        ("0.2", 10, ["error", "error"], False),
        ("20%", 10, ["error", "error", "error"], True),
        ("0.05", 10, ["error"], True),  # 5 % of 10 planned tolerates none
    ],
)
def test_error_budget(text: str, planned: int, statuses: list[str], exceeded: bool) -> None:
    budget = ErrorBudget(parse_error_limit(text), planned)
    for status in statuses:
        budget.record(status)
    assert budget.exceeded is exceeded
    assert budget.reason().startswith(ERROR_BUDGET_EXCEEDED)
    assert f"--max-errors {parse_error_limit(text)} allows" in budget.reason()


@pytest.mark.parametrize("text", ["-1", "1.5", "0%", "abc", "100%", ""])
def test_error_limit_rejects_bad_values(text: str) -> None:
    with pytest.raises(ValueError, match="expected a count of errored trials"):
        parse_error_limit(text)


def test_conversation_error_makes_the_trial_error() -> None:
    scored = score_trial([result("passed", 1.0)], pass_threshold=0.8, conversation_error="timeout")
    assert scored.status == "error" and scored.score == 1.0


@pytest.mark.parametrize(
    ("statuses", "min_rate", "status", "rate"),
    [
        (["passed", "passed", "passed"], 0.8, "passed", 1.0),
        (["passed", "passed", "failed"], 0.8, "failed", 2 / 3),
        (["passed", "passed", "failed"], 0.6, "passed", 2 / 3),
        (["passed", "passed", "error"], 0.8, "error", 1.0),  # undecided: the error could be either
        (["passed", "failed", "error"], 0.8, "failed", 0.5),  # fails whatever the error was
        (["passed", "passed", "passed", "passed", "error"], 0.8, "passed", 1.0),  # passes whatever it was
        (["error", "error"], 0.8, "error", None),
    ],
)
def test_case_outcome(statuses: list[str], min_rate: float, status: str, rate: float | None) -> None:
    outcome = case_outcome(statuses, min_pass_rate=min_rate)
    assert outcome.status == status
    assert outcome.pass_rate == (pytest.approx(rate) if rate is not None else None)


def test_pass_hat_k() -> None:
    assert pass_hat_k(3, 3, 3) == 1.0
    assert pass_hat_k(3, 2, 3) == 0.0
    assert pass_hat_k(4, 3, 2) == pytest.approx(3 / 6)
    assert case_outcome(["passed", "failed"], min_pass_rate=0.5).pass_k == 0.0
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)


def test_percentile() -> None:
    assert percentile([], 50) is None
    assert percentile([10.0], 95) == 10.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([float(i) for i in range(1, 101)], 95) == pytest.approx(95.05)


@pytest.mark.parametrize("value", [0.0, -0.0, 1.5, 3, 1e308, math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("q", [0, 50, 95, 100])
def test_the_percentile_of_one_value_is_the_interpolation_s_to_the_bit(value: float, q: float) -> None:
    """One value takes a shorter path: the same result as the interpolation (a -0.0 or an int included)."""
    position = 0 * q / 100
    low = math.floor(position)
    interpolated = value + (value - value) * (position - low)
    assert repr(percentile([value], q)) == repr(interpolated)


def test_pass_statistics_for_a_chosen_k() -> None:
    statuses = ["passed", "failed", "passed", "error", "passed", "failed", "skipped"]  # n = 5 scored, c = 3
    two = pass_statistics(statuses, 2)
    assert (two.n, two.c, two.k) == (5, 3, 2)
    assert two.pass_at_k == pytest.approx(1 - math.comb(2, 2) / math.comb(5, 2))  # 0.9
    assert two.pass_hat_k == pytest.approx(math.comb(3, 2) / math.comb(5, 2))  # 0.3
    assert two.interval == wilson_interval(3, 5)
    default = pass_statistics(statuses)  # k = n = 5: "all five passed" and "one of five passed"
    assert (default.k, default.pass_at_k, default.pass_hat_k) == (5, 1.0, 0.0)
    too_big = pass_statistics(statuses, 6)  # no unbiased estimate from 5 trials: none, not a smaller k
    assert (too_big.k, too_big.pass_at_k, too_big.pass_hat_k) == (6, None, None) and too_big.interval
    assert pass_statistics(["error", "skipped"], 2) == PassStatistics(0, 0, 2, None, None, None)
    assert two.to_dict() == {"k": 2, "pass_at_k": 0.9, "pass_hat_k": 0.3, "pass_rate_ci": [0.230724, 0.882379]}
    with pytest.raises(ValueError, match="k must be >= 1"):
        pass_statistics(statuses, 0)
