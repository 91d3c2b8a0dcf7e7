"""`proctor runs`: list the runs in the history (model, date, pass rate, cost)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from proctor.cli._common import fail, guard, plural
from proctor.cli._help import epilog
from proctor.cli._history import HISTORY, console, open_history
from proctor.cli._options import JSON

__all__ = ["EPILOG", "runs_command"]

EPILOG = epilog(
    [
        ("The 20 newest runs in the project's history:", "proctor runs"),
        ("One model's newest 5 runs, as JSON:", "proctor runs -m gpt-4.1-mini -n 5 --json"),
        ("Index results files written elsewhere, then list:", "proctor runs --scan ci-artifacts/"),
    ],
    [(0, "listed (also when there is no run yet)"), (2, "no history there, a --scan folder missing, or bad usage")],
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def runs_command(
    history: Path | None = HISTORY,
    model: str | None = typer.Option(
        None, "--model", "-m", envvar="PROCTOR_MODEL", metavar="MODEL", help="Only this model's runs."
    ),
    limit: int = typer.Option(
        20, "--limit", "-n", envvar="PROCTOR_RUNS_LIMIT", min=1, metavar="N", help="Newest N runs."
    ),
    scan: list[Path] = typer.Option(
        [], "--scan", envvar="PROCTOR_SCAN", metavar="DIR", help="First index the results files under DIR (repeat)."
    ),
    prune: bool = typer.Option(False, "--prune", help="First forget runs whose results file is gone."),
    as_json: bool = JSON,
) -> None:
    """List the runs in the history, newest first."""
    from rich.table import Table

    for directory in scan:
        if not directory.is_dir():
            fail(f"--scan: {directory} is not a directory")
    with guard(lambda: open_history(history, create=bool(scan))) as store:
        notes = []
        for directory in scan:
            notes.append(f"indexed {plural(store.scan(directory), 'results file')} under {directory}")
        if prune:
            notes.append(f"forgot {plural(store.remove_missing(), 'run')} whose results file is gone")
        runs = store.runs(model=model, limit=limit)
    if as_json:
        typer.echo(json.dumps([asdict(run) for run in runs], indent=2))
        return
    out = console(min_width=max((len(run.run_id) for run in runs), default=3) + 150)
    for note in notes:
        out.print(note)
    table = Table(title=f"Runs ({store.path})", title_justify="left")
    widest = max((len(run.run_id) for run in runs), default=3)
    table.add_column("run", no_wrap=True, min_width=widest)  # whole ids: they are what other commands take
    for column, justify in [
        ("model", "left"),
        ("started (UTC)", "left"),
        ("status", "left"),
        ("cases P/T", "right"),
        ("pass rate", "right"),
        ("trials P/F/E", "right"),
        ("avg score", "right"),
        ("p50 ms", "right"),
        ("tokens", "right"),
        ("cost $", "right"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    rescored = any(run.rescored_from for run in runs)
    if rescored:  # the column only when a listed run was rescored: the width goes to the others
        table.add_column("rescored from", no_wrap=True)
    grouped = any(run.run_group for run in runs)
    if grouped:  # likewise: only when a listed run is one of a matrix
        table.add_column("matrix", no_wrap=True)
    for run in runs:
        row = (
            run.run_id,
            run.model or "-",
            run.started_at[:19].replace("T", " "),  # UTC; the seconds are enough to tell runs apart
            run.status,
            f"{run.passed}/{run.cases}",
            _pct(run.pass_rate),
            f"{run.trials_passed}/{run.trials_failed}/{run.trials_errored}",
            _num(run.avg_score),
            _num(run.p50_latency_ms, ".0f"),
            f"{run.tokens:,}",
            _num(run.cost_usd, ".4f"),
        )
        extra = [*([run.rescored_from or ""] if rescored else []), *([run.run_group or ""] if grouped else [])]
        table.add_row(*row, *extra)
    out.print(table)
    if not runs:
        out.print("no runs" + (f" of model {model}" if model else "") + ": `proctor run` records each run here")
