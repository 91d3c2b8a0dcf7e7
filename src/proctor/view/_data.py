"""What the viewer reads: the history store, the results files it points to, and the journals of runs in progress.

Every request opens the store afresh (SQLite, read-only use), so a run that finishes while the viewer is
open shows up on the next page load. A run in progress is not in the store yet: its journal
(`<run id>.journal.jsonl`, one line per finished trial) is, in the results directory, until the run ends.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proctor.errors import ConfigError
from proctor.results import HistoryStore, RunSummary, StoredCase, load_run

__all__ = ["JournalChunk", "LiveRun", "RunStore", "read_journal"]

JOURNAL_SUFFIX = ".journal.jsonl"


@dataclass(slots=True)
class JournalChunk:
    """Complete lines read from a journal, from a byte offset on."""

    header: dict[str, Any] | None
    """The run header, when the chunk started at the beginning of the file."""
    trials: list[dict[str, Any]]
    """Trial records (`case`, `name`, `file`, then the trial's JSON form)."""
    offset: int
    """Where the next read starts (after the last complete line)."""


def read_journal(path: Path, offset: int = 0) -> JournalChunk:
    """Read a journal's complete lines from `offset` (a line still being written is left for later).

    Raises:
        OSError: The journal cannot be read (it is removed when its run ends).
    """
    with path.open("rb") as file:
        file.seek(offset)
        data = file.read()
    end = data.rfind(b"\n") + 1
    header: dict[str, Any] | None = None
    trials: list[dict[str, Any]] = []
    for line in data[:end].splitlines():
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # a line cut short by a crash
        if not isinstance(record, dict):
            continue
        if record.get("kind") == "run":
            header = record
        elif record.get("kind") == "trial":
            trials.append(record)
    return JournalChunk(header, trials, offset + end)


@dataclass(slots=True)
class LiveRun:
    """A run whose journal exists: in progress (or stopped without writing its results)."""

    run_id: str
    journal: Path
    header: dict[str, Any]
    trials: list[dict[str, Any]] = field(default_factory=list)
    offset: int = 0
    """The journal's length read so far (the page's event stream continues from here)."""

    @property
    def results_file(self) -> Path:
        """Where the run's results JSON will be written."""
        return self.journal.with_name(self.run_id + ".json")

    def counts(self) -> dict[str, int]:
        """Finished trials by status."""
        counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        for trial in self.trials:
            status = str(trial.get("status"))
            counts[status] = counts.get(status, 0) + 1
        return counts


class RunStore:
    """The viewer's read side over one history store and the results directories around it.

    Args:
        history: The history database (it may not exist yet: the viewer then lists no finished run).
        results_dirs: More directories to look for journals of runs in progress in (the directories of
            the stored runs and `<project>/.results` beside the store are always looked in).
    """

    def __init__(self, history: Path, results_dirs: Sequence[Path] = ()) -> None:
        self.history = history
        self.results_dirs = list(results_dirs)

    def _open(self) -> HistoryStore | None:
        if not self.history.exists():
            return None
        return HistoryStore(self.history, create=False)

    def runs(self) -> list[RunSummary]:
        """Every stored run, newest first."""
        store = self._open()
        if store is None:
            return []
        with store:
            return store.runs()

    def get(self, ref: str) -> RunSummary:
        """A stored run by id (or unique id prefix).

        Raises:
            ConfigError: No run, or several, match.
        """
        store = self._open()
        if store is None:
            raise ConfigError(f"no run history at {self.history} yet")
        with store:
            return store.get(ref)

    def load(self, run: RunSummary) -> dict[str, Any]:
        """A stored run's results JSON.

        Raises:
            ConfigError: The results file is gone or unreadable.
        """
        if run.path is None:
            raise ConfigError(f"run {run.run_id} has no results file in the history")
        return load_run(Path(run.path))

    def cases(self, run: RunSummary) -> list[StoredCase]:
        """A run's cases with their trials and checks (from its results file; the index when the file is gone)."""
        if run.path is not None and Path(run.path).is_file():
            return StoredCase.from_data(load_run(Path(run.path)))
        store = self._open()
        if store is None:
            raise ConfigError(f"no run history at {self.history}")
        with store:
            return store.cases(run)

    def _journal_dirs(self, runs: Iterable[RunSummary]) -> list[Path]:
        dirs = list(self.results_dirs)
        if self.history.parent.name == ".proctor":
            dirs.append(self.history.parent.parent / ".results")
        dirs += [Path(run.path).parent for run in runs if run.path]
        return [d for d in dict.fromkeys(d.resolve() for d in dirs) if d.is_dir()]

    def live_runs(self, runs: Iterable[RunSummary] | None = None) -> list[LiveRun]:
        """Runs whose journal is still there (newest first), read to their last complete line."""
        found: list[LiveRun] = []
        for directory in self._journal_dirs(self.runs() if runs is None else runs):
            for path in directory.glob("*" + JOURNAL_SUFFIX):
                live = _read_live(path)
                if live is not None:
                    found.append(live)
        return sorted(found, key=lambda r: str(r.header.get("started_at") or ""), reverse=True)

    def live(self, run_id: str) -> LiveRun | None:
        """The run in progress with this id, if its journal is found."""
        return next((run for run in self.live_runs() if run.run_id == run_id), None)


def _read_live(path: Path) -> LiveRun | None:
    try:
        chunk = read_journal(path)
    except OSError:
        return None  # the run ended (and removed its journal) while we looked
    if chunk.header is None or not isinstance(chunk.header.get("run_id"), str):
        return None
    return LiveRun(chunk.header["run_id"], path, chunk.header, chunk.trials, chunk.offset)
