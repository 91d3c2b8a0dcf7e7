"""`proctor rescore RUN`: re-run checks over a stored run's transcripts, without contacting the agent.

Writes a new run linked to the original (`rescored_from`) and exits like `proctor run` does on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from proctor.cli._common import fail, guard
from proctor.cli._history import HISTORY_HELP, missing_file, resolve_run

__all__ = ["rescore_command"]


def rescore_command(
    run: str = typer.Argument(..., help="The run to re-score: a run id or results file."),
    checks: list[str] = typer.Option(
        [],
        "--checks",
        envvar="PROCTOR_CHECKS",
        help="Re-run only these checks, by type (llm-rubric, rubric, ...) or name (repeat); others are kept.",
    ),
    judge: str | None = typer.Option(
        None, "--judge", envvar="PROCTOR_JUDGE_MODEL", help="Judge model, provider/model (overrides the suites')."
    ),
    history: Path | None = typer.Option(None, "--history", envvar="PROCTOR_HISTORY", help=HISTORY_HELP),
    results_dir: Path | None = typer.Option(
        None, "--results-dir", envvar="PROCTOR_RESULTS_DIR", help="Where the new run goes (default: the original's)."
    ),
    concurrency: int = typer.Option(8, "--concurrency", envvar="PROCTOR_CONCURRENCY", min=1, help="Trials at once."),
    judge_concurrency: int | None = typer.Option(
        None, "--judge-concurrency", envvar="PROCTOR_JUDGE_CONCURRENCY", min=1, help="Judge calls in flight."
    ),
    judge_rpm: int | None = typer.Option(
        None, "--judge-rpm", envvar="PROCTOR_JUDGE_RPM", min=1, help="Judge requests per minute."
    ),
    no_cache: bool = typer.Option(
        False, "--no-cache", envvar="PROCTOR_NO_CACHE", help="Do not read or write the judge call cache."
    ),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", envvar="PROCTOR_CACHE_DIR", help="Model call cache (default .proctor/cache)."
    ),
    budget: float | None = typer.Option(
        None, "--budget", envvar="PROCTOR_BUDGET", help="Stop judging past this USD spend."
    ),
    prices: Path | None = typer.Option(
        None, "--prices", envvar="PROCTOR_PRICES", help="JSON/YAML price table overriding the bundled one."
    ),
    ci: bool = typer.Option(False, "--ci", envvar="PROCTOR_CI", help="Print only the JSON summary to stdout."),
    verbose: bool = typer.Option(False, "--verbose", "-v", envvar="PROCTOR_VERBOSE", help="Show every check."),
) -> None:
    """Re-run checks over a stored run's transcripts (no agent calls) and record a new, linked run."""
    from proctor.cli._console import exit_code, print_results, summary_json
    from proctor.results import resolve_history_path
    from proctor.run import RunOptions, rescore_sync

    path, stored = guard(lambda: resolve_run(run, history))
    if stored is not None and not path.is_file():
        fail(str(missing_file(path, stored.run_id)))
    options = guard(
        lambda: RunOptions(
            concurrency=concurrency,
            results_dir=results_dir,
            judge=judge,
            judge_concurrency=judge_concurrency,
            judge_rpm=judge_rpm,
            cache=not no_cache,
            cache_dir=cache_dir,
            budget=budget,
            prices=prices,
            history=resolve_history_path(history) if history is not None else None,
        )
    )
    outcome = guard(lambda: rescore_sync(path, options, checks=checks))
    data = outcome.data
    if ci:
        summary = summary_json(data, outcome.path)
        summary["rescored_from"] = data.get("rescored_from")
        typer.echo(json.dumps(summary, indent=2))
    else:
        print_results(data, outcome.path, None, verbose=verbose)
        typer.echo(f"rescored from {data.get('rescored_from')} ({path})")
    raise typer.Exit(exit_code(data))
