"""What each page shows, computed from the store and results files (the templates only lay it out)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from proctor.results import Comparison, RunSummary, StoredCase, compare_runs, wilson_interval, with_k
from proctor.results._aggregate import CASE_STATUSES
from proctor.results._charts import Point, trend_chart
from proctor.results._failures import FailureGroup, failure_groups
from proctor.results._summary import PALETTE, case_pass_interval

__all__ = ["ModelTrend", "case_url", "case_view", "compare_view", "model_trends", "pretty", "run_url", "run_view"]

TREND_RUNS = 50
"""How many of a model's newest runs its trend charts show."""

_JUDGE_EXTRA = ("verdict", "judge_score", "threshold", "raw_outputs", "prompt", "messages", "criteria", "judge")


def run_url(run_id: str) -> str:
    """The run page's path."""
    return f"/runs/{quote(run_id, safe='')}"


def case_url(run_id: str, index: int, trial: int | None = None) -> str:
    """A case page's path (with a trial's anchor)."""
    return f"{run_url(run_id)}/cases/{index}" + ("" if trial is None else f"#trial-{trial}")


def trial_rate(run: RunSummary) -> tuple[float | None, tuple[float, float] | None]:
    """The run's trial pass rate (errored trials left out) and its 95 % Wilson interval."""
    scored = run.trials_passed + run.trials_failed
    return (run.trials_passed / scored if scored else None), wilson_interval(run.trials_passed, scored)


@dataclass(slots=True)
class ModelTrend:
    """One model's runs over time: the newest figures and three charts."""

    model: str
    runs: list[RunSummary]
    """Newest first."""
    charts: list[str] = field(default_factory=list)


def model_trends(runs: list[RunSummary]) -> list[ModelTrend]:
    """Runs grouped by model (the model with the newest run first), each with its trend charts."""
    by_model: dict[str, list[RunSummary]] = {}
    for run in runs:  # newest first
        by_model.setdefault(run.model or "(no model)", []).append(run)
    trends = []
    for number, (model, own) in enumerate(by_model.items()):
        color = PALETTE[number % len(PALETTE)]
        oldest_first = list(reversed(own[:TREND_RUNS]))
        rates, costs, latencies = [], [], []
        for run in oldest_first:
            label, href = f"{run.run_id} ({run.started_at})", run_url(run.run_id)
            rate, interval = trial_rate(run)
            low, high = interval or (None, None)
            rates.append(Point(label, rate, low, high, href))
            costs.append(Point(label, run.cost_usd, href=href))
            latencies.append(Point(label, run.p50_latency_ms, href=href))
        trend = ModelTrend(model, own)
        trend.charts = [
            trend_chart(rates, title="Trial pass rate, 95% Wilson interval", color=color, percent=True),
            trend_chart(costs, title="Cost per run (USD)", color=color, unit=" $"),
            trend_chart(latencies, title="Median reply latency (ms)", color=color, unit=" ms"),
        ]
        trends.append(trend)
    return trends


@dataclass(slots=True)
class CaseRow:
    """A case on the run page."""

    index: int
    name: str
    suite: str
    status: str
    tags: list[str]
    passed: int
    scored: int
    trials: int
    interval: tuple[float, float] | None
    avg_score: float | None
    failed_checks: list[str]
    """The names of the checks that failed or errored in any trial."""
    first_bad_trial: int | None
    """The first failed or errored trial (the row's link opens it)."""
    text: str
    """What the text filter searches: name, suite, tags, description, reasons."""
    reason: str | None = None
    """Why the case has its status: a skipped case's (nothing scored), an incomplete one's (how many of its
    planned trials ran before the run stopped)."""
    planned: int | None = None
    """The trials an incomplete case planned (`planned_trials`); `None` when every planned trial ran."""
    unrun: list[int] = field(default_factory=list)
    """The numbers of the planned trials that never ran (an incomplete case's)."""


def _case_row(index: int, case: dict[str, Any]) -> CaseRow:
    trials = case.get("trials") or []
    passed = sum(1 for t in trials if t.get("status") == "passed")
    scored = sum(1 for t in trials if t.get("status") in ("passed", "failed"))
    failed_checks: list[str] = []
    reasons: list[str] = []
    for trial in trials:
        for check in trial.get("checks") or []:
            if check.get("status") in ("failed", "error"):
                if check["name"] not in failed_checks:
                    failed_checks.append(check["name"])
                reasons.append(check.get("reason") or "")
        reasons += [trial.get("error") or "", trial.get("reason") or ""]
    bad = next((t["trial"] for t in trials if t.get("status") in ("failed", "error")), None)
    text = " ".join([case["name"], case.get("suite") or "", *(case.get("tags") or []), case.get("description") or ""])
    planned = case.get("planned_trials")
    ran = {t.get("trial") for t in trials}
    reason = case.get("reason")
    return CaseRow(
        index,
        case["name"],
        case.get("suite") or "",
        case.get("status") or "error",
        list(case.get("tags") or []),
        passed,
        scored,
        len(trials),
        wilson_interval(passed, scored),
        case.get("avg_score"),
        failed_checks,
        bad,
        " ".join([text, reason or "", *reasons]).lower(),
        reason,
        planned,
        [n for n in range(1, (planned or 0) + 1) if n not in ran],
    )


