"""`compare_runs` on constructed runs: a real regression, noise, flaky cases, pairing."""

from __future__ import annotations

import pytest

from proctor.results import StoredCase, compare_runs
from proctor.results._comparison import MIN_BOOTSTRAP_CASES, pair_outcomes

STATUS = {"P": "passed", "F": "failed", "E": "error", "S": "skipped", "I": "inconclusive"}


def case(
    name: str, outcomes: str, scores: list[float] | None = None, *, file: str = "s.yaml", status: str | None = None
) -> StoredCase:
    """A case from a string of trial outcomes: P passed, F failed, E error, S skipped, I inconclusive.

    Its status: passed when at least 80% of its passed and failed trials passed, else failed; with none of
    those, the status of its first trial (all errored: `error`), unless `status` says otherwise.
    """
    trials = {}
    for number, mark in enumerate(outcomes, 1):
        score = None if mark in "ES" else (scores[number - 1] if scores else (1.0 if mark == "P" else 0.0))
        trials[number] = (STATUS[mark], score)
    decided = outcomes.count("P") + outcomes.count("F")
    if status is None:
        passed = outcomes.count("P") / max(1, decided)
        status = ("passed" if passed >= 0.8 else "failed") if decided else STATUS[outcomes[0]]
    return StoredCase(f"{file}::{name}", name, "s", [], status, trials)


def suite(pattern: dict[str, str]) -> list[StoredCase]:
    return [case(name, outcomes) for name, outcomes in pattern.items()]


def test_a_real_regression_is_significant() -> None:
    a = suite({f"c{i}": "PPP" for i in range(10)})
    b = suite({f"c{i}": ("PFF" if i < 6 else "PPP") for i in range(10)})  # 12 pairs A passed, B failed
    result = compare_runs("a", a, "b", b)
    assert result.discordant == (12, 0)
    assert result.mcnemar_p == pytest.approx(2 / 2**12)
    assert result.pass_fail_regression and result.regression and result.verdict == "regression"
    assert result.score_interval is not None and result.score_interval.high < 0
    assert [c.change for c in result.cases[:7]] == ["regressed"] * 6 + ["unchanged"]
    assert result.cases[0].flaky == ["B"]


def test_noise_is_not_a_regression() -> None:
    # The same agent twice: a couple of trials flip each way, as they would from sampling alone.
    a = suite({f"c{i}": "PPPPF" if i % 3 == 0 else "PPPPP" for i in range(12)})
    b = suite({f"c{i}": "PPPFP" if i % 4 == 0 else "PPPPP" for i in range(12)})
    result = compare_runs("a", a, "b", b)
    worse, better = result.discordant
    assert (worse, better) == (3, 4)
    assert result.mcnemar_p == 1.0
    assert not result.regression and result.verdict == "no significant difference"
    flaky = {c.name for c in result.cases if c.flaky}
    assert flaky == {f"c{i}" for i in range(12) if i % 3 == 0 or i % 4 == 0}


def test_a_small_drop_is_not_called_significant() -> None:
    a = suite({f"c{i}": "PPP" for i in range(10)})
    b = suite({"c0": "PFP", "c1": "FPP", **{f"c{i}": "PPP" for i in range(2, 10)}})
    result = compare_runs("a", a, "b", b)
    assert result.discordant == (2, 0) and result.mcnemar_p == 0.5
    assert not result.regression  # two flips in thirty pairs is within noise
    assert result.score_interval is not None and result.score_interval.high >= 0


def test_an_improvement() -> None:
    a = suite({f"c{i}": "FFF" for i in range(8)})
    b = suite({f"c{i}": "PPP" for i in range(8)})
    result = compare_runs("a", a, "b", b)
    assert result.improvement and not result.regression and result.verdict == "improvement"
    assert all(c.change == "fixed" for c in result.cases)


