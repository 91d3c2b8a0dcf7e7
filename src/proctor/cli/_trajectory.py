"""The console's trajectory summary: one line per case with `journey` checks, over its trials."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from proctor.results import CaseResult

__all__ = ["journey_lines", "journey_summary"]


def journey_summary(case: CaseResult) -> dict[str, Any] | None:
    """Aggregate the watsonx metrics of a case's `journey` checks over its trials (`None`: it has none).

    Journey success is the fraction of trials whose journey succeeded; precision, recall and response
    time are averaged over the trials; call counts are summed.
    """
    metrics = [
        check.details["metrics"]
        for trial in case.trials
        for check in trial.checks
        if check.type == "journey" and "metrics" in (check.details or {})
    ]
    if not metrics:
        return None
    count = len(metrics)
    times = [m["avg_response_time_ms"] for m in metrics if m.get("avg_response_time_ms") is not None]
    texts = [m["text_match"] for m in metrics if m.get("text_match") is not None]
    return {
        "journeys": count,
        "journey_success": sum(1 for m in metrics if m["journey_success"]) / count,
        "tool_call_precision": sum(m["tool_call_precision"] for m in metrics) / count,
        "tool_call_recall": sum(m["tool_call_recall"] for m in metrics) / count,
        "correct_tool_calls": sum(m["correct_tool_calls"] for m in metrics),
        "expected_tool_calls": sum(m["expected_tool_calls"] for m in metrics),
        "incorrect_parameter_calls": sum(m["incorrect_parameter_calls"] for m in metrics),
        "text_match": sum(texts) / len(texts) if texts else None,
        "avg_response_time_ms": sum(times) / len(times) if times else None,
    }


def journey_lines(cases: Iterable[CaseResult]) -> list[str]:
    """One console line per case with journeys.

    E.g. `trajectory hr_agent_timeoff: journey success 3/3, precision 1.00, recall 1.00, correct calls 2/2, ...`.
    """
    lines = []
    for case in cases:
        summary = journey_summary(case)
        if summary is None:
            continue
        count = summary["journeys"]
        succeeded = round(summary["journey_success"] * count)
        line = (
            f"trajectory {case.name}: journey success {succeeded}/{count}, "
            f"precision {summary['tool_call_precision']:.2f}, recall {summary['tool_call_recall']:.2f}, "
            f"correct calls {_per(summary['correct_tool_calls'], count)}/{_per(summary['expected_tool_calls'], count)}"
            f", wrong parameters {_per(summary['incorrect_parameter_calls'], count)} per trial"
        )
        if summary["text_match"] is not None:
            line += f", text match {summary['text_match']:.0%}"
        if summary["avg_response_time_ms"] is not None:
            line += f", avg response {summary['avg_response_time_ms']:.0f} ms"
        lines.append(line)
    return lines


def _per(total: int, count: int) -> str:
    return f"{round(total / count, 2):g}"
