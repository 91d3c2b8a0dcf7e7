"""`proctor calibrate`: do the judges' verdicts agree with human labels?

Two kinds of calibration:

* The online service's verdict: `proctor calibrate EVENTS.jsonl --judge M` scores labelled events
  (exit 0 when Kendall's tau-b reaches `--correlation-threshold`, and Cohen's kappa `--min-kappa` when
  given; 1 when not, or undefined).
* A suite's judges: `proctor calibrate RUN.json` (human verdicts added to its checks) or
  `proctor calibrate LABELS --results RUN` (a JSONL, CSV or YAML file keyed by case, trial and check):
  agreement, Cohen's kappa, Kendall's tau-b and the confusion matrix per check type, no model call
  (exit 1 when a check type's kappa is below `--min-kappa`, or undefined; 0 without `--min-kappa`).

Exit code 2: bad input or options.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import guard
from proctor.cli._help import PANEL_GATES, epilog
from proctor.cli._history import HISTORY, resolve_run
from proctor.cli._options import DEFAULT_CONCURRENCY, JSON
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
from proctor.errors import ConfigError

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "calibrate_command", "format_report", "format_suite_report"]

EPILOG = epilog(
    [
        (
            "A suite's judges against human verdicts added to a results file:",
            "proctor calibrate .results/run.json --min-kappa 0.6",
        ),
        (
            "A labels file (.jsonl, .csv, .yaml) for a stored run, as JSON:",
            "proctor calibrate labels.csv --results gpt-4-1-mini_20261101 --json",
        ),
        (
            "The online service's verdicts against labelled events:",
            "proctor calibrate events.jsonl --judge openai/gpt-4.1-mini",
        ),
    ],
    [
        (0, "agreement reaches the gates: --min-kappa; for service events, tau-b too"),
        (1, "below a gate, or a gated figure undefined"),
        (2, "bad input or options (e.g. service events without --judge)"),
    ],
)


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
        f"  Cohen's kappa:     {_number(report.kappa)}"
        + ("" if report.min_kappa is None else f" (min {report.min_kappa:g})"),
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


def format_suite_report(report: Any) -> str:
    """A suite calibration as text: per check type, figures then the confusion matrix."""
    from proctor.results._calibration import JUDGE_COLUMNS, VERDICTS

    source = report.run if report.labels is None else f"{report.labels} against {report.run}"
    lines = [f"calibration of the judges of {source}"]
    for agreement in [*report.types, report.overall]:
        gate = ""
        if report.min_kappa is not None and agreement is not report.overall:
            gate = " FAIL" if agreement.check_type in report.failing else " PASS"
        lines += [
            "",
            f"  {agreement.check_type}: {agreement.compared} compared"
            + (f" ({agreement.left_out} not decided by the run: left out)" if agreement.left_out else ""),
            f"    agreement {_number(agreement.agreement)}, Cohen's kappa {_number(agreement.kappa)}{gate}, "
            f"Kendall tau-b {_number(agreement.tau)} (on {agreement.tau_on})",
            "    human \\ judge " + "".join(f"{c:>8}" for c in JUDGE_COLUMNS),
        ]
        for verdict in VERDICTS:
            row = agreement.confusion.get(verdict, {})
            lines.append(f"    {verdict:<14}" + "".join(f"{row.get(c, 0):>8}" for c in JUDGE_COLUMNS))
    if report.min_kappa is not None:
        failing = ", ".join(report.failing)
        lines += ["", f"  min kappa {report.min_kappa:g}: " + (f"FAIL ({failing})" if failing else "PASS")]
    return "\n".join(lines)


def _is_results(path: Path) -> bool:
    """Whether the argument is a Proctor results file (a suite calibration) rather than service events."""
    from proctor.results import load_run

    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        load_run(path)
    except ConfigError:
        return False
    return True


def _calibrate_suite(
    labels: Path, results: str | None, history: Path | None, min_kappa: float | None, as_json: bool
) -> None:
    from proctor.results._calibration import calibrate_run

    def run() -> Any:
        if results is None:
            return calibrate_run(labels, min_kappa=min_kappa)
        path, _ = resolve_run(results, history)
        return calibrate_run(path, labels, min_kappa=min_kappa)

    report = guard(run)
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else format_suite_report(report))
    raise typer.Exit(0 if report.passed else 1)


def calibrate_command(
    labels: Path = typer.Argument(
        ...,
        help="Labels: service events (JSON Lines, each with a human 'label': pass, review or fail); a results "
        "JSON with human verdicts ('human': pass or fail) added to its checks; or, with --results, a labels "
        "file (.jsonl, .csv, .yaml) keyed by case, trial and check.",
    ),
    results: str | None = typer.Option(
        None,
        "--results",
        envvar="PROCTOR_RESULTS",
        metavar="RUN",
        help="The run (results file or run id) a labels file refers to: calibrates the suite's judges.",
    ),
    history: Path | None = HISTORY,
    min_kappa: float | None = typer.Option(
        None,
        "--min-kappa",
        envvar="PROCTOR_MIN_KAPPA",
        min=-1,
        max=1,
        metavar="",
        rich_help_panel=PANEL_GATES,
        help="Fail (exit 1) when Cohen's kappa is below this (per check type for suite judges) or undefined.",
    ),
    correlation_threshold: float = typer.Option(
        0.3,
        "--correlation-threshold",
        envvar="PROCTOR_CORRELATION_THRESHOLD",
        min=-1,
        max=1,
        metavar="",
        rich_help_panel=PANEL_GATES,
        help="Service events: fail (exit 1) when Kendall's tau-b is below this.",
    ),
    workers: int = typer.Option(
        DEFAULT_CONCURRENCY,
        "--concurrency",
        "--workers",
        envvar=["PROCTOR_WORKERS", "PROCTOR_CONCURRENCY"],
        min=1,
        metavar="N",
        help="Service events evaluated at once.",
    ),
    as_json: bool = JSON,
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
    """Compare judges' verdicts with human labels: agreement, Cohen's kappa, Kendall's tau, confusion matrix."""
    if results is not None or _is_results(labels):
        _calibrate_suite(labels, results, history, min_kappa, as_json)
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
    report = guard(
        lambda: calibrate(
            labels, settings=settings, workers=workers, threshold=correlation_threshold, min_kappa=min_kappa
        )
    )
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else format_report(report))
    raise typer.Exit(0 if report.passed else 1)