def test_score_regression_needs_enough_cases() -> None:
    high = [0.9, 0.9, 0.9]
    low = [0.85, 0.85, 0.85]  # still passing, but every case lower
    few_a = [case(f"c{i}", "PPP", high) for i in range(MIN_BOOTSTRAP_CASES - 1)]
    few_b = [case(f"c{i}", "PPP", low) for i in range(MIN_BOOTSTRAP_CASES - 1)]
    few = compare_runs("a", few_a, "b", few_b)
    assert few.score_interval is not None and few.score_interval.high < 0
    assert not few.score_decides and not few.regression
    many_a = [case(f"c{i}", "PPP", high) for i in range(8)]
    many_b = [case(f"c{i}", "PPP", low) for i in range(8)]
    many = compare_runs("a", many_a, "b", many_b)
    assert many.score_regression and many.regression and not many.pass_fail_regression
    assert many.to_dict()["score"]["significant"] is True


def test_errors_are_left_out_of_pairs_and_cases_are_paired_by_key_then_name() -> None:
    a = [case("x", "PEP"), case("moved", "PPP", file="old/s.yaml"), case("gone", "PPP")]
    b = [case("x", "PPE"), case("moved", "PPF", file="new/s.yaml"), case("new", "FFF")]
    result = compare_runs("a", a, "b", b, seed=3)
    by_name = {c.name: c for c in result.cases}
    assert by_name["x"].pairs == [(True, True)]  # trials 2 and 3 have an error on one side
    assert by_name["moved"].a is not None and by_name["moved"].b is not None
    assert by_name["moved"].key == "new/s.yaml::moved"
    assert by_name["gone"].change == "removed" and by_name["new"].change == "added"
    data = result.to_dict()
    assert data["pass_fail"]["pairs"] == 4 and data["flaky"] == ["moved"]
    assert [c["case"] for c in data["cases"]] == ["x", "moved", "gone", "new"]


def test_bad_alpha() -> None:
    with pytest.raises(ValueError, match="alpha"):
        compare_runs("a", [], "b", [], alpha=1.5)


# Errors are not scores: only passed and failed trials pair (QA: a rescore without a judge, all skipped,
# was "A passed and B failed 18", a significant regression; a run whose every trial errored passed the gate).


def test_only_passed_and_failed_pair_the_rest_is_counted_by_side() -> None:
    statuses = [*STATUS.values()]
    pairing = pair_outcomes((a, b) for a in statuses for b in statuses)
    assert pairing.pairs == [(True, True), (True, False), (False, True), (False, False)]
    assert pairing.left_out == 25 - 4  # a pair with no outcome on both sides is left out once
    assert pairing.left_out_a == {"error": 5, "skipped": 5, "inconclusive": 5}  # ... and counted on each side
    assert pairing.left_out_b == {"error": 5, "skipped": 5, "inconclusive": 5}
    assert pairing.discordant == (1, 1)
    assert pairing.left_out_note("trial pair") == (
        "21 trial pairs left out: A errored 5, A inconclusive 5, A skipped 5, B errored 5, B inconclusive 5, "
        "B skipped 5"
    )
    assert pair_outcomes([("passed", "failed")]).left_out_note("case") is None


def test_skipped_trials_are_not_failures_nor_passes() -> None:
    passed = suite({f"c{i}": "PPP" for i in range(6)})
    skipped = suite({f"c{i}": "SSS" for i in range(6)})  # the same runs rescored without a judge
    worse = compare_runs("a", passed, "b", skipped)
    assert worse.discordant == (0, 0) and worse.pairs == 0 and worse.mcnemar_p == 1.0
    assert not worse.regression and worse.verdict == "undecided" and worse.undecided
    assert [c.change for c in worse.cases] == ["skipped"] * 6
    data = worse.to_dict()
    assert data["pass_fail"]["left_out"] == {"pairs": 18, "a": {}, "b": {"skipped": 18}}
    assert data["cases"][0]["left_out"] == {"pairs": 3, "a": {}, "b": {"skipped": 3}}
    assert data["verdict"] == "undecided" and data["undecided"] is True and data["regression"] is False
    assert data["undecided_reason"] == "no trial pair passed or failed in both runs"
    assert worse.pairing.left_out_note("trial pair") == "18 trial pairs left out: B skipped 18"
    better = compare_runs("b", skipped, "a", passed)
    assert better.discordant == (0, 0) and not better.improvement and better.verdict == "undecided"
    assert [c.change for c in better.cases] == ["recovered"] * 6  # not "fixed": A had no outcome


