"""`proctor score`: score a file of recorded agent runs with the agent scorers, streaming.

Exit codes: 0 scored, no error (skipped results allowed beside scored ones); 1 a scorer result is an
error or a row could not be read; 2 bad input or usage (a bad row, unless `--continue-on-error`; a file
with no records; an output that cannot be written); 3 nothing could be scored: every judged result is an
error (the judge is unreachable), or every result was skipped (e.g. judged scorers without `--judge`: the
events path exits 3 there too); 130 interrupted (the rows scored so far are in the output: rerun with
`--resume`).

Outputs are checked before any record is scored or any judge called (`_check_outputs`): neither
`--output` nor `--summary` may be the input (or each other), by path or by inode (a link to it); each must
be a file, not a folder, where a file can be created (a missing folder is created later, so its nearest
existing parent must allow it); `--output` without `--resume` replaces only an empty file or a scores
file, and `--resume` resumes only from a scores file (`proctor.recorded._output`). A summary that still
cannot be written at the end (a full disk) is reported, exit 2; the scored rows stay in the output.

Online-service events. A JSON Lines file whose first record has an `interaction` key holds the online
service's events (`{event_id, event_type, agent, interaction{user_query, context, answer}}`), not
`AgentData`. Such a file is handed to `proctor.service.score_events(path, ...)`, imported only then,
with these keywords where its signature takes them: `workers` (`--concurrency`/`--workers`),
`continue_on_error`, `dry_run`, `output`, and `settings` (a `proctor.service.ServiceSettings` naming
the `--judge`, its concurrency and cache). Its summary is printed as JSON; the exit code is its
`exit_code` when it has one, else 1 when a line was invalid or a verdict is `fail` or `error`, else 0.
Without `proctor.service.score_events`, the command exits 2 saying so.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import fail, guard, is_terminal
from proctor.cli._help import PANEL_JUDGE, PANEL_OUTPUT, epilog
from proctor.cli._options import JSON, SCORE_CONCURRENCY

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "score_command"]

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_NOTHING_SCORED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
_GROUP_ROWS = 10

EPILOG = epilog(
    [
        (
            "NovaEval-style AgentData rows, judged, scored rows written beside:",
            "proctor score agents.csv --judge openai/gpt-4.1-mini",
        ),
        ("Count the judge calls first, calling no model:", "proctor score agents.jsonl --dry-run"),
        (
            "IBM watsonx recorded runs against their dataset, as JSON:",
            "proctor score messages/ --dataset evaluate/ --json",
        ),
        ("Carry on after an interruption:", "proctor score agents.jsonl --judge openai/gpt-4.1-mini --resume"),
    ],
    [
        (0, "scored, no error (skipped results allowed beside scores); watsonx: every run scored"),
        (1, "a scorer errored or a row was unreadable; watsonx: a journey undecided"),
        (2, "bad input or usage (a bad row, unless --continue-on-error; no records; an unwritable output)"),
        (3, "nothing could be scored: every judged result an error, or every result skipped (e.g. no --judge)"),
        (130, "interrupted: the rows so far are in the output (rerun with --resume)"),
    ],
)


def _mapping(entries: list[str]) -> dict[str, str]:
    """`--map COLUMN=FIELD` entries (each may hold several, comma-separated) as field -> column."""
    columns: dict[str, str] = {}
    for entry in entries:
        for part in entry.split(","):
            if not part.strip():
                continue
            column, equals, field = part.partition("=")
            if not equals or not column.strip() or not field.strip():
                fail(f"--map {part!r}: expected COLUMN=FIELD, e.g. --map question=agent_task")
            columns[field.strip()] = column.strip()
    return columns


def _is_events_file(path: Path) -> bool:
    """Whether the file's first record is an online-service event (it has `interaction`)."""
    if path.suffix.lower() not in (".jsonl", ".ndjson", ".json") or not path.is_file():
        return False
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    first = json.loads(raw)
                except ValueError:
                    return False
                return isinstance(first, dict) and "interaction" in first
    return False


