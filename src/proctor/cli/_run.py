"""`proctor run`: run suites against an agent, print the results table, exit with a CI-usable code.

Exit codes: 0 every case passed (or was skipped, e.g. no simulator model); 1 a case failed or errored;
2 bad input or usage; 3 the run could not complete (every trial failed to reach the target); 4 no case
failed or errored but one was inconclusive (its simulated user misbehaved, even after a re-run: not the
agent's failure, not a pass); 130 interrupted (results written).
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import fail, guard, is_terminal, load_suites_or_exit

__all__ = ["run_command"]


def _target_override(target: str | None, gateway: str | None, agent: str | None) -> dict[str, Any] | None:
    from proctor.suite import parse_target_string

    spec: dict[str, Any] | None = None
    if target is not None:
        try:
            spec = parse_target_string(target)
        except ValueError as exc:
            fail(f"--target: {exc}")
    if gateway is not None or agent is not None:
        if spec is None:
            spec = {"type": "lobu"}
        if spec["type"] != "lobu":
            fail("--gateway and --agent apply to the lobu target; --target names another kind")
        if gateway is not None:
            spec["gateway"] = gateway
        if agent is not None:
            spec["agent"] = agent
    return spec


def run_command(
    paths: list[Path] = typer.Argument(None, help="Suite files or directories (default: current directory)."),
    case: list[str] = typer.Option([], "--case", "-c", envvar="PROCTOR_CASE", help="Only this case (repeat)."),
    target: str | None = typer.Option(
        None,
        "--target",
        envvar="PROCTOR_TARGET",
        help="Agent to evaluate: base URL of an OpenAI-compatible server, python:mod:fn, or lobu:URL. "
        "Overrides the suites' target.",
    ),
    model: str | None = typer.Option(
        None, "--model", "-m", envvar="PROCTOR_MODEL", help="Model sent to the agent; names the run."
    ),
    trials: int | None = typer.Option(
        None, "--trials", envvar="PROCTOR_TRIALS", min=1, help="Trials per case (overrides the suites)."
    ),
    tag: list[str] = typer.Option([], "--tag", "-t", envvar="PROCTOR_TAG", help="Only cases with this tag."),
    concurrency: int = typer.Option(8, "--concurrency", envvar="PROCTOR_CONCURRENCY", min=1, help="Trials in flight."),
    max_connections: int = typer.Option(
        16, "--max-connections", envvar="PROCTOR_MAX_CONNECTIONS", min=1, help="Connections per target."
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", envvar="PROCTOR_TIMEOUT", min=0.001, help="Per-turn timeout in seconds."
    ),
    ci: bool = typer.Option(False, "--ci", envvar="PROCTOR_CI", help="Print only the JSON summary to stdout."),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        envvar="PROCTOR_OUTPUT",
        help="Also write results here (.json, or .xml for JUnit).",
    ),
    list_only: bool = typer.Option(
        False, "--list", envvar="PROCTOR_LIST", help="List the cases that would run, and exit."
    ),
    resume: str | None = typer.Option(
        None,
        "--resume",
        envvar="PROCTOR_RESUME",
        help="Run id or results file: run only missing or errored trials.",
    ),
    seed: int | None = typer.Option(None, "--seed", envvar="PROCTOR_SEED", help="Seed for reproducible randomness."),
    results_dir: Path | None = typer.Option(
        None,
        "--results-dir",
        envvar="PROCTOR_RESULTS_DIR",
        help="Where results go (default: <suite dir>/.results).",
    ),
    gateway: str | None = typer.Option(None, "--gateway", "-g", envvar="PROCTOR_GATEWAY", help="Lobu gateway URL."),
    agent: str | None = typer.Option(None, "--agent", "-a", envvar="PROCTOR_AGENT", help="Lobu agent id."),
    judge: str | None = typer.Option(
        None,
        "--judge",
        envvar="PROCTOR_JUDGE_MODEL",
        help="Judge model for LLM-judged checks, provider/model (e.g. openai/gpt-4.1-mini, ollama/llama3.1).",
    ),
    simulator: str | None = typer.Option(
        None,
        "--simulator",
        envvar="PROCTOR_SIMULATOR_MODEL",
        help="Model that plays simulated users, provider/model (default: the suite's 'simulator:', else the judge).",
    ),
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
        None, "--budget", envvar="PROCTOR_BUDGET", help="Stop starting trials past this USD spend."
    ),
    prices: Path | None = typer.Option(
        None, "--prices", envvar="PROCTOR_PRICES", help="JSON/YAML price table overriding the bundled one."
    ),
    history: Path | None = typer.Option(
        None,
        "--history",
        envvar="PROCTOR_HISTORY",
        help="Run history to index the run in: a .db file or a directory (default <suite dir>/.proctor/history.db).",
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", envvar="PROCTOR_VERBOSE", help="Show every check, and the Cypher run with timings."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", envvar="PROCTOR_QUIET", help="No progress output."),
    trust: bool = typer.Option(
        False,
        "--trust",
        envvar="PROCTOR_TRUST",
        help="Trust these suites: let them run the code they name (python targets and hooks, plugin checks). "
        "Without it a suite file is data ('trusted: true' in proctor.yaml trusts a whole project).",
    ),
) -> None:
    """Run suites against an agent and report what it said and did."""
    from proctor.cli._console import Observer, exit_code, print_results, summary_json
    from proctor.runner import RunOptions, filter_cases, run_sync

    suites: Any = load_suites_or_exit(
        paths or [], trusted=trust, target_from_command_line=target is not None or gateway is not None
    )
    gc.freeze()  # the loaded suites live for the whole run: keep them out of every collection
    cases = guard(lambda: filter_cases(suites, case, tag))
    if list_only:
        from proctor.cli._list import print_cases

        print_cases(suites, tag)
        return
    if not cases:
        fail("no case matches the given --case/--tag filters")
    first = (paths or [Path(".")])[0]
    default_dir = (first if first.is_dir() else first.parent) / ".results"
    options = guard(
        lambda: RunOptions(
            target=_target_override(target, gateway, agent),
            model=model,
            trials=trials,
            timeout=timeout,
            concurrency=concurrency,
            max_connections=max_connections,
            seed=seed,
            results_dir=results_dir or (None if resume else default_dir),
            resume=Path(resume) if resume else None,
            judge=judge,
            simulator=simulator,
            judge_concurrency=judge_concurrency,
            judge_rpm=judge_rpm,
            cache=not no_cache,
            cache_dir=cache_dir,
            budget=budget,
            prices=prices,
            history=_history_path(history),
        )
    )
    if options.resume is not None and options.results_dir is None and not options.resume.exists():
        options = guard(lambda: _with_dir(options, default_dir))
    observer = None if ci or quiet else Observer(verbose=verbose, live=is_terminal())
    if verbose and not ci:
        _log_queries()
    try:
        outcome = guard(lambda: run_sync(suites, options, cases=cases, observer=observer))
    finally:
        if observer is not None:
            observer.close()
    data = outcome.data
    if output is not None:
        from proctor.results import write_output

        write_output(output, data)
    if ci:
        typer.echo(json.dumps(summary_json(data, outcome.path), indent=2))
    else:
        print_results(data, outcome.path, output, verbose=verbose)
    raise typer.Exit(exit_code(data))


def _history_path(value: Path | None) -> Path | None:
    if value is None:
        return None  # the runner's default: beside the results directory
    from proctor.results import resolve_history_path

    return resolve_history_path(value)


def _log_queries() -> None:
    """Log state queries and Embabel generation events on stderr (`-v`).

    The Cypher that setups and state assertions run (with timings), and the events an Embabel agent
    reports (function calls, prompts, graph queries) as they arrive.
    """
    import logging
    import sys

    class StderrHandler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            sys.stderr.write(self.format(record) + "\n")  # the current stderr (a test may swap it)

    for name in ("proctor.state", "proctor.targets.embabel"):  # Cypher; Embabel generation events
        logger = logging.getLogger(name)
        if not any(type(handler).__name__ == "StderrHandler" for handler in logger.handlers):
            logger.addHandler(StderrHandler())
        logger.setLevel(logging.INFO)


def _with_dir(options: Any, directory: Path) -> Any:
    from dataclasses import replace

    return replace(options, results_dir=directory)
