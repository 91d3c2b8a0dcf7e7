"""`compare_runs` and `restrict_run` on runs with `incomplete` cases (the run stopped before all their planned
trials ran): such a case has no case outcome (never `regressed`, never `errored`), its trials that ran pair as
any others, and a restricted run's summary counts it over the cases it keeps."""

from __future__ import annotations

from typing import Any

from proctor.results import CaseResult, RunResult, StoredCase, TrialResult, compare_runs, restrict_run
from proctor.results._comparison import pair_outcomes


def trial(case: str, number: int, status: str) -> TrialResult:
    return TrialResult(f"s.yaml::{case}", number, status, 1.0 if status == "passed" else 0.0)


def run(run_id: str, cases: dict[str, str], *, planned: int = 3, status: str = "complete") -> dict[str, Any]:
    """A run's results JSON: each case's trials from a string (P passed, F failed, E error, S skipped, I
    inconclusive), `planned` trials planned for each (fewer marks: the case is incomplete)."""
    marks = {"P": "passed", "F": "failed", "E": "error", "S": "skipped", "I": "inconclusive"}
    results = [
        CaseResult(
            name, "s", "s.yaml", [], 1.0, [trial(name, n, marks[m]) for n, m in enumerate(outcomes, 1)], planned=planned
        )
        for name, outcomes in cases.items()
    ]
    result = RunResult(run_id, "2026-11-29T00:00:00+00:00", run_id, "t", results, planned_trials=planned * len(cases))
    result.end(status)
    return result.to_dict()


def stored(data: dict[str, Any]) -> list[StoredCase]:
    return StoredCase.from_data(data)


def test_passed_then_incomplete_is_incomplete_not_regressed_nor_errored() -> None:
    a = stored(run("a", {"ran-once": "PPP", "never": "PPP"}))
    b = stored(run("b", {"ran-once": "P", "never": ""}, status="interrupted"))
    assert [c.status for c in b] == ["incomplete", "incomplete"]
    result = compare_runs("a", a, "b", b)
    assert [c.change for c in result.cases] == ["incomplete", "incomplete"]  # was "errored" for both
    ran_once, never = result.cases
    assert ran_once.pairs == [(True, True)] and ran_once.pairing.left_out == 0  # the trial that ran pairs
    assert ran_once.pass_rates == (1.0, 1.0) and not ran_once.unpaired
    assert never.pairs == [] and never.unpaired  # nothing ran in B: no pair, so B cannot be called no worse
    assert result.discordant == (0, 0) and not result.regression
    assert result.verdict == "undecided" and result.to_dict()["unpaired_cases"] == ["never"]
    assert result.to_dict()["cases"][0]["change"] == "incomplete"


def test_an_incomplete_case_whose_trials_that_ran_failed_still_shows_the_regression() -> None:
    """The label is not a pass/fail change; the trial pairs are, and they decide the verdict."""
    a = stored(run("a", {f"c{i}": "PPP" for i in range(10)}))
    b = stored(run("b", {f"c{i}": "FF" for i in range(10)}, status="interrupted"))
    result = compare_runs("a", a, "b", b)
    assert {c.change for c in result.cases} == {"incomplete"}
    assert result.discordant == (20, 0) and result.regression and result.verdict == "regression"


def test_incomplete_then_passed_is_recovered_and_incomplete_twice_unchanged() -> None:
    a = stored(run("a", {"x": "P", "y": "F"}, status="interrupted"))
    b = stored(run("b", {"x": "PPP", "y": "PP"}, status="interrupted"))
    result = compare_runs("a", a, "b", b)
    assert [c.change for c in result.cases] == ["recovered", "unchanged"]  # not "fixed": A had no case outcome
    assert result.discordant == (0, 1)  # y's trial 1: failed in A, passed in B
    assert result.cases[0].pairs == [(True, True)]


def test_a_case_pair_with_an_incomplete_side_is_left_out_and_said() -> None:
    """The matrix pairs cases by status: an incomplete one is not an outcome."""
    pairing = pair_outcomes([("passed", "incomplete"), ("passed", "passed"), ("incomplete", "failed")])
    assert pairing.pairs == [(True, True)]
    assert pairing.left_out_dict() == {"pairs": 2, "a": {"incomplete": 1}, "b": {"incomplete": 1}}
    assert pairing.left_out_note("case pair") == "2 case pairs left out: A incomplete 1, B incomplete 1"


def test_restrict_run_counts_the_statuses_of_the_cases_it_keeps() -> None:
    data = run(
        "r",
        {"kept-incomplete": "P", "kept-passed": "PPP", "gone-incomplete": "", "gone-skipped": "SSS", "gone-i": "III"},
        status="interrupted",
    )
    summary = data["summary"]
    assert (summary["incomplete"], summary["skipped"], summary["inconclusive"]) == (2, 1, 1)
    assert summary["trials"]["planned"] == 15 and summary["trials"]["skipped"] == 3
    restricted = restrict_run(data, frozenset({"s.yaml::kept-incomplete", "s.yaml::kept-passed"}))
    figures = restricted["summary"]
    assert (figures["cases"], figures["passed"], figures["errored"], figures["incomplete"]) == (2, 1, 0, 1)
    assert "skipped" not in figures and "inconclusive" not in figures  # none kept: absent, as in a results file
    assert figures["pass_rate"] == 0.5  # the incomplete case is not a pass
    trials = figures["trials"]
    assert (trials["planned"], trials["run"], trials["passed"]) == (6, 4, 4)  # the kept cases' 3 + 3 planned
    assert "skipped" not in trials and "inconclusive" not in trials
    assert data["summary"] is summary and summary["incomplete"] == 2  # the input is not changed

    none_incomplete = restrict_run(data, frozenset({"s.yaml::kept-passed", "s.yaml::gone-skipped"}))["summary"]
    assert "incomplete" not in none_incomplete and none_incomplete["skipped"] == 1
    assert none_incomplete["pass_rate"] == 1.0 and none_incomplete["trials"]["skipped"] == 3
