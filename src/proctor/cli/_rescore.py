"""`proctor rescore RUN`: re-run checks over a stored run's transcripts, without contacting the agent.

Writes a new run linked to the original (`rescored_from`) and exits like `proctor run` does on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from proctor.cli._common import fail, guard
from proctor.cli._history import HISTORY, missing_file, resolve_run, store_path
from proctor.cli._options import (
    ALLOW_SKIPPED,
    CACHE_DIR,
    CI,
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
__all__ = ["rescore_command"]


def rescore_command(
    run: str = typer.Argument(..., help="The run to re-score: a run id or results file."),
    checks: list[str] = typer.Option(
        [],
        "--checks",
        envvar="PROCTOR_CHECKS",
        help="Re-run only these checks, by type (llm-rubric, rubric, ...) or name (repeat); others are kept.",
    ),
    judge: str | None = JUDGE,
    history: Path | None = HISTORY,
    results_dir: Path | None = typer.Option(
        None, "--results-dir", envvar="PROCTOR_RESULTS_DIR", help="Where the new run goes (default: the original's)."
    ),
    concurrency: int = typer.Option(8, "--concurrency", envvar="PROCTOR_CONCURRENCY", min=1, help="Trials at once."),
    judge_concurrency: int | None = JUDGE_CONCURRENCY,
    judge_rpm: int | None = JUDGE_RPM,
    judge_timeout: float | None = JUDGE_TIMEOUT,
    no_cache: bool = NO_CACHE,
    cache_dir: Path | None = CACHE_DIR,
    budget: float | None = typer.Option(
        None, "--budget", envvar="PROCTOR_BUDGET", help="Stop judging past this USD spend."
    ),
    prices: Path | None = PRICES,
    strict: bool = STRICT,
    k: int | None = K,
    ci: bool = CI,
    allow_skipped: bool = ALLOW_SKIPPED,
    verbose: bool = typer.Option(False, "--verbose", "-v", envvar="PROCTOR_VERBOSE", help="Show every check."),
) -> None:
    """Re-run checks over a stored run's transcripts (no agent calls) and record a new, linked run."""
    from proctor.cli._console import exit_code, print_results, summary_json
    from proctor.run import RunOptions, rescore_sync

    path, stored = guard(lambda: resolve_run(run, history))
    if stored is not None and not path.is_file():
        fail(str(missing_file(path, stored.run_id)))
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
    if ci:
        summary = summary_json(result, outcome.path, fail_on_skipped=fail_on_skipped)
        summary["rescored_from"] = result.rescored_from
        typer.echo(json.dumps(summary, indent=2))
    else:
        print_results(result, outcome.path, None, verbose=verbose)
        typer.echo(f"rescored from {result.rescored_from} ({path})")
    raise typer.Exit(exit_code(result, fail_on_skipped=fail_on_skipped))