def _score_events(path: Path, options: dict[str, Any]) -> int:
    """Hand an events file to `proctor.service.score_events` (see the module docstring)."""
    import inspect

    try:
        from proctor.service import score_events
    except ImportError as exc:
        fail(
            f"{path} holds online-service events (its first record has 'interaction'), and scoring them needs "
            f"proctor.service.score_events, which this installation does not have ({exc}). For AgentData "
            "records, give a file whose records have AgentData fields (agent_task, tool_calls, ...)."
        )
    parameters = inspect.signature(score_events).parameters
    if "settings" in parameters:
        from proctor.service import ServiceSettings

        options["settings"] = ServiceSettings(
            judge_model=options["judge"], judge_concurrency=options["workers"], cache_dir=options["cache_dir"]
        )
    summary: Any = guard(lambda: score_events(path, **{k: v for k, v in options.items() if k in parameters}))
    if hasattr(summary, "to_dict"):
        typer.echo(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False))
    if isinstance(getattr(summary, "exit_code", None), int):
        return int(summary.exit_code)
    verdicts = getattr(summary, "verdicts", {}) or {}
    return EXIT_ERRORS if getattr(summary, "invalid", None) or verdicts.get("fail") or verdicts.get("error") else 0


def _is_trace_file(path: Path) -> bool:
    """Whether the file holds traces: OTLP protobuf by name, or OTLP JSON (`resourceSpans` first)."""
    if path.suffix.lower() in (".pb", ".binpb", ".protobuf"):
        return True
    with path.open("rb") as handle:
        head = handle.read(4096)
    return b'"resourceSpans"' in head or b'"resource_spans"' in head


def _score_traces(
    data: Path, suites: list[Path], mapping: str | None, case: str | None, *, cache_dir: Path | None, **judging: Any
) -> int:
    """Score a trace file's conversations with a suite's checks (`proctor.recorded._traces`)."""
    from proctor.cli._common import load_suites_or_exit
    from proctor.cli._console import exit_code, print_results
    from proctor.recorded._traces import score_traces_sync
    from proctor.run import RunOptions
    from proctor.traces import load_mapping

    if not suites:
        fail(f"{data} holds traces: name the suite to check them with, --suite SUITE.yaml")
    loaded: Any = load_suites_or_exit(suites)
    options = guard(
        lambda: RunOptions(
            judge=judging["judge"],
            judge_rpm=judging["judge_rpm"],
            concurrency=judging["concurrency"],
            cache=not judging["no_cache"],
            cache_dir=cache_dir,
        )
    )
    scored: Any = guard(lambda: score_traces_sync([data], loaded, load_mapping(mapping), options, case=case))
    from proctor.cli._console import _console

    console = _console()
    for line in scored.unmatched:
        console.print(f"[yellow]not scored[/yellow] {line}", highlight=False)
    if not scored.outcome.result.cases:
        fail(f"{data}: none of its {scored.conversations} conversation(s) matched a case of the suite")
    print_results(scored.outcome.result, scored.outcome.path, None, verbose=False)
    code = exit_code(scored.outcome.result)
    return code if code or not scored.unmatched else EXIT_ERRORS


