"""`proctor run`: run suites against an agent, print the results table, exit with a CI-usable code.

Exit codes: 0 every case passed (or was skipped without `--ci`); 1 a case failed; 2 bad input or usage
(and, under `--ci`, an LLM-judged check with no judge model); 3 the run could not complete (every trial
failed to reach the target, or the budget was spent); 4 no case failed or errored but one was
inconclusive (its simulated user misbehaved, even after a re-run: not the agent's failure, not a pass);
5 no case failed but one errored (a check or the conversation could not run), or `--max-errors` stopped
the run; 6 under `--ci`, a case was skipped (nothing scored) and `--allow-skipped` was not given;
130 interrupted (results written).
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import fail, guard, is_terminal, load_suites_or_exit
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
from proctor.errors import ConfigError

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["check_judges_configured", "parse_max_errors", "run_command"]

EXIT_CODES_HELP = (
    "Exit codes: 0 passed (skipped cases too, unless --ci); 1 a case failed; 2 bad input or usage; "
    "3 the run could not complete (target unreachable, budget spent); 4 a case inconclusive; "
    "5 a case errored, or --max-errors stopped the run; 6 under --ci, a case skipped (nothing scored) "
    "without --allow-skipped; 130 interrupted."
)


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


# Long only by its signature: Typer declares each option as a parameter; the body is a few steps.
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
    ci: bool = CI,
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
    judge: str | None = JUDGE,
    simulator: str | None = typer.Option(
        None,
        "--simulator",
        envvar="PROCTOR_SIMULATOR_MODEL",
        help="Model that plays simulated users, provider/model (default: the suite's 'simulator:', else the judge).",
    ),
    judge_concurrency: int | None = JUDGE_CONCURRENCY,
    judge_rpm: int | None = JUDGE_RPM,
    no_cache: bool = NO_CACHE,
    cache_dir: Path | None = CACHE_DIR,
    budget: float | None = typer.Option(
        None, "--budget", envvar="PROCTOR_BUDGET", help="Stop starting trials past this USD spend."
    ),
    prices: Path | None = PRICES,
    history: Path | None = typer.Option(
        None,
        "--history",
        envvar="PROCTOR_HISTORY",
        help="Run history to index the run in: a .db file or a directory (default <suite dir>/.proctor/history.db).",
    ),
    graph: str | None = typer.Option(
        None,
        "--graph",
        envvar="PROCTOR_AGENT_GRAPH",
        help="The agent's graph for state assertions: a bolt://, neo4j://, falkordb:// or redis:// URI (kept as it "
        "is), or 'embedded' (Proctor's FalkorDB); overrides the suites' state: and NEO_URI.",
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", envvar="PROCTOR_VERBOSE", help="Show every check, and the Cypher run with timings."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", envvar="PROCTOR_QUIET", help="No progress output."),
    allow_skipped: bool = ALLOW_SKIPPED,
    strict: bool = STRICT,
    judge_timeout: float | None = JUDGE_TIMEOUT,
    max_errors: str | None = typer.Option(
        None,
        "--max-errors",
        envvar="PROCTOR_MAX_ERRORS",
        help="Stop the run and exit 5 once more trials errored than this: a count (0 stops at the first) "
        "or a share of the planned trials (0.1 or 10%).",
    ),
    k: int | None = K,
    simulate: bool = typer.Option(
        False,
        "--simulate",
        envvar="PROCTOR_SIMULATE",
        help="Play each watsonx dataset's story with a simulated user (as IBM's ADK does) instead of sending "
        "its starting sentence once; the same as `simulate: true` in a config.yaml beside the datasets.",
    ),
    cluster: str | None = typer.Option(
        None,
        "--cluster",
        envvar="PROCTOR_CLUSTER",
        help="Run the trials on a Ray cluster: ray://HOST:PORT, HOST:PORT, or 'auto' (a local Ray instance on "
        "127.0.0.1); needs the ray extra. This process plans, limits, journals and writes the results.",
    ),
    cluster_workers: int | None = typer.Option(
        None,
        "--cluster-workers",
        envvar="PROCTOR_CLUSTER_WORKERS",
        min=1,
        help="Worker processes on the cluster (default: its CPUs, at most --concurrency).",
    ),
    trust: bool = typer.Option(
        False,
        "--trust",
        envvar="PROCTOR_TRUST",
        help="Trust these suites: let them run the code they name (python targets and hooks, plugin checks). "
        "Without it a suite file is data ('trusted: true' in proctor.yaml trusts a whole project).",
    ),
) -> None:
    """Run suites against an agent and report what it said and did.

    Exit codes: 0 passed (skipped cases too, unless --ci); 1 a case failed; 2 bad input or usage;
    3 the run could not complete (target unreachable, budget spent); 4 a case inconclusive; 5 a case
    errored, or --max-errors stopped the run; 6 under --ci, a case skipped (nothing scored) without
    --allow-skipped; 130 interrupted.
    """
    from proctor.cli._console import Observer, exit_code, print_results, summary_json
    from proctor.run import RunOptions, filter_cases, run_sync

    suites: Any = load_suites_or_exit(
        paths or [],
        trusted=trust,
        target_from_command_line=target is not None or gateway is not None,
        simulate=simulate or None,
    )
    gc.freeze()  # the loaded suites live for the whole run: keep them out of every collection
    cases = guard(lambda: filter_cases(suites, case, tag))
    if list_only:
        from proctor.cli._list import print_cases

        print_cases(suites, tag)
        return
    if not cases:
        fail("no case matches the given --case/--tag filters")
    if ci and not allow_skipped:
        check_judges_configured(cases, judge)
    limit = parse_max_errors(max_errors) if max_errors is not None else None
    shared = judging(
        judge=judge, judge_concurrency=judge_concurrency, judge_rpm=judge_rpm, judge_timeout=judge_timeout,
        no_cache=no_cache, cache_dir=cache_dir, prices=prices, strict=strict, k=k,
    )  # fmt: skip
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
            simulator=simulator,
            budget=budget,
            max_errors=limit,
            history=_history_path(history),
            state=_graph(graph),
            **shared,
        )
    )
    if options.resume is not None and options.results_dir is None and not options.resume.exists():
        options = guard(lambda: _with_dir(options, default_dir))
    observer = None if ci or quiet else Observer(verbose=verbose, live=is_terminal())
    if verbose and not ci:
        _log_queries()
    remote = _cluster(cluster, cluster_workers) if cluster is not None else None
    try:
        outcome = guard(lambda: run_sync(suites, options, cases=cases, observer=observer, remote=remote))
    finally:
        if observer is not None:
            observer.close()
    data = outcome.data
    if output is not None:
        from proctor.results import write_output

        write_output(output, data)
    fail_on_skipped = ci and not allow_skipped
    if ci:
        typer.echo(json.dumps(summary_json(data, outcome.path, fail_on_skipped=fail_on_skipped), indent=2))
    else:
        print_results(data, outcome.path, output, verbose=verbose)
    raise typer.Exit(exit_code(data, fail_on_skipped=fail_on_skipped))


def check_judges_configured(cases: list[Any], judge: str | None) -> None:
    """Under `--ci`: exit 2 at start, one line per case, when an LLM-judged check has no judge model.

    Without a judge such a check is skipped, and a run where nothing is checked must not look green.

    Args:
        cases: The cases about to run.
        judge: The `--judge` option (a suite's `judge:` also counts).
    """
    from proctor.checks._judging import unjudged_checks

    missing = unjudged_checks(cases, judge)
    if not missing:
        return
    for case, check in missing:
        typer.echo(
            f"error: case {case.name!r} ({case.file}): check {check!r} needs a judge model and none is configured: "
            "pass --judge provider/model (or set PROCTOR_JUDGE_MODEL, or add 'judge:' to the suite; "
            "--allow-skipped lets it be skipped)",
            err=True,
        )
    raise typer.Exit(2)


def parse_max_errors(value: str) -> Any:
    """Read `--max-errors` into a `proctor.scoring.ErrorLimit`; exit 2 with the reason when it is not valid."""
    from proctor.scoring import parse_error_limit

    try:
        return parse_error_limit(value)
    except ValueError as exc:
        fail(f"--max-errors: {exc}")


def _cluster(address: str, workers: int | None) -> Any:
    """`--cluster` as the runner's remote trials (Ray, an optional extra, is imported only then)."""
    from proctor.cluster import ClusterSettings, remote_trials

    return guard(lambda: remote_trials(ClusterSettings(address, workers=workers)))


def _graph(value: str | None) -> Any:
    """`--graph` as the run's state override (`None`: the suites and the environment decide)."""
    if value is None:
        return None
    from proctor.state import graph_override

    try:
        return graph_override(value)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


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
