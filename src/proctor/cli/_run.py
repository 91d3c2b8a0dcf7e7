"""`proctor run`: run suites against an agent, print the results table, exit with a CI-usable code.

Exit codes: 0 every case passed (or was skipped without `--ci`); 1 a case failed; 2 bad input or usage
(and, under `--ci`, an LLM-judged check with no judge model; an `--output` or results directory that cannot
be written, refused before any trial runs; an `--output` still not written at the end, the results file
kept); 3 the run could not complete (every trial failed to reach the target, the budget was spent, or its
results file could not be written at the end: its journal keeps the finished trials); 4 no case failed or
errored but one was inconclusive (its simulated user misbehaved, even after a re-run: not the agent's
failure, not a pass); 5 no case failed but one errored (a check or the conversation could not run), or
`--max-errors` stopped the run; 6 under `--ci`, a case was skipped (nothing scored) and `--allow-skipped` was not given;
130 interrupted (results written).
"""

# No `from __future__ import annotations`: Typer would compile each option's annotation string at every run.

import gc
import json
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import (
    cannot_write,
    fail,
    from_project,
    guard,
    is_terminal,
    load_suites_or_exit,
    project_or_exit,
)
from proctor.cli._help import PANEL_JUDGE, PANEL_OUTPUT, PANEL_RUN, PANEL_TARGET, epilog
from proctor.cli._history import HISTORY
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
from proctor.errors import ConfigError

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "OUTPUT_SUFFIXES", "check_judges_configured", "check_output", "parse_max_errors", "run_command"]

OUTPUT_SUFFIXES = (".json", ".xml")
"""What `--output` writes: the results JSON (`.json`) or JUnit XML (`.xml`), by its suffix (any case)."""
EXIT_USAGE = 2
"""Bad input or usage; also an `--output` that could not be written at the end (the results file kept)."""