def run_view(run: RunSummary, data: dict[str, Any]) -> dict[str, Any]:
    """The run page's context: what failed (grouped by check, then case), the cases, the figures."""
    data = with_k(data, (data.get("summary") or {}).get("k"))  # pass@k and pass^k, also for older files
    rows = [_case_row(i, case) for i, case in enumerate(data.get("cases") or [])]
    failures: list[FailureGroup] = failure_groups([(run.label, data)])
    rate, interval = trial_rate(run)
    summary = data.get("summary") or {}
    return {
        "run": run,
        "data": data,
        "rows": rows,
        "failures": failures,
        "checks": sorted({name for row in rows for name in row.failed_checks}),
        "statuses": CASE_STATUSES,  # the status filter's choices: every case status, `incomplete` too
        "trial_rate": rate,
        "trial_interval": interval,
        "case_interval": case_pass_interval(data.get("cases") or []),  # the JSON's pass_rate_ci: skipped left out
        "costs": summary.get("costs") or {},
        "pass_at_k": summary.get("pass_at_k"),
        "pass_hat_k": summary.get("pass_hat_k"),
    }


def _judge_view(check: dict[str, Any]) -> dict[str, Any] | None:
    """A judged check's judge, prompt, verdict and raw outputs, where recorded."""
    details = check.get("details") or {}
    if not any(key in details for key in _JUDGE_EXTRA):
        return None
    return {
        "judge": details.get("judge") or {},
        "criteria": details.get("criteria") or [],
        "prompt": details.get("prompt") or details.get("messages"),
        "verdict": details.get("verdict"),
        "score": details.get("judge_score"),
        "threshold": details.get("threshold"),
        "raw_outputs": [str(o) for o in details.get("raw_outputs") or []],
    }


def _other_details(check: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (check.get("details") or {}).items() if k not in _JUDGE_EXTRA}


def case_view(run: RunSummary, data: dict[str, Any], index: int) -> dict[str, Any]:
    """The case page's context: every trial with its transcript, tool calls, checks and judge verdicts.

    Raises:
        IndexError: The run has no case at `index`.
    """
    cases = data.get("cases") or []
    if not 0 <= index < len(cases):
        raise IndexError(index)
    case = cases[index]
    trials = []
    for trial in case.get("trials") or []:
        checks = []
        for check in trial.get("checks") or []:
            checks.append({"data": check, "judge": _judge_view(check), "details": _other_details(check)})
        extra = {k: v for k, v in trial.items() if k not in _TRIAL_KEYS}
        trials.append({"data": trial, "checks": checks, "extra": extra})
    return {"run": run, "case": case, "index": index, "row": _case_row(index, case), "trials": trials}


_TRIAL_KEYS = {
    "trial", "status", "passed", "score", "error", "error_type", "warnings", "retries", "duration_ms", "tokens",
    "costs", "trace_ids", "turns", "checks", "arm", "reason",
}  # fmt: skip


def pretty(value: Any) -> str:
    """JSON for a `<pre>` block."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def compare_view(
    a: RunSummary, a_cases: list[StoredCase], b: RunSummary, b_cases: list[StoredCase], *, show_all: bool
) -> dict[str, Any]:
    """The compare page's context: `compare_runs`' paired statistics, and each case with links into both runs."""
    comparison: Comparison = compare_runs(a.run_id, a_cases, b.run_id, b_cases)
    a_index = {case.key: i for i, case in enumerate(a_cases)}
    b_index = {case.key: i for i, case in enumerate(b_cases)}
    rows = []
    for case in comparison.cases:
        (rate_a, rate_b), (score_a, score_b) = case.pass_rates, case.scores
        moved = case.change != "unchanged" or bool(case.flaky) or rate_a != rate_b or score_a != score_b
        moved = moved or bool(case.check_changes)
        rows.append(
            {
                "case": case,
                "moved": moved,
                "rates": (rate_a, rate_b),
                "scores": (score_a, score_b),
                "a_url": None if case.a is None else case_url(a.run_id, a_index[case.a.key]),
                "b_url": None if case.b is None else case_url(b.run_id, b_index[case.b.key]),
            }
        )
    worse, better = comparison.discordant
    return {
        "a": a,
        "b": b,
        "comparison": comparison,
        "rows": rows,
        "hidden": sum(1 for row in rows if not row["moved"]),
        "show_all": show_all,
        "worse": worse,
        "better": better,
    }
