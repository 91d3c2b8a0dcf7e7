"""`proctor rescore RUN`: re-run checks over a stored run's transcripts, without contacting the agent.

Writes a new run linked to the original (`rescored_from`) and exits like `proctor run` does on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from proctor.cli._common import fail, guard
from proctor.cli._help import PANEL_OUTPUT, PANEL_RUN, epilog
from proctor.cli._history import HISTORY, missing_file, resolve_run, store_path
from proctor.cli._options import (
    ALLOW_SKIPPED,
    CACHE_DIR,
    CI,
    CONCURRENCY,
    JSON,
    JUDGE,
    JUDGE_CONCURRENCY,
    JUDGE_RPM,
    JUDGE_TIMEOUT,
    NO_CACHE,
    PRICES,
    STRICT,
    K,
    judging,
)

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "rescore_command"]

EPILOG = epilog(
    [
        (
            "Re-judge a stored run with another judge (the agent is not called):",
            "proctor rescore gpt-4-1-mini_20261101 --judge openai/gpt-4.1",
        ),
        (
            "Re-run only the rubric checks, keep the others' verdicts:",
            "proctor rescore .results/run.json --checks llm-rubric",
        ),
        ("In CI, the new run's JSON summary on stdout:", "proctor rescore RUN --judge ollama/llama3.1 --ci"),
    ],
    [
        (0, "every case passed (skipped ones too, unless --ci)"),
        (1, "a case failed"),
        (2, "the run or its file not found, bad input or usage; under --ci, an LLM-judged check has no judge"),
        (3, "could not complete: the budget spent, or the judge failed to start"),
        (4, "none failed or errored, but a case was inconclusive (simulated user)"),
        (5, "none failed, but a case (a check) errored"),
        (6, "under --ci without --allow-skipped: a case skipped (nothing scored)"),
    ],
)


def rescore_command(
    run: str = typer.Argument(..., help="The run to re-score: a run id or results file."),
    checks: list[str] = typer.Option(
        [],
        "--checks",
        envvar="PROCTOR_CHECKS",
        metavar="CHECK",
        help="Re-run only these checks, by type (llm-rubric, rubric, ...) or name (repeat); others are kept.",
    ),
    judge: str | None = JUDGE,
    history: Path | None = HISTORY,
    results_dir: Path | None = typer.Option(
        None,
        "--results-dir",
        envvar="PROCTOR_RESULTS_DIR",
        metavar="DIR",
        rich_help_panel=PANEL_OUTPUT,
        help="Where the new run goes (default: the original's).",
    ),
    concurrency: int = CONCURRENCY,
    judge_concurrency: int | None = JUDGE_CONCURRENCY,
    judge_rpm: int | None = JUDGE_RPM,
    judge_timeout: float | None = JUDGE_TIMEOUT,
    no_cache: bool = NO_CACHE,
    cache_dir: Path | None = CACHE_DIR,
    budget: float | None = typer.Option(
        None,
        "--budget",
        envvar="PROCTOR_BUDGET",
        metavar="USD",
        rich_help_panel=PANEL_RUN,
        help="Stop judging once this much is spent.",
    ),
    prices: Path | None = PRICES,
    strict: bool = STRICT,
    k: int | None = K,
    ci: bool = CI,
    as_json: bool = JSON,
    allow_skipped: bool = ALLOW_SKIPPED,
    verbose: bool = typer.Option(
        False, "--verbose", "-v", envvar="PROCTOR_VERBOSE", rich_help_panel=PANEL_OUTPUT, help="Show every check."
    ),
) -> None:
    """Re-run checks over a stored run's transcripts (no agent calls) and record a new, linked run."""
    from proctor.cli._console import exit_code, print_results, summary_json
    from proctor.run import RunOptions, rescore_sync

    path, stored = guard(lambda: resolve_run(run, history))
    if stored is not None and not path.is_file():
        fail(str(missing_file(path, stored.run_id)))
    if ci and not allow_skipped and judge is None:
        _check_judges_configured(path, checks)
    shared = judging(
        judge=judge, judge_concurrency=judge_concurrency, judge_rpm=judge_rpm, judge_timeout=judge_timeout,
        no_cache=no_cache, cache_dir=cache_dir, prices=prices, strict=strict, k=k,
    )  # fmt: skip
    options = guard(
        lambda: RunOptions(
            concurrency=concurrency,
            results_dir=results_dir,
            budget=budget,
            history=guard(lambda: store_path(history)),  # the new run lands in the store it was read from
            **shared,
        )
    )
    outcome = guard(lambda: rescore_sync(path, options, checks=checks))
    result = outcome.result
    fail_on_skipped = ci and not allow_skipped
    if ci or as_json:
        summary = summary_json(result, outcome.path, fail_on_skipped=fail_on_skipped)
        summary["rescored_from"] = result.rescored_from
        typer.echo(json.dumps(summary, indent=2))
    else:
        print_results(result, outcome.path, None, verbose=verbose)
        typer.echo(f"rescored from {result.rescored_from} ({path})")
    raise typer.Exit(exit_code(result, fail_on_skipped=fail_on_skipped))


def _check_judges_configured(path: Path, checks: list[str]) -> None:
    """Under `--ci` with no `--judge`: exit 2 at start when a check to re-run is LLM-judged and has no judge.

    As `proctor run --ci` does (`check_judges_configured`): re-scored without a judge, such a check would
    be skipped and the trial scored on the others, turning a run whose judged check failed into a pass.
    Only what the re-score re-runs counts: the run's cases still in their suites, without those kept as
    recorded (scenario scripts and simulated users), and only the checks `--checks` selects.
    """
    from proctor.cli._run import check_judges_configured
    from proctor.results import load_run
    from proctor.run.rescore import _load_cases, _selector

    data = guard(lambda: load_run(path))
    suite_cases = guard(lambda: _load_cases(data, path))
    selected = guard(lambda: _selector(checks, data, suite_cases.values()))
    keys = dict.fromkeys(f"{c.get('file', '')}::{c['name']}" for c in data["cases"])
    rescored = [case for key in keys if (case := suite_cases.get(key)) and not case.script and case.simulate is None]
    check_judges_configured(rescored, None, selected)
