"""`evals-report.md`: Lobu's comparison report, from several runs (usually the latest per model).

The layout is Lobu's (`# Eval Report`, `## Model Comparison`, `## Overall Scores`, `## Rubric Details`,
`## Failed Trials` with trace ids), with what Proctor adds: a cost column, errored trials beside failed
ones, skipped cases with why nothing was scored, incomplete cases with how many of their trials ran, tool
calls in transcripts, and rubric criteria counted over every trial instead of the first.
"""

from __future__ import annotations

import json
import re
from typing import Any

from proctor.results._summary import Report, ReportRun

__all__ = ["render_markdown"]

AGENT_TEXT_LIMIT = 500
"""Characters of each agent reply shown in a failed trial (Lobu's limit)."""

_VERDICT = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "skipped": "SKIP",
    "inconclusive": "INCONCLUSIVE",
    "incomplete": "INCOMPLETE",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{round(value * 100)}%"


def _num(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _clip(text: str, limit: int = AGENT_TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _comparison(report: Report) -> list[str]:
    lines = [
        "## Model Comparison",
        "",
        "| Eval | " + " | ".join(_cell(r.label) for r in report.runs) + " |",
        "| --- | " + " | ".join("---" for _ in report.runs) + " |",
    ]
    for case in report.cases:
        cells = []
        for run in report.runs:
            data = case.by_run.get(run.label)
            if data is None:
                cells.append("-")
                continue
            verdict = _VERDICT.get(data.get("status", ""), "ERROR")
            rate = f"{_pct(data.get('pass_rate'))}{_ci(data.get('pass_rate_ci'))}"
            cells.append(f"{verdict} {_num(data.get('avg_score'))} ({rate})")
        lines.append(f"| {_cell(case.name)} | " + " | ".join(cells) + " |")
    return lines


def _overall(report: Report) -> list[str]:
    lines = [
        "## Overall Scores",
        "",
        "| Model | Pass Rate | Avg Score | p50 Latency | Total Tokens | Cost | pass@k | pass^k |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in report.runs:
        s = run.summary
        latency = "-" if s.p50_latency_ms is None else f"{round(s.p50_latency_ms)}ms"
        cost = "-" if s.cost_usd is None else f"${s.cost_usd:.4f}"
        rate = f"{_pct(s.pass_rate)}{_ci(run.data['summary'].get('pass_rate_ci'))}"
        lines.append(
            f"| {_cell(run.label)} | {rate} | {_num(s.avg_score)} | {latency} | {s.tokens:,} | {cost} | "
            + _pass_k(run.data["summary"])
        )
    return [*lines, "", STATISTICS_NOTE]


STATISTICS_NOTE = (
    "Pass rates: of a case, passed / scored trials (errored ones left out); of a model, passed / cases. "
    "In brackets: the 95% Wilson score interval. pass@k: the chance that at least one of k trials passes; "
    "pass^k: that all k pass (unbiased estimates from each case's n scored trials, averaged over the cases; "
    "k = n unless `--k` is given)."
)
"""Said under the overall table, so a reader knows what the brackets and k mean."""


def _ci(interval: list[float] | None) -> str:
    """` [21-94%]`: a 95 % Wilson interval; empty when there is none."""
    return "" if not interval else f" [{round(interval[0] * 100)}-{round(interval[1] * 100)}%]"


def _pass_k(summary: dict[str, Any]) -> str:
    """The pass@k and pass^k cells (with k when the run chose one) and the row's end."""
    k = "" if summary.get("k") is None else f" (k={summary['k']})"
    at, hat = summary.get("pass_at_k"), summary.get("pass_hat_k")
    return f"{_num(at)}{k if at is not None else ''} | {_num(hat)}{k if hat is not None else ''} |"


def _rubric_details(run: ReportRun) -> list[str]:
    lines: list[str] = []
    for case in run.data["cases"]:
        criteria: dict[str, list[tuple[bool, str]]] = {}
        for trial in case.get("trials") or []:
            for check in trial.get("checks") or []:
                for criterion in (check.get("details") or {}).get("criteria") or []:
                    verdicts = criteria.setdefault(criterion["name"], [])
                    verdicts.append((bool(criterion.get("passed")), criterion.get("explanation", "")))
        if not criteria:
            continue
        lines += ["", f"### {case['name']}", ""]
        for name, verdicts in criteria.items():
            met = sum(1 for ok, _ in verdicts if ok)
            counted = f" ({met}/{len(verdicts)} trials)" if len(verdicts) > 1 else ""
            if met == len(verdicts):
                lines.append(f"- **{name}**: PASS{counted}")
            else:
                explanation = next(text for ok, text in verdicts if not ok)
                lines.append(f"- **{name}**: FAIL{counted} -- {explanation}")
    return ["", f"## Rubric Details: {run.label}", *lines] if lines else []


def _tool_call(call: dict[str, Any]) -> str:
    arguments = json.dumps(call.get("arguments") or {}, ensure_ascii=False, sort_keys=True)
    return f"`{call['name']}({_clip(arguments, 200)})`"


def _failed_trial(case: dict[str, Any], trial: dict[str, Any]) -> list[str]:
    score = "error" if trial.get("score") is None else f"score: {trial['score']:.2f}"
    if trial["status"] == "error" and trial.get("score") is not None:
        score = f"error, score: {trial['score']:.2f}"
    lines = ["", f"### {case['name']} -- Trial {trial['trial']} ({score})", ""]
    if trial.get("trace_id"):  # the trial's own trace (`proctor run --otel`), linked with `--trace-url`
        shown = f"`{trial['trace_id']}`"
        lines += [
            f"**Trace:** [{shown}]({trial['trace_url']})" if trial.get("trace_url") else f"**Trace:** {shown}",
            "",
        ]
    if trial.get("trace_ids"):
        lines += ["**Trace IDs:** " + ", ".join(f"`{t}`" for t in trial["trace_ids"]), ""]
    if trial.get("error"):
        lines += [f"**Error:** {trial['error']}", ""]
    for message in trial.get("turns") or []:
        if message["role"] == "user":
            lines += [f"**User:** {message['content']}", ""]
        elif message["role"] == "assistant":
            lines += [f"**Agent:** {_clip(message['content'])}", ""]
            if message.get("tool_calls"):
                lines += ["**Tools:** " + ", ".join(_tool_call(c) for c in message["tool_calls"]), ""]
    problems = [c for c in trial.get("checks") or [] if c["status"] in ("failed", "error") and c["type"] != "rubric"]
    for check in problems:
        turn = "" if check.get("turn") is None else f" (turn {check['turn'] + 1})"
        lines.append(f"- **{check['type']}**{turn}: {_VERDICT[check['status']]} -- {check.get('reason', '')}")
    rubric = [
        criterion
        for check in trial.get("checks") or []
        if check["type"] == "rubric"
        for criterion in (check.get("details") or {}).get("criteria") or []
        if not criterion.get("passed")
    ]
    rubric_errors = [c for c in trial.get("checks") or [] if c["type"] == "rubric" and c["status"] == "error"]
    if rubric or rubric_errors:
        lines += ["", "**Rubric failures:**"]
        lines += [f"- **{c['name']}**: {c.get('explanation', '')}" for c in rubric]
        lines += [f"- **error**: {c.get('reason', '')}" for c in rubric_errors]
    return lines


def _failed_trials(run: ReportRun) -> list[str]:
    lines: list[str] = []
    for case, trial in run.trials():
        if trial["status"] in ("failed", "error"):
            lines += _failed_trial(case, trial)
    return ["", f"## Failed Trials: {run.label}", *lines] if lines else []


def _skipped_cases(run: ReportRun) -> list[str]:
    """Cases in which nothing was scored, with why: a skip is never a silent pass."""
    lines = [
        f"- **{_cell(case['name'])}**: {_cell(case.get('reason') or 'no reason recorded')}"
        for case in run.data["cases"]
        if case.get("status") == "skipped"
    ]
    return ["", f"## Skipped: {run.label}", "", *lines] if lines else []


def _incomplete_cases(run: ReportRun) -> list[str]:
    """Cases the run stopped before all their planned trials ran, with how many did: never a silent pass."""
    lines = [
        f"- **{_cell(case['name'])}**: {_cell(case.get('reason') or 'not every planned trial ran')}"
        for case in run.data["cases"]
        if case.get("status") == "incomplete"
    ]
    return ["", f"## Incomplete: {run.label}", "", *lines] if lines else []


_TEMPLATE_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][\w.]*)[^}]*\}\}")
"""A variable of a target's URL template (`{{ session_id }}`), filled in per session."""


def render_markdown(report: Report) -> str:
    """Render `evals-report.md`."""
    lines = [
        "# Eval Report",
        "",
        f"Generated: {report.generated_at}",
        "Agent: `" + _TEMPLATE_VARIABLE.sub(r"<\1>", report.agents) + "`",  # URL templates as <placeholders>
        "",
        *_comparison(report),
        "",
        *_overall(report),
    ]
    for title, text in report.notes:
        lines += ["", f"## {title}", "", "```text", text, "```"]
    for run in report.runs:
        lines += _rubric_details(run)
    for run in report.runs:
        lines += _skipped_cases(run)
    for run in report.runs:
        lines += _incomplete_cases(run)
    for run in report.runs:
        lines += _failed_trials(run)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)) + "\n"
