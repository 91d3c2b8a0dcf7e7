"""`proctor view`'s run page: the case pass rate's interval is the results JSON's `pass_rate_ci` (skipped cases
left out), served over HTTP on a real loopback port from a real history store."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from proctor.checks import CheckResult
from proctor.results import CaseResult, HistoryStore, RunResult, RunSummary, TrialResult, wilson_interval, write_json
from proctor.view import create_app
from proctor.view._pages import run_view
from servers._serve import serve_app

RUN_ID = "mixed_20261104T090000Z"
DASH = "\u2013"
"""The en dash between an interval's bounds in HTML."""
STATUSES = ["passed", "passed", "failed", "error", "error", "skipped"]
"""2 passed, 1 failed, 2 errored, 1 skipped: 2 of the 5 cases that were scored passed."""


def mixed_run() -> dict[str, Any]:
    """A run with one single-trial case of each status, written by Proctor's own results model."""
    cases = []
    for index, status in enumerate(STATUSES):
        checks = []
        if status in ("passed", "failed"):
            checks = [CheckResult("contains x", "contains", status, float(status == "passed"), 1.0, "why", 0)]
        trial = TrialResult(
            case_key=f"s.yaml::case-{index}",
            trial=1,
            status=status,
            score=float(status == "passed") if checks else None,
            checks=checks,
            error="the agent is down" if status == "error" else None,
            reason="nothing was scored: the case has no checks" if status == "skipped" else None,
        )
        cases.append(CaseResult(f"case-{index}", "s", "s.yaml", [], 1.0, [trial]))
    run = RunResult(
        run_id=RUN_ID,
        started_at="2026-11-04T09:00:00+00:00",
        finished_at="2026-11-04T09:00:01+00:00",
        model="openai/gpt-4.1-mini",
        target="python proctor.demo:respond",
        cases=cases,
        planned_trials=len(STATUSES),
    )
    return run.to_dict()


def test_the_run_views_case_interval_is_the_jsons() -> None:
    data = mixed_run()
    assert [case["status"] for case in data["cases"]] == STATUSES
    interval = run_view(RunSummary.from_data(data), data)["case_interval"]
    assert interval == pytest.approx(tuple(data["summary"]["pass_rate_ci"]), abs=1e-6)
    assert interval == pytest.approx(wilson_interval(2, 5)) and interval != pytest.approx(wilson_interval(2, 6))


def test_the_run_page_shows_the_jsons_case_interval(tmp_path: Path) -> None:
    results = tmp_path / ".results"
    results.mkdir()
    write_json(results / f"{RUN_ID}.json", mixed_run())
    history = tmp_path / ".proctor" / "history.db"
    with HistoryStore(history) as store:
        assert store.scan(results) == 1
    with serve_app(create_app(history)) as base:
        html = httpx.get(f"{base}/runs/{RUN_ID}", timeout=10).text
    cases_passed = re.search(r"<dt>Cases passed</dt><dd>(.*?)</dd>", html)
    assert cases_passed is not None
    assert "40%" in cases_passed.group(1) and f"[12%{DASH}77%]" in cases_passed.group(1)  # Wilson for 2 of 5
    assert f"[10%{DASH}70%]" not in html  # not 2 of all 6 cases
