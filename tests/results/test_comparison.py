"""`compare_runs` on constructed runs: a real regression, noise, flaky cases, pairing."""

from __future__ import annotations

import pytest

from proctor.results import StoredCase, compare_runs
from proctor.results._comparison import MIN_BOOTSTRAP_CASES


def case(name: str, outcomes: str, scores: list[float] | None = None, *, file: str = "s.yaml") -> StoredCase:
    """A case from a string of trial outcomes: P passed, F failed, E error."""
    status = {"P": "passed", "F": "failed", "E": "error"}
    trials = {}
    for number, mark in enumerate(outcomes, 1):
        score = None if mark == "E" else (scores[number - 1] if scores else (1.0 if mark == "P" else 0.0))
        trials[number] = (status[mark], score)
    passed = outcomes.count("P") / max(1, outcomes.count("P") + outcomes.count("F"))
    return StoredCase(f"{file}::{name}", name, "s", [], "passed" if passed >= 0.8 else "failed", trials)


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