def test_inconclusive_trials_are_left_out_and_their_scores_too() -> None:
    a = suite({f"c{i}": "PPP" for i in range(6)})
    b = [case(f"c{i}", "PPI", [1.0, 1.0, 0.0]) for i in range(6)]  # the simulated user misbehaved in trial 3
    result = compare_runs("a", a, "b", b)
    assert result.discordant == (0, 0) and result.pairs == 12
    assert result.to_dict()["pass_fail"]["left_out"] == {"pairs": 6, "a": {}, "b": {"inconclusive": 6}}
    assert result.cases[0].scores == (1.0, 1.0)  # the inconclusive trial's score is not an outcome either
    assert result.verdict == "no significant difference" and not result.undecided


def test_a_candidate_that_errored_everywhere_is_undecided_not_no_difference() -> None:
    passed = suite({f"c{i}": "PPP" for i in range(6)})
    errored = suite({f"c{i}": "EEE" for i in range(6)})  # the judge answered garbage on every trial
    result = compare_runs("a", passed, "b", errored)
    assert result.pairs == 0 and not result.regression
    assert result.verdict == "undecided" and result.undecided
    assert [c.change for c in result.cases] == ["errored"] * 6  # not "regressed": B has no outcome
    assert result.to_dict()["pass_fail"]["left_out"] == {"pairs": 18, "a": {}, "b": {"error": 18}}
    assert [c.name for c in result.unpaired_cases] == [f"c{i}" for i in range(6)]
    back = compare_runs("b", errored, "a", passed)
    assert back.verdict == "undecided" and [c.change for c in back.cases] == ["recovered"] * 6  # not "fixed"
    assert back.unpaired_cases == []  # A had no outcome to lose: undecided because nothing paired


def test_one_case_without_a_pair_in_b_makes_the_comparison_undecided() -> None:
    a = suite({f"c{i}": "PPP" for i in range(10)})
    b = suite({"c0": "EES", **{f"c{i}": "PPP" for i in range(1, 10)}})
    result = compare_runs("a", a, "b", b)
    assert result.pairs == 27 and result.discordant == (0, 0)
    assert result.undecided and result.verdict == "undecided"
    assert result.undecided_reason == "1 case with an outcome in A had no trial pair to compare in B: c0"
    assert result.to_dict()["unpaired_cases"] == ["c0"]
    assert result.pairing.left_out_note("trial pair") == "3 trial pairs left out: B errored 2, B skipped 1"
    one_left = compare_runs("a", a, "b", suite({"c0": "PEE", **{f"c{i}": "PPP" for i in range(1, 10)}}))
    assert not one_left.undecided and one_left.verdict == "no significant difference"  # c0 still has a pair
    baseline_errored = compare_runs("a", suite({"c0": "EEE", **{f"c{i}": "PPP" for i in range(1, 10)}}), "b", a)
    assert not baseline_errored.undecided  # A had no outcome on c0: B cannot be worse there
    assert baseline_errored.cases[0].change == "recovered"


def test_a_regression_stays_a_regression_when_a_case_is_also_unpaired() -> None:
    a = suite({f"c{i}": "PPP" for i in range(10)})
    b = suite({"c0": "EEE", **{f"c{i}": ("FFF" if i < 7 else "PPP") for i in range(1, 10)}})
    result = compare_runs("a", a, "b", b)
    assert result.discordant == (18, 0) and result.regression and result.verdict == "regression"
    assert not result.undecided and result.undecided_reason is not None  # still said why, beside the regression
    assert result.to_dict()["undecided"] is False


def test_a_failed_case_that_errors_is_errored_not_unchanged() -> None:
    result = compare_runs("a", [case("x", "FFF")], "b", [case("x", "EEE")])
    assert result.cases[0].change == "errored" and result.verdict == "undecided"
    inconclusive = compare_runs("a", [case("x", "PPP")], "b", [case("x", "III")])
    assert inconclusive.cases[0].change == "inconclusive" and inconclusive.verdict == "undecided"
