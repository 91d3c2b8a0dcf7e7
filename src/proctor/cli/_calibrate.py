"""`proctor calibrate LABELS.jsonl`: do the pipeline's verdicts agree with human labels?

Exit codes: 0 Kendall's tau-b reaches `--correlation-threshold`; 1 it does not, or it is undefined (too
few compared events, or one side always gives the same verdict); 2 bad input or options.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import guard
from proctor.cli._serve import (
    CACHE_DIR,
    EARLY_EXIT,
    JUDGE,
    JUDGE_API_KEY,
    JUDGE_BASE_URL,
    JUDGE_CONCURRENCY,
    JUDGE_TIMEOUT,
    JUDGE_WEIGHT,
    JUDGES,
    PRECHECK_WEIGHT,
    judge_settings,
)

__all__ = ["calibrate_command", "format_report"]


def _number(value: float | None, digits: int = 3) -> str:
    return "undefined" if value is None else f"{value:.{digits}f}"


def format_report(report: Any) -> str:
    """The report as text: figures, then the confusion matrix (human rows, pipeline columns)."""
    from proctor.service._calibration import LABELS

    columns = [*LABELS, "error"]
    lines = [
        f"calibration of {report.path}",
        f"  compared events:   {report.compared}"
        + (f" ({report.errors} with verdict 'error' left out)" if report.errors else ""),
        f"  agreement:         {_number(report.agreement)}",
        f"  Kendall tau-b:     {_number(report.tau)} (threshold {report.threshold:g}): "
        + ("PASS" if report.passed else "FAIL"),
        "",
        "  human \\ pipeline " + "".join(f"{c:>8}" for c in columns),
    ]
    for label in LABELS:
        row = report.confusion.get(label, {})
        lines.append(f"  {label:<17}" + "".join(f"{row.get(c, 0):>8}" for c in columns))
    for error in report.invalid[:10]:
        lines.append(f"  skipped {error}")
    if len(report.invalid) > 10:
        lines.append(f"  ... and {len(report.invalid) - 10} more skipped lines")
    return "\n".join(lines)


def calibrate_command(
    labels: Path = typer.Argument(..., help="JSON Lines of events, each with a human 'label': pass, review or fail."),
    correlation_threshold: float = typer.Option(
        0.3,
        "--correlation-threshold",
        envvar="PROCTOR_CORRELATION_THRESHOLD",
        min=-1.0,
        max=1.0,
        help="Fail (exit 1) when Kendall's tau-b is below this.",
    ),
    workers: int = typer.Option(8, "--workers", envvar="PROCTOR_WORKERS", min=1, help="Events evaluated at once."),
    as_json: bool = typer.Option(False, "--json", envvar="PROCTOR_JSON", help="Print the report as JSON."),
    judge: str | None = JUDGE,
    judge_base_url: str | None = JUDGE_BASE_URL,
    judge_api_key: str | None = JUDGE_API_KEY,
    judges: str = JUDGES,
    judge_timeout: float = JUDGE_TIMEOUT,
    judge_concurrency: int = JUDGE_CONCURRENCY,
    early_exit_threshold: float = EARLY_EXIT,
    precheck_weight: float = PRECHECK_WEIGHT,
    judge_weight: float = JUDGE_WEIGHT,
    cache_dir: Path | None = CACHE_DIR,
) -> None:
    """Compare the pipeline's verdicts with human labels: agreement, confusion matrix, Kendall's tau."""
    from proctor.service._calibration import calibrate

    settings = judge_settings(
        judge=judge,
        judge_base_url=judge_base_url,
        judge_api_key=judge_api_key,
        judges=judges,
        judge_timeout=judge_timeout,
        judge_concurrency=judge_concurrency,
        early_exit_threshold=early_exit_threshold,
        precheck_weight=precheck_weight,
        judge_weight=judge_weight,
        cache_dir=cache_dir,
    )
    report = guard(lambda: calibrate(labels, settings=settings, workers=workers, threshold=correlation_threshold))
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else format_report(report))
    raise typer.Exit(0 if report.passed else 1)