class _Progress:
    """A Rich bar (by bytes read) on a terminal; on a pipe, a line every 10 s."""

    def __init__(self, live: bool) -> None:
        from proctor.cli._console import _console

        self.console = _console()
        self.live = live
        self.reader: Any = None
        self.bar: Any = None
        self.task: Any = None
        self.rows = self.errors = 0
        self.kept = 0
        self.started_at = self.shown_at = time.monotonic()

    def started(self, reader: Any, scorers: list[str], kept: int) -> None:
        self.reader, self.kept = reader, kept
        kept_text = f" ({kept} rows kept from the previous run)" if kept else ""
        self.console.print(f"scoring {reader.path} with {', '.join(scorers)}{kept_text}", highlight=False)
        if self.live:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("[bold]scoring"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%  {task.fields[rows]} rows, {task.fields[errors]} with errors"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("score", total=1000, rows=0, errors=0)

    def row_finished(self, row: dict[str, Any]) -> None:
        self.rows += 1
        if row.get("error") or any(e.get("status") == "error" for e in (row.get("scores") or {}).values()):
            self.errors += 1
        now = time.monotonic()
        if now - self.shown_at < (0.1 if self.live else 10.0):
            return
        self.shown_at = now
        fraction = self.reader.fraction if self.reader is not None else 0.0
        if self.bar is not None:
            self.bar.update(self.task, completed=int(fraction * 1000), rows=self.rows, errors=self.errors)
        else:
            rate = self.rows / max(now - self.started_at, 1e-9)
            self.console.print(f"scored {self.rows} rows ({fraction:.0%} of the file, {rate:.0f} rows/s)")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def _print_summary(summary: Any, ledger: Any, console: Any) -> None:
    from rich.table import Table

    from proctor.recorded import AGENT_SCORERS

    aggregates = summary.aggregates
    table = Table(title=f"Scores: {summary.path.name}", title_justify="left")
    for column in ("scorer", "mean 0..1", "raw mean", "scale", "scored", "passed", "errors", "skipped"):
        table.add_column(column, justify="left" if column == "scorer" else "right")
    for name, stat in aggregates.overall.items():
        data, scale = stat.to_dict(), AGENT_SCORERS[name].scale
        table.add_row(
            name,
            _fmt(data["mean"]),
            _fmt(data["raw_mean"], ".2f"),
            f"{scale[0]}-{scale[1]}" if scale else "0-1",
            str(data["count"]),
            str(data["passed"]),
            str(data["errors"]),
            str(data["skipped"]),
        )
    console.print(table)
    for group, members in aggregates.groups.items():
        if not members:
            continue
        first = aggregates.scorers[0]
        shown = sorted(members.items(), key=lambda item: _lowest_first(item[1][first]))[:_GROUP_ROWS]
        more = len(members) - len(shown)
        title = f"By {group} ({len(members)}; lowest {first} first" + (f", {more} more in --summary)" if more else ")")
        grouped = Table(title=title, title_justify="left")
        grouped.add_column(group)
        for name in aggregates.scorers:
            grouped.add_column(f"{name} mean (n, errors)", justify="right")
        for value, stats in shown:
            cells = [f"{_fmt(s.total / s.count if s.count else None)} ({s.count}, {s.errors})" for s in stats.values()]
            grouped.add_row(value, *cells)
        console.print(grouped)
    for error in summary.bad_rows[:10]:
        console.print(f"[yellow]bad row[/yellow] {error}", highlight=False)
    if aggregates.bad_rows > 10:
        console.print(f"... {aggregates.bad_rows} bad rows in all (each written to the output with its error)")
    total = ledger.total() if ledger is not None else None
    if total is not None and total.calls:
        cost = total.cost_usd
        money = "cost unknown (no price for the model)" if cost is None else f"${cost:.4f}"
        console.print(f"judge: {total.calls} calls ({total.cached_calls} cached), {total.total_tokens} tokens, {money}")
    rate = summary.read / summary.duration_s if summary.duration_s > 0 else 0.0
    where = f"; rows in {summary.output}" if summary.output is not None else ""
    done = f"{summary.read} rows" if summary.scored == summary.read else f"{summary.read} rows read, {summary.scored}"
    console.print(f"{done} scored in {summary.duration_s:.1f} s ({rate:.0f} rows/s){where}")


def _lowest_first(stat: Any) -> tuple[bool, float]:
    return (stat.count == 0, stat.total / stat.count if stat.count else 0.0)


def _exit_code(summary: Any) -> int:
    """The exit code of a scored file (the table in the module docstring)."""
    if summary.judged and summary.judged_errors == summary.judged:
        return EXIT_NOTHING_SCORED
    if summary.aggregates.errors or summary.aggregates.bad_rows:
        return EXIT_ERRORS
    if summary.aggregates.nothing_scored:  # every result skipped: nothing unchecked passes
        return EXIT_NOTHING_SCORED
    return EXIT_OK


def _all_skipped(summary: Any) -> bool:
    """Whether rows were read and every result of them was skipped (no error, no unreadable row)."""
    aggregates = summary.aggregates
    return bool(aggregates.nothing_scored and not aggregates.errors and not aggregates.bad_rows)


# Long only by its signature: Typer declares each option as a parameter; the body is a few steps.
def score_command(
    data: Path = typer.Argument(..., help="CSV, JSON Lines or JSON array of AgentData records (or service events)."),
    map_: list[str] = typer.Option(
        [],
        "--map",
        envvar="PROCTOR_SCORE_MAP",
        metavar="COLUMN=FIELD",
        help="COLUMN=FIELD: read FIELD from COLUMN (repeat or comma-separate).",
    ),
    scorers: str | None = typer.Option(
        None,
        "--scorers",
        envvar="PROCTOR_SCORERS",
        metavar="NAMES",
        help="Comma-separated scorers (default: every scorer some record has the fields for; a record "
        "without a scorer's input gets it skipped).",
    ),
    judge: str | None = typer.Option(
        None,
        "--judge",
        envvar="PROCTOR_JUDGE_MODEL",
        metavar="MODEL",
        rich_help_panel=PANEL_JUDGE,
        help="Judge model, provider/model (e.g. openai/gpt-4.1-mini).",
    ),
    concurrency: int = typer.Option(
        SCORE_CONCURRENCY,
        "--concurrency",
        "--workers",
        envvar=["PROCTOR_SCORE_CONCURRENCY", "PROCTOR_CONCURRENCY"],
        min=1,
        metavar="N",
        help="Rows (and judge calls) in flight.",
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        envvar="PROCTOR_SCORE_OUTPUT",
        metavar="FILE",
        rich_help_panel=PANEL_OUTPUT,
        help="Scored rows (.csv, .json or .jsonl; default DATA's name + .scores.jsonl), written as they finish.",
    ),
    resume: bool = typer.Option(
        False, "--resume", envvar="PROCTOR_SCORE_RESUME", help="Keep rows the output already has; score the rest."
    ),
    input_format: str | None = typer.Option(
        None,
        "--format",
        envvar="PROCTOR_SCORE_FORMAT",
        metavar="FORMAT",
        help="Input format: csv, jsonl or json (default: by name).",
    ),
    continue_on_error: bool = typer.Option(
        False,
        "--continue-on-error",
        envvar="PROCTOR_CONTINUE_ON_ERROR",
        help="Skip rows that cannot be read (each is reported with its line and written as an error row); "
        "default: stop at the first, naming its line.",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        envvar="PROCTOR_DRY_RUN",
        help="Read and validate every row, count the judge calls a run would make; call no model, write nothing.",
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        envvar="PROCTOR_SCORE_THRESHOLD",
        min=0,
        max=1,
        metavar="SCORE",
        rich_help_panel=PANEL_JUDGE,
        help="Pass at this normalised score.",
    ),
    judge_rpm: int | None = typer.Option(
        None,
        "--judge-rpm",
        envvar="PROCTOR_JUDGE_RPM",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_JUDGE,
        help="Judge requests per minute.",
    ),
    no_cache: bool = typer.Option(
        False,
        "--no-cache",
        envvar="PROCTOR_NO_CACHE",
        rich_help_panel=PANEL_JUDGE,
        help="Do not read or write the judge call cache.",
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        envvar="PROCTOR_CACHE_DIR",
        metavar="DIR",
        rich_help_panel=PANEL_JUDGE,
        help="Model call cache (default .proctor/cache).",
    ),
    summary_path: Path | None = typer.Option(
        None,
        "--summary",
        envvar="PROCTOR_SCORE_SUMMARY",
        metavar="FILE",
        rich_help_panel=PANEL_OUTPUT,
        help="Also write the aggregates (every group) as JSON.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", envvar="PROCTOR_QUIET", rich_help_panel=PANEL_OUTPUT, help="No progress output."
    ),
    suite: list[Path] = typer.Option(
        [],
        "--suite",
        envvar="PROCTOR_SCORE_SUITE",
        help="For trace files: the suite whose checks the traced conversations are scored with (repeat).",
    ),
    from_traces: str | None = typer.Option(
        None,
        "--from-traces",
        envvar="PROCTOR_FROM_TRACES",
        help="For trace files: which span attributes hold what: genai (default), openinference, logfire, "
        "or a YAML/JSON mapping file.",
    ),
    case_name: str | None = typer.Option(
        None, "--case", envvar="PROCTOR_CASE", help="For trace files: score every conversation as this case."
    ),
    dataset: Path | None = typer.Option(
        None,
        "--dataset",
        envvar="PROCTOR_SCORE_DATASET",
        metavar="PATH",
        help="For IBM watsonx recorded runs (*.messages.json, or a folder of them): the dataset JSON, or a "
        "folder holding <name>.json for each run.",
    ),
    as_json: bool = JSON,
) -> None:
    """Score recorded agent runs (AgentData rows, or IBM watsonx *.messages.json runs) offline.

    With --json, stdout holds only JSON (aggregates, a dry run's plan, or watsonx metrics); notes go to stderr.
    """
    if data.is_dir() or data.name.endswith(".messages.json") or dataset is not None:  # an ADK recorded run
        if not data.exists():
            fail(f"{data}: no such file or folder")
        # here, not at the top: the scorer pulls in the checks, and `proctor --help` must stay fast
        from proctor.cli._score_watsonx import score_watsonx

        judge_model = _judge_model(judge, concurrency, no_cache, cache_dir)
        raise typer.Exit(score_watsonx(data, dataset, judge_model, output, quiet, as_json=as_json))
    if not data.is_file():
        fail(f"{data}: no such file")
    if suite or from_traces is not None or case_name is not None or _is_trace_file(data):
        given: dict[str, object] = {"--output": output, "--resume": resume, "--dry-run": dry_run}
        given.update({"--scorers": scorers, "--map": map_})
        given.update({"--threshold": threshold, "--format": input_format, "--summary": summary_path})
        if unused := [name for name, value in given.items() if value]:
            fail(f"{', '.join(unused)}: not for trace files (their results go to .results/ beside {data.name})")
        traced = {"judge": judge, "concurrency": concurrency, "judge_rpm": judge_rpm, "no_cache": no_cache}
        raise typer.Exit(_score_traces(data, suite, from_traces, case_name, cache_dir=cache_dir, **traced))
    names = [n for n in scorers.split(",") if n.strip()] if scorers else None
    if _is_events_file(data):
        if output is not None and _same_file(data, output):
            fail(f"--output {output} is the input file {data}: scoring would overwrite it; choose another --output")
        events: dict[str, Any] = {"judge": judge, "workers": concurrency, "continue_on_error": continue_on_error}
        events.update(dry_run=dry_run, output=output, cache_dir=None if no_cache else cache_dir)
        raise typer.Exit(_score_events(data, events))
    from proctor.recorded import ScoreOptions
    from proctor.recorded._defaults import default_scorers

    scores_path = output or data.with_name(data.stem + ".scores.jsonl")
    guard(lambda: _check_outputs(data, scores_path, summary_path, resume=resume))
    if names is None and not resume:  # every scorer some record can feed (resume keeps the previous set)
        columns = _mapping(map_)
        names = guard(lambda: default_scorers(data, input_format, columns))
    options_ = guard(
        lambda: ScoreOptions(
            scorers=names,
            concurrency=concurrency,
            output=scores_path,
            resume=resume,
            columns=_mapping(map_),
            input_format=input_format,
            bad_rows="skip" if continue_on_error else "raise",
            threshold=threshold,
        )
    )
    if dry_run:
        raise typer.Exit(_dry_run(data, options_, as_json=as_json))
    progress = None if quiet or as_json else _Progress(live=is_terminal())
    model: Any = None
    ledger: Any = None
    if judge is not None:
        from proctor.models import ModelCache, ModelSettings, UsageLedger, get_model

        ledger = UsageLedger()
        cache = None if no_cache else (ModelCache(cache_dir) if cache_dir is not None else ModelCache())
        settings = ModelSettings(concurrency=concurrency, rpm=judge_rpm, cache=cache, ledger=ledger)
        model = guard(lambda: get_model(judge, settings=settings))
    summary = guard(lambda: _run(data, model, options_, progress))
    quiet_judged = quiet and summary is not None and not (judge is None and summary.scorers)
    if quiet_judged and not as_json:  # nothing to print: no console (rich's import is a tenth of a start-up)
        _write_summary(summary, summary_path)
        raise typer.Exit(_exit_code(summary))
    from proctor.cli._console import _console

    console = _console() if not as_json else _stderr_console()
    if summary is None:
        console.print(f"interrupted: the rows scored so far are in {options_.output}; rerun with --resume")
        raise typer.Exit(EXIT_INTERRUPTED)
    if judge is None and any(n != "tool_correctness_exact" for n in summary.scorers):
        console.print("[yellow]no judge model:[/yellow] judged scorers were skipped; pass --judge provider/model")
    if _all_skipped(summary):
        where = f"; the reasons are in {summary.output}" if summary.output is not None else ""
        rows = summary.aggregates.rows
        console.print(f"[red]nothing scored:[/red] every result of the {rows} rows was skipped{where}", highlight=False)
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False))
    elif not quiet:
        _print_summary(summary, ledger, console)
    _write_summary(summary, summary_path)
    raise typer.Exit(_exit_code(summary))


