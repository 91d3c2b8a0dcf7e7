"""Helpers shared by the commands that read the run history: `runs`, `report`, `compare`, `rescore`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from proctor.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from proctor.results import HistoryStore, RunSummary, StoredCase

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = [
    "HISTORY",
    "HISTORY_HELP",
    "console",
    "is_results_file",
    "missing_file",
    "open_history",
    "resolve_run",
    "store_path",
    "stored_cases",
    "suites_dir",
]

HISTORY_HELP = (
    "Run store: a .db file, or a directory holding .proctor/ (default: the project's store, "
    ".proctor/history.db at the project root: the directory of proctor.yaml, else of .git; "
    "PROCTOR_HOME moves it)."
)
HISTORY = typer.Option(None, "--history", envvar="PROCTOR_HISTORY", help=HISTORY_HELP)
"""The `--history` option, the same on every command that reads or writes the store."""


def console(min_width: int = 180) -> Console:
    """A console that does not squeeze tables to 80 columns when output goes to a file or pipe.

    Args:
        min_width: The width used when output is not a terminal (at least this, or the terminal's width).
    """
    from rich.console import Console

    out = Console(highlight=False, soft_wrap=True)
    return out if out.is_terminal else Console(highlight=False, soft_wrap=True, width=max(out.width, min_width))


def is_results_file(ref: str) -> bool:
    """Whether a run reference names a results file rather than a run id."""
    return ref.endswith(".json") and Path(ref).is_file()


def store_path(path: Path | None) -> Path:
    """The store `--history` names, else the working directory's project store.

    Raises:
        SuiteError: The project's `proctor.yaml` is invalid.
    """
    from proctor.results import resolve_history_path

    return resolve_history_path(path)


def open_history(path: Path | None, *, create: bool = False) -> HistoryStore:
    """Open the history store named by `--history` (or the project's)."""
    from proctor.results import HistoryStore

    return HistoryStore(store_path(path), create=create)


def suites_dir(history: Path | None) -> Path:
    """The directory the history belongs to: the parent of its `.proctor/` folder, else the current one."""
    resolved = store_path(history)
    return resolved.parent.parent if resolved.parent.name == ".proctor" else Path(".")


def resolve_run(ref: str, history: Path | None) -> tuple[Path, RunSummary | None]:
    """A run reference (results file, run id or id prefix) as its results file and stored summary.

    Raises:
        ConfigError: The run is not in the history, or the history is missing.
    """
    if is_results_file(ref):
        return Path(ref), None
    with open_history(history) as store:
        summary = store.get(ref)
    assert summary.path is not None
    return Path(summary.path), summary


def stored_cases(ref: str, history: Path | None) -> tuple[str, list[StoredCase]]:
    """A run's id and its cases' trial outcomes: from the history (no file parsed), or from a results file."""
    from proctor.results import StoredCase, load_run

    if is_results_file(ref):
        data: dict[str, Any] = load_run(Path(ref))
        return data["run_id"], StoredCase.from_data(data)
    with open_history(history) as store:
        summary = store.get(ref)
        cases = store.cases(summary)
    if summary.path is not None and Path(summary.path).is_file():  # the index keeps no checks: read them
        checks = {case.key: case.checks for case in StoredCase.from_data(load_run(Path(summary.path)))}
        cases = [replace(case, checks=checks.get(case.key, {})) for case in cases]
    return summary.run_id, cases


def missing_file(path: Path, run_id: str) -> ConfigError:
    """The error for a history entry whose results file is gone."""
    return ConfigError(f"the results file of run {run_id} is gone ({path}); `proctor runs --prune` forgets such runs")
