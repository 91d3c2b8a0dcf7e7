"""`proctor report`: `evals-report.md` and a self-contained HTML report.

The report covers the newest run of each model in the history (preferring, per model, a run that covers
the cases the others ran), or the runs named; runs that covered different cases are compared on the
cases they share, and the command says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import K_HELP, fail, guard, plural
from proctor.cli._help import epilog
from proctor.cli._history import HISTORY, is_results_file, missing_file, open_history, suites_dir
from proctor.cli._options import JSON
from proctor.errors import ConfigError

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "report_command"]

EPILOG = epilog(
    [
        ("The newest run of each model, as markdown and HTML:", "proctor report"),
        ("Two runs side by side, the HTML file only:", "proctor report RUN_A RUN_B --no-markdown -o reports/"),
        ("What was written, as JSON:", "proctor report --json"),
    ],
    [(0, "written"), (2, "no run to report, a run or file not found, cannot write, or bad usage")],
)


def _chosen_runs(refs: list[str], history: Path | None) -> tuple[list[tuple[dict[str, Any], Path]], list[str]]:
    """The runs to report, and notes on the choice.

    Those named (files or ids), else the newest run of each model in the history that covers the cases the
    others ran (`HistoryStore.comparable_latest`).
    """
    from proctor.results import load_run

    paths: list[tuple[Path, str | None]] = []
    notes: list[str] = []
    ids = [ref for ref in refs if not is_results_file(ref)]
    if ids or not refs:
        with open_history(history) as store:
            for ref in refs:
                if is_results_file(ref):
                    paths.append((Path(ref), None))
                else:
                    summary = store.get(ref)
                    paths.append((Path(summary.path or ""), summary.run_id))
            if not refs:
                latest, notes = store.comparable_latest()
                paths = [(Path(s.path or ""), s.run_id) for s in latest]
    else:
        paths = [(Path(ref), None) for ref in refs]
    runs = []
    for path, run_id in paths:
        if run_id is not None and not path.is_file():
            raise missing_file(path, run_id)
        runs.append((load_run(path), path))
    return runs, notes


def _like_with_like(runs: list[tuple[dict[str, Any], Path]]) -> tuple[list[tuple[dict[str, Any], Path]], str | None]:
    """The runs restricted to the cases all of them covered, and a note saying so (`None`: they all had the same).

    Raises:
        ConfigError: The runs share no case at all.
    """
    from proctor.results import restrict_run, shared_case_keys

    shared = shared_case_keys([data for data, _ in runs])
    if all(len(data["cases"]) == len(shared) for data, _ in runs):
        return runs, None
    covered = ", ".join(f"{data['run_id']}: {plural(len(data['cases']), 'case')}" for data, _ in runs)
    if not shared:
        raise ConfigError(f"the runs share no case ({covered}): name runs of the same suites")
    note = (
        f"the runs covered different cases ({covered}): the report compares the {plural(len(shared), 'case')} "
        "all of them ran"
    )
    return [(restrict_run(data, shared), path) for data, path in runs], note


def report_command(
    runs: list[str] = typer.Argument(
        None, help="Run ids or results files (default: the newest run of each model in the history)."
    ),
    history: Path | None = HISTORY,
    output_dir: Path | None = typer.Option(
        None,
        "--output-dir",
        "-o",
        envvar="PROCTOR_REPORT_DIR",
        metavar="DIR",
        help="Where evals-report.md and evals-report.html go (default: the suites' directory).",
    ),
    markdown: bool = typer.Option(True, "--markdown/--no-markdown", help="Write evals-report.md."),
    html: bool = typer.Option(True, "--html/--no-html", help="Write evals-report.html (one self-contained file)."),
    k: int | None = typer.Option(None, "--k", envvar="PROCTOR_K", min=1, metavar="K", help=K_HELP),
    as_json: bool = JSON,
) -> None:
    """Rebuild the comparison report (markdown and HTML) from the run history or named runs."""
    from proctor.results import build_report, write_report

    if not markdown and not html:
        fail("--no-markdown and --no-html: nothing to write")
    chosen, notes = guard(lambda: _chosen_runs(list(runs or []), history))
    if not chosen:
        fail("the history has no runs yet: `proctor run` records each run, or name results files")
    chosen, note = guard(lambda: _like_with_like(chosen))
    report = build_report(chosen, k=k)
    directory = output_dir or suites_dir(history)
    try:
        written = write_report(
            report,
            markdown=directory / "evals-report.md" if markdown else None,
            html=directory / "evals-report.html" if html else None,
        )
    except OSError as exc:
        fail(f"cannot write the report in {directory}: {exc}")
    if as_json:
        runs_ = [{"label": run.label, "run_id": run.summary.run_id, "model": run.summary.model} for run in report.runs]
        typer.echo(json.dumps({"runs": runs_, "written": [str(path) for path in written]}, indent=2))
        return
    labels = ", ".join(f"{run.label} ({run.summary.run_id})" for run in report.runs)
    for line in [*notes, *([note] if note else [])]:
        typer.echo(f"note: {line}")
    typer.echo(f"report of {plural(len(report.runs), 'run')}: {labels}")
    for path in written:
        typer.echo(f"wrote {path}")