def _same_file(first: Path, second: Path) -> bool:
    from proctor.recorded._output import same_file

    return same_file(first, second)


def _check_outputs(data: Path, output: Path, summary: Path | None, *, resume: bool) -> None:
    """Refuse, before any work, outputs that would destroy a file or cannot be written (module docstring).

    Raises:
        DatasetError: Saying which option and why.
    """
    from proctor.recorded import DatasetError
    from proctor.recorded._output import check_overwrite, check_writable, output_format, same_file

    output_format(output)
    for label, path in (("--output", output), ("--summary", summary)):
        if path is not None and same_file(data, path):
            raise DatasetError(
                f"{label} {path} is the input file {data}: scoring would overwrite it; choose another {label}"
            )
    if summary is not None and same_file(output, summary):
        raise DatasetError(f"--summary {summary} is the --output file: the summary would overwrite the scored rows")
    check_writable(output, "--output")
    if summary is not None:
        check_writable(summary, "--summary")
    if not resume:
        check_overwrite(output)


def _write_summary(summary: Any, path: Path | None) -> None:
    """Write the JSON summary to `--summary PATH`, when given; exit 2 if it cannot be (the rows are kept)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        kept = f"; the scored rows are in {summary.output}" if summary.output is not None else ""
        fail(f"--summary {path}: could not write the summary ({exc.strerror or exc}){kept}", EXIT_USAGE)


def _stderr_console() -> Any:
    """Where notes go under `--json`: stdout holds only the JSON."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _judge_model(judge: str | None, concurrency: int, no_cache: bool, cache_dir: Path | None) -> Any:
    """The judge model `--judge` names (with the call cache unless `--no-cache`), or `None`."""
    if judge is None:
        return None
    from proctor.models import ModelCache, ModelSettings, get_model

    cache = None if no_cache else (ModelCache(cache_dir) if cache_dir is not None else ModelCache())
    return guard(lambda: get_model(judge, settings=ModelSettings(concurrency=concurrency, cache=cache)))


