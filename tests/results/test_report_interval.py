"""The case pass rate's interval in the reports: the JSON's `pass_rate_ci` (skipped cases left out) in the
markdown and the HTML alike."""

from __future__ import annotations

import re
from typing import Any

import pytest

from proctor.checks import CheckResult
from proctor.results import CaseResult, RunResult, TrialResult, build_report, wilson_interval
from proctor.results._html import render_html
from proctor.results._markdown import render_markdown
from proctor.results._summary import case_pass_interval

DASH = "\u2013"
"""The en dash between an interval's bounds in HTML."""
STATUSES = ["passed", "passed", "failed", "error", "error", "skipped"]
"""2 passed, 1 failed, 2 errored, 1 skipped: 2 of the 5 cases that were scored passed."""


def mixed_run(statuses: list[str] = STATUSES) -> dict[str, Any]:
    """A run with one single-trial case of each status given, written by Proctor's own results model."""
    cases = []
    for index, status in enumerate(statuses):
        name = f"case-{index}"
        checks = []
        if status in ("passed", "failed"):
            checks = [CheckResult("contains x", "contains", status, float(status == "passed"), 1.0, "why", 0)]
        trial = TrialResult(
            case_key=f"s.yaml::{name}",
            trial=1,
            status=status,
            score=float(status == "passed") if checks else None,
            checks=checks,
            error="the agent is down" if status == "error" else None,
            reason="nothing was scored: the case has no checks" if status == "skipped" else None,
        )
        cases.append(CaseResult(name, "s", "s.yaml", [], 1.0, [trial]))
    run = RunResult(
        run_id="mixed_20261104T090000Z",
        started_at="2026-11-04T09:00:00+00:00",
        finished_at="2026-11-04T09:00:01+00:00",
        model="openai/gpt-4.1-mini",
        target="python proctor.demo:respond",
        cases=cases,
        planned_trials=len(statuses),
    )
    return run.to_dict()


def test_the_mixed_run_has_the_statuses_and_the_json_interval_leaves_skipped_cases_out() -> None:
    data = mixed_run()
    assert [case["status"] for case in data["cases"]] == STATUSES
    summary = data["summary"]
    assert summary["pass_rate"] == pytest.approx(2 / 5)
    assert summary["pass_rate_ci"] == pytest.approx(list(wilson_interval(2, 5)), abs=1e-6)  # [0.118, 0.769]
    assert case_pass_interval(data["cases"]) == pytest.approx(tuple(summary["pass_rate_ci"]), abs=1e-6)


def test_html_markdown_and_json_show_the_same_case_interval() -> None:
    data = mixed_run()
    report = build_report([(data, None)], generated_at="2026-11-04T10:00:00+00:00")
    (run,) = report.runs
    assert run.case_interval == pytest.approx(tuple(data["summary"]["pass_rate_ci"]), abs=1e-6)
    assert run.case_interval != pytest.approx(wilson_interval(2, 6))  # not 2 of all 6 cases ([10%-70%])
    html = render_html(report)
    assert re.search(rf"40%\s*<span class=\"ci\">\[12%{DASH}77%\]</span>", html), "the HTML's case interval"
    assert f"[10%{DASH}70%]" not in html
    assert "40% [12-77%]" in render_markdown(report)


@pytest.mark.parametrize(
    ("statuses", "passed", "counted"),
    [
        (["passed", "skipped", "skipped"], 1, 1),
        (["failed", "error", "inconclusive", "skipped"], 0, 3),  # errored and inconclusive cases did not pass
        (["skipped", "skipped"], 0, 0),  # nothing scored: no interval
    ],
)
def test_case_pass_interval_counts_every_case_but_the_skipped(statuses: list[str], passed: int, counted: int) -> None:
    assert case_pass_interval([{"status": status} for status in statuses]) == wilson_interval(passed, counted)