EPILOG = epilog(
    [
        (
            "Every suite under evals/ against a local OpenAI-compatible agent:",
            "proctor run evals/ --target http://127.0.0.1:8000/v1 -m gpt-4.1-mini",
        ),
        (
            "Two cases, three trials each, judged by a local model:",
            "proctor run evals/ -c greets -c refunds --trials 3 --judge ollama/llama3.1",
        ),
        ("In CI: the JSON summary on stdout, JUnit XML beside it:", "proctor run evals/ --ci -o results.xml"),
        ("Two models side by side (a run each, one comparison):", "proctor run evals/ -m gpt-4.1-mini -m gpt-4.1"),
    ],
    [
        (0, "every case passed (skipped ones too, unless --ci)"),
        (1, "a case failed"),
        (
            2,
            "bad input or usage, e.g. an unwritable --output or --results-dir; under --ci, an LLM-judged check has "
            "no judge",
        ),
        (3, "the run could not complete: the target unreachable, the budget spent, the results unwritable"),
        (4, "none failed or errored, but a case was inconclusive (simulated user)"),
        (5, "none failed, but a case errored; or --max-errors stopped the run"),
        (6, "under --ci without --allow-skipped: a case skipped (nothing scored)"),
        (130, "interrupted (the results so far are written)"),
    ],
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
    context: typer.Context,
    paths: list[Path] = typer.Argument(None, help="Suite files or directories (default: current directory)."),
    case: list[str] = typer.Option(
        [], "--case", "-c", envvar="PROCTOR_CASE", metavar="NAME", help="Only this case (repeat for more)."
    ),
    target: list[str] = typer.Option(  # repeatable: a matrix (proctor.cli._matrix)
        [],
        "--target",
        envvar="PROCTOR_TARGET",
        metavar="TARGET",
        help="The agent, instead of the suites' target: an OpenAI-compatible base URL, python:mod:fn, lobu:URL.",
    ),
    model: list[str] = typer.Option(  # repeatable: a matrix (proctor.cli._matrix)
        [],
        "--model",
        "-m",
        envvar="PROCTOR_MODEL",
        metavar="MODEL",
        help="Model sent to the agent; names the run (repeat for a matrix).",
    ),
    trials: int | None = typer.Option(
        None,
        "--trials",
        envvar="PROCTOR_TRIALS",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_RUN,
        help="Trials per case (overrides the suites).",
    ),
    tag: list[str] = typer.Option(
        [], "--tag", "-t", envvar="PROCTOR_TAG", metavar="TAG", help="Only cases with this tag (repeat for more)."
    ),
    concurrency: int = CONCURRENCY,
    max_connections: int = typer.Option(
        16,
        "--max-connections",
        envvar="PROCTOR_MAX_CONNECTIONS",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_TARGET,
        help="Connections per target.",
    ),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        envvar="PROCTOR_TIMEOUT",
        min=0.001,
        metavar="SECONDS",
        rich_help_panel=PANEL_TARGET,
        help="Per-turn timeout.",
    ),
    ci: bool = CI,
    as_json: bool = JSON,
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        envvar="PROCTOR_OUTPUT",
        metavar="FILE",
        rich_help_panel=PANEL_OUTPUT,
        help="Also write the results here: .json, or .xml for JUnit.",
    ),
    list_only: bool = typer.Option(
        False, "--list", envvar="PROCTOR_LIST", help="List the cases that would run, and exit (with --json: as JSON)."
    ),
    resume: str | None = typer.Option(
        None,
        "--resume",
        envvar="PROCTOR_RESUME",
        metavar="RUN",
        rich_help_panel=PANEL_RUN,
        help="Run id or results file: run only its missing or errored trials.",
    ),
    seed: int | None = typer.Option(
        None, "--seed", envvar="PROCTOR_SEED", metavar="N", rich_help_panel=PANEL_RUN, help="Seed for randomness."
    ),
    results_dir: Path | None = typer.Option(
        None,
        "--results-dir",
        envvar="PROCTOR_RESULTS_DIR",
        metavar="DIR",
        rich_help_panel=PANEL_OUTPUT,
        help="Where results go (default: <suite dir>/.results).",
    ),
    gateway: str | None = typer.Option(
        None,
        "--gateway",
        "-g",
        envvar="PROCTOR_GATEWAY",
        metavar="URL",
        rich_help_panel=PANEL_TARGET,
        help="Lobu gateway URL.",
    ),
    agent: str | None = typer.Option(
        None, "--agent", "-a", envvar="PROCTOR_AGENT", metavar="ID", rich_help_panel=PANEL_TARGET, help="Lobu agent id."
    ),
    judge: str | None = JUDGE,
    simulator: str | None = typer.Option(
        None,
        "--simulator",
        envvar="PROCTOR_SIMULATOR_MODEL",
        metavar="MODEL",
        rich_help_panel=PANEL_JUDGE,
        help="Plays simulated users, provider/model (default: the suite's 'simulator:', else the judge).",
    ),
    judge_concurrency: int | None = JUDGE_CONCURRENCY,
    judge_rpm: int | None = JUDGE_RPM,
    no_cache: bool = NO_CACHE,
    cache_dir: Path | None = CACHE_DIR,
    budget: float | None = typer.Option(
        None,
        "--budget",
        envvar="PROCTOR_BUDGET",
        metavar="USD",
        rich_help_panel=PANEL_RUN,
        help="Start no trial once this much is spent.",
    ),
    prices: Path | None = PRICES,
    history: Path | None = HISTORY,
    graph: str | None = typer.Option(
        None,
        "--graph",
        envvar="PROCTOR_AGENT_GRAPH",
        metavar="URI",
        rich_help_panel=PANEL_TARGET,
        help="Graph for state assertions: a bolt://, neo4j://, falkordb:// or redis:// URI, or 'embedded' "
        "(Proctor's FalkorDB); overrides state: and NEO_URI.",
    ),
    verbose: bool = typer.Option(
        False,
        "--verbose",
        "-v",
        envvar="PROCTOR_VERBOSE",
        rich_help_panel=PANEL_OUTPUT,
        help=(
            "Show every check, every case in the results table (of more than 100 cases, only those that did not"
            " pass are listed otherwise), and the Cypher run with timings."
        ),
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", envvar="PROCTOR_QUIET", rich_help_panel=PANEL_OUTPUT, help="No progress output."
    ),
    allow_skipped: bool = ALLOW_SKIPPED,
    strict: bool = STRICT,
    judge_timeout: float | None = JUDGE_TIMEOUT,
    max_errors: str | None = typer.Option(
        None,
        "--max-errors",
        envvar="PROCTOR_MAX_ERRORS",
        metavar="N|SHARE",
        rich_help_panel=PANEL_RUN,
        help="Stop (exit 5) once more trials errored than this: a count (0: the first) or a share (0.1, 10%).",
    ),
    k: int | None = K,
    simulate: bool = typer.Option(
        False,
        "--simulate",
        envvar="PROCTOR_SIMULATE",
        rich_help_panel=PANEL_JUDGE,
        help="Play watsonx datasets' stories with a simulated user (as 'simulate: true' in their config.yaml).",
    ),
    view: bool = typer.Option(
        False,
        "--view",
        rich_help_panel=PANEL_OUTPUT,
        help="At the end, serve `proctor view` on this run's page (Ctrl-C stops it).",
    ),
    otel: bool = typer.Option(
        False,
        "--otel",
        envvar="PROCTOR_OTEL",
        rich_help_panel=PANEL_OUTPUT,
        help="Export one OpenTelemetry trace per trial over OTLP (on by itself when OTEL_EXPORTER_OTLP_ENDPOINT "
        "is set); the agent is sent W3C traceparent so its spans join. Needs the otel extra.",
    ),
    otel_endpoint: str | None = typer.Option(
        None,
        "--otel-endpoint",
        metavar="URL",
        rich_help_panel=PANEL_OUTPUT,
        help="OTLP collector base URL, e.g. http://127.0.0.1:4318 (implies --otel).",
    ),
    trace_url: str | None = typer.Option(
        None,
        "--trace-url",
        envvar="PROCTOR_TRACE_URL",
        metavar="TEMPLATE",
        rich_help_panel=PANEL_OUTPUT,
        help="A link to each trial's trace, kept in the results: a URL with {trace_id} in it (Jaeger, Langfuse).",
    ),
    cluster: str | None = typer.Option(
        None,
        "--cluster",
        envvar="PROCTOR_CLUSTER",
        metavar="ADDRESS",
        rich_help_panel=PANEL_RUN,
        help="Run the trials on a Ray cluster: ray://HOST:PORT, HOST:PORT, or 'auto' (a local Ray instance on "
        "127.0.0.1); needs the ray extra. This process plans, limits, journals and writes the results.",
    ),
    cluster_workers: int | None = typer.Option(
        None,
        "--cluster-workers",
        envvar="PROCTOR_CLUSTER_WORKERS",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_RUN,
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

    Prints a results table (or, with --json or --ci, a JSON summary) and writes the results JSON.
    """
    # importing and loading build long-lived objects and no garbage cycles: collecting midway halves loading's
    # speed (`proctor.cli.main` keeps it off from start-up on; a caller of `app` may not)
    gc.disable()
    try:
        from proctor.cli._console import EXIT_UNREACHABLE, Observer, exit_code, print_results, summary_text
        from proctor.run import RunOptions, filter_cases, run_sync

        project = project_or_exit(paths[0] if paths else None)  # proctor.yaml: defaults the command line overrides
        config = project.config
        target = from_project(context, "target", target, _configured(config.target, config.matrix, "targets"))
        model = from_project(context, "model", model, _configured(config.model, config.matrix, "models"))
        judge = from_project(context, "judge", judge, config.judge)
        concurrency = from_project(context, "concurrency", concurrency, config.concurrency)
        results_dir = from_project(context, "results_dir", results_dir, project.results_dir)
        suites: Any = load_suites_or_exit(
            paths or [],
            trusted=trust,
            target_from_command_line=bool(target) or gateway is not None,
            simulate=simulate or None,
            verbose=verbose,
        )
    finally:
        gc.enable()
    gc.freeze()  # the loaded suites live for the whole run: keep them out of every collection
    cases = guard(lambda: filter_cases(suites, case, tag))
    # a run allocates a few objects per check and keeps most (the results): collecting the youngest
    # generation every 700 allocations cost ~18 % of W2's run CPU (5,000 cases, medians of 4, interleaved)
    gc.set_threshold(young_threshold(cases, trials), 10, 10)
    if list_only:
        from proctor.cli._list import cases_json, print_cases

        if as_json:
            typer.echo(json.dumps(cases_json(suites, tag), indent=2))
        else:
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
    first = paths[0] if paths else project.root
    default_dir = (first if first.is_dir() else first.parent) / ".results"
    matrix = len(model) > 1 or len(target) > 1
    options = guard(
        lambda: RunOptions(
            target=None if matrix else _target_override(target[0] if target else None, gateway, agent),
            model=None if matrix else (model[0] if model else None),
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
            history=_history_path(history, project.store),
            state=_graph(graph),
            otel=otel,
            otel_endpoint=otel_endpoint,
            trace_url=trace_url,
            **shared,
        )
    )
    if options.resume is not None and options.results_dir is None and not options.resume.exists():
        options = guard(lambda: _with_dir(options, default_dir))
    _check_results_dir(options, _results_dir_source(context, project, results_dir, first))
    observer = None if ci or as_json or quiet else Observer(verbose=verbose, live=is_terminal())
    if verbose and not ci:
        _log_queries()
    if matrix:  # every --model x --target combination, then one comparison
        if cluster is not None:
            fail("--cluster runs one model and one target: give one --model and one --target with it")
        from proctor.cli._matrix import run_matrix_command

        specs = [(t, _target_override(t, gateway, agent)) for t in target]
        try:
            code = run_matrix_command(
                suites, cases, options, model, specs, observer=observer, results_dir=default_dir, ci=ci,
                fail_on_skipped=ci and not allow_skipped, output=output,
            )  # fmt: skip
        finally:
            if observer is not None:
                observer.close()
        raise typer.Exit(code)
    if output is not None:
        check_output(output)
    remote = _cluster(cluster, cluster_workers) if cluster is not None else None
    unwritten: OSError | None = None
    try:
        outcome = guard(lambda: run_sync(suites, options, cases=cases, observer=observer, remote=remote))
    except OSError as exc:  # a results directory that turned unwritable (full, removed) after the check
        unwritten = exc
    finally:
        if observer is not None:
            observer.close()  # before any message: the progress bar would draw over it
    if unwritten is not None:
        fail(_results_not_written(unwritten), EXIT_UNREACHABLE)  # the run could not complete
    result = outcome.result
    output_error = _write_output(output, outcome) if output is not None else None
    fail_on_skipped = ci and not allow_skipped
    code = exit_code(result, fail_on_skipped=fail_on_skipped) if output_error is None else EXIT_USAGE
    if ci or as_json:
        text = summary_text(result, outcome.path, fail_on_skipped=fail_on_skipped)
        typer.echo(text if output_error is None else _with_exit_code(text, code))
    else:
        print_results(result, outcome.path, output if output_error is None else None, verbose=verbose)
    if output_error is not None:
        typer.echo(f"error: {output_error}", err=True)
    if view and outcome.path is not None:
        from proctor.cli._view import view_after_run  # must stay fast: the viewer's web stack loads only here

        view_after_run(options.history, outcome.path, result.run_id)
    raise typer.Exit(code)


def check_output(output: Path) -> None:
    """`--output`, before any trial runs: exit 2 unless it names a `.json` or `.xml` file that can be written.

    Its suffix must say what to write (`OUTPUT_SUFFIXES`), it must not be a directory, and a file must be
    creatable in its directory (made, with missing parents, when absent): found out at the end, the run's
    work would be done and the output lost.
    """
    suffix = output.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        found = f"the suffix {output.suffix!r}" if output.suffix else "no suffix"
        fail(f"--output {output}: expected a .json (results JSON) or .xml (JUnit XML) file, found {found}")
    if output.is_dir():
        fail(f"--output {output}: is a directory; expected a file (.json or .xml) to write")
    reason = cannot_write(output.parent)
    if reason is not None:
        fail(f"--output {output}: {reason}; expected a place where the file can be written")


def _results_dir_source(context: typer.Context, project: Any, given: Path | None, first: Path) -> str:
    """Who chose the results directory, for messages: the option, `proctor.yaml` (located), or the default."""
    source = context.get_parameter_source("results_dir")
    if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
        return "--results-dir"
    if given is not None and project.config_file is not None:
        return _located_setting(project.config_file, "results")
    return f"the results directory (default: .results beside {first}; --results-dir chooses another)"


def _located_setting(config_file: Path, key: str) -> str:
    """`proctor.yaml:LINE:COLUMN: key` for a top-level setting (just `proctor.yaml: key` if it is not found)."""
    import re

    try:
        lines = config_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):  # read a moment ago: it changed since, say where without a line
        lines = []
    pattern = re.compile(rf"^{re.escape(key)}\s*:\s*")
    for number, line in enumerate(lines, 1):
        match = pattern.match(line)
        if match is not None:
            return f"{config_file}:{number}:{match.end() + 1}: {key}"
    return f"{config_file}: {key}"


def _check_results_dir(options: Any, source: str) -> None:
    """Exit 2, before any trial runs, when the run's results directory cannot be made or written in.

    `source` says who chose it (`_results_dir_source`). A resumed run without a directory writes beside the
    file it resumes (which exists: it was read).
    """
    directory = options.results_dir
    if directory is None and options.resume is not None:
        directory = options.resume.absolute().parent
    if directory is None:
        return
    reason = cannot_write(directory)
    if reason is not None:
        fail(f"{source}: {reason}; expected a directory the results files can be written in")


def _write_output(output: Path, outcome: Any) -> str | None:
    """Write `--output` after the run; what went wrong (the results file is kept), or `None` once written."""
    from proctor.results import write_output

    try:
        write_output(output, lambda: outcome.data, written=outcome.path)  # a copy of the file: no JSON made
    except OSError as exc:  # checked at start: a full disk, or the place changed during the run
        kept = f"; the results are in {outcome.path}" if outcome.path is not None else ""
        return f"--output {output}: could not write it ({exc.strerror or exc}){kept}"
    return None


def _with_exit_code(summary: str, code: int) -> str:
    """The `--ci` JSON summary saying `code`: the process's status, the run's own being overruled."""
    data = json.loads(summary)
    data["exit_code"] = code
    return json.dumps(data, indent=2)


def _results_not_written(exc: OSError) -> str:
    """What a run whose files could not be written says: the file, the operating system's error, the journal."""
    place = exc.filename
    message = f"could not write {place} ({exc.strerror or exc})" if place else f"could not write the results ({exc})"
    if place is not None and str(place).endswith(".json"):
        journal = Path(str(place)[: -len(".json")] + ".journal.jsonl")
        if journal.is_file():
            message += f"; the finished trials are kept in {journal}: rerun with --resume {journal} to write it"
    return message


def young_threshold(cases: list[Any], trials: int | None) -> int:
    """The collector's youngest-generation threshold for a run of `cases` (`trials`: the `--trials` option).

    What a run keeps of each trial (its result, turns and checks: ~20 objects the collector tracks) lives to
    its end, so a collection of the youngest generation during the run walks them and frees next to
    nothing (W2: one collection of 91,000 objects, 65 freed, 26 ms: ~5 µs a case). The threshold leaves room
    for twice what the planned trials keep (at least 100,000 allocations, at most 1,000,000): garbage
    cycles are still collected, once that much more was allocated.
    """
    planned = sum(trials or case.trials for case in cases)
    return min(max(100_000, 40 * planned), 1_000_000)


def check_judges_configured(cases: list[Any], judge: str | None, selected: Any = None) -> None:
    """Under `--ci`: exit 2 at start, one line per case, when an LLM-judged check has no judge model.

    Without a judge such a check is skipped, and a run where nothing is checked must not look green.
    Every judged check counts, wherever the case holds it (`proctor.checks._judging.judged_checks`).

    Args:
        cases: The cases about to run (or be re-scored).
        judge: The `--judge` option (a suite's `judge:` also counts; an empty or blank one is none).
        selected: Only the checks this predicate accepts will run (`proctor rescore --checks`).
    """
    from proctor.checks._judging import unjudged_checks

    missing = unjudged_checks(cases, judge, selected=selected)
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


def _configured(single: str | None, matrix: Any, field: str) -> list[str] | None:
    """`proctor.yaml`'s models (or targets): the `matrix:` list when it has one, else `model:` (`target:`)."""
    values = list(getattr(matrix, field)) if matrix is not None else []
    return values or ([single] if single is not None else None)


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


def _history_path(value: Path | None, project_store: Path) -> Path:
    """`--history`, else the store of the suites' project (the one `runs`, `report` and `view` read)."""
    if value is None:
        return project_store
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