def _dry_run(data: Path, options: Any, *, as_json: bool = False) -> int:
    """Print what scoring would do (rows, bad rows, judge calls per scorer); exit 1 if a row is bad."""
    from rich.table import Table

    from proctor.cli._console import _console
    from proctor.recorded._batch import plan_file

    plan: dict[str, Any] = guard(lambda: plan_file(data, options))
    if as_json:
        typer.echo(json.dumps(plan, indent=2, ensure_ascii=False))
        return EXIT_ERRORS if plan["bad_rows"] else EXIT_OK
    console = _console()
    table = Table(title=f"Dry run: {data.name}, {plan['rows']} rows", title_justify="left")
    for column in ("scorer", "rows", "judge calls", "missing fields", "not exited"):
        table.add_column(column, justify="left" if column == "scorer" else "right")
    for name, counts in plan["scorers"].items():
        table.add_row(name, *(str(counts[k]) for k in ("rows", "judge_calls", "missing_fields", "not_exited")))
    console.print(table)
    for example in plan["bad_row_examples"]:
        console.print(f"[yellow]bad row[/yellow] {example}", highlight=False)
    console.print(f"{plan['judge_calls']} judge calls would be made; {plan['bad_rows']} bad rows")
    return EXIT_ERRORS if plan["bad_rows"] else EXIT_OK


def _run(data: Path, model: Any, options: Any, progress: _Progress | None) -> Any:
    """Score the file; `None` when interrupted (the output holds the rows scored so far)."""
    import anyio

    from proctor.checks._judging import Judge
    from proctor.recorded import score_file

    async def main() -> Any:
        judge = Judge(model) if model is not None else None
        try:
            return await score_file(data, judge, options, progress)
        finally:
            if model is not None:
                await model.aclose()

    try:
        return anyio.run(main)
    except KeyboardInterrupt:
        return None
    finally:
        if progress is not None:
            progress.close()
