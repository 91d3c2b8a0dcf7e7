"""A run's aggregates are computed once, from the typed trials, and agree with what a reader recomputes."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.checks import CheckResult
from proctor.results import CaseResult, RunResult, TrialResult, with_k
from proctor.results._aggregate import TRIAL_STATUSES
from proctor.transcript import Message


def trial(key: str, number: int, status: str, *, latency: float = 5.0) -> TrialResult:
    check_status = {"passed": "passed", "failed": "failed"}.get(status, "skipped" if status == "skipped" else "error")
    return TrialResult(
        case_key=key,
        trial=number,
        status=status,
        score={"passed": 1.0, "failed": 0.0}.get(status),
        turns=[Message("user", "hi"), Message("assistant", "hello", latency_ms=latency)],
        checks=[CheckResult("says hello", "contains", check_status, None, reason=f"reason {number}", turn=0)],
        reason="no judge model" if status == "skipped" else None,
    )


def run_of(statuses: list[list[str]], k: int | None = None) -> RunResult:
    cases = [
        CaseResult(f"c{i}", "s", "s.yaml", [], 0.5, [trial(f"s.yaml::c{i}", n + 1, st) for n, st in enumerate(sts)])
        for i, sts in enumerate(statuses)
    ]
    return RunResult("r", "2026-11-25T00:00:00+00:00", "m", "t", cases, planned_trials=sum(map(len, statuses)), k=k)


def test_summary_is_computed_once_and_again_only_when_trials_change() -> None:
    run = run_of([["passed", "failed"], ["passed"]])
    first = run.summary
    assert run.summary is first  # no second computation for the console, the --ci JSON, the exit code
    assert run.to_dict()["summary"] == first.to_dict()
    case = run.cases[1]
    assert case.summarize() is case.summarize()
    case.trials.append(trial("s.yaml::c1", 2, "failed"))
    assert run.summary is not first and run.summary.trials.run == 4
    assert case.summarize().trial_counts == {"passed": 1, "failed": 1, "error": 0}


def test_attributes_match_the_written_json() -> None:
    run = run_of([["passed", "passed"], ["failed", "error"], ["skipped"]])
    data = json.loads(json.dumps(run.to_dict()))
    summary = run.summary
    assert (summary.cases, summary.passed, summary.failed, summary.errored, summary.skipped) == (3, 1, 0, 1, 1)
    assert data["summary"]["pass_rate"] == summary.pass_rate == 0.5  # skipped cases are not in the rate
    assert summary.skipped_check_reasons == ("reason 1",)
    case = run.cases[2].summarize()
    assert case.status == "skipped" and case.reason == "no judge model" == data["cases"][2]["reason"]
    failing = run.cases[1].summarize().failing_checks
    assert [(f.name, f.failed, f.ran, f.reason) for f in failing] == [("says hello", 1, 1, "reason 1")]
    assert data["cases"][1]["failing_checks"] == [f.to_dict() for f in failing]


@settings(max_examples=60, deadline=None)
@given(
    statuses=st.lists(st.lists(st.sampled_from(TRIAL_STATUSES), min_size=1, max_size=5), min_size=1, max_size=6),
    k=st.one_of(st.none(), st.integers(min_value=1, max_value=4)),
)
def test_a_reader_recomputing_from_the_file_gets_the_same_figures(statuses: list[list[str]], k: int | None) -> None:
    """`with_k` (what `report --k` runs over a results file) and the writer's aggregates agree."""
    written = json.loads(json.dumps(run_of(statuses, k).to_dict()))
    again = with_k(written, k)
    for key in ("k", "pass_at_k", "pass_hat_k", "pass_rate_ci", "trial_pass_rate_ci"):
        assert again["summary"][key] == written["summary"][key], key
    for mine, theirs in zip(written["cases"], again["cases"], strict=True):
        for key in ("k", "pass_at_k", "pass_hat_k", "pass_rate_ci", "pass_k"):
            assert mine[key] == theirs[key], key
