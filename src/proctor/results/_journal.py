"""The run journal: one JSON line per finished trial, appended as trials finish.

A crash, a kill or Ctrl-C loses no finished trial: each line is written to the operating system as the
trial is recorded (see `Journal`), and `--resume` reads it (or the final results JSON) back
(`read_previous_run`): its trials, and the cases the run planned (the journal's header lists them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.errors import ConfigError
from proctor.results._json import JSONDecodeError, dumps, loads
from proctor.results._model import TrialResult

__all__ = ["HEADER_CASE_FIELDS", "Journal", "PreviousRun", "RecordedCase", "read_previous_run", "read_previous_trials"]


class Journal:
    """Append-only record of a run: each line reaches the operating system as it is recorded.

    A line is one `os.write` on a file opened with `O_APPEND` (no buffer in this process), so a killed
    or crashed process loses no recorded trial. There is no fsync: the kernel keeps what was written
    when the process dies; only a power loss or an operating-system crash could lose the last lines
    (an fsync per trial would cost ~100 µs, against ~2.5 µs for the write; `--resume` reruns whatever is
    missing).
    """

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        cut = existed and _ends_mid_line(path)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        if cut:
            # A crash cut the last line short: end it, so the next record starts a line of its own
            # (the reader skips the cut line; glued onto it, the next record would be lost too).
            self._append(b"\n")
        if not existed:
            self._append(dumps({"kind": "run", **header}) + b"\n")

    def _append(self, data: bytes) -> None:
        fd = self._fd
        if fd is None:
            raise ValueError(f"the journal {self.path} is closed")
        written = os.write(fd, data)
        if written < len(data):  # a regular file takes a whole line at once; a short write is continued, not dropped
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(fd, view) :]

    def record(self, name: str, file: str, trial: TrialResult) -> None:
        """Append one finished trial: `kind`, `case`, `name`, `file`, then the trial's JSON form."""
        self._append(trial.journal_line(name, file))  # the trial's bytes, encoded once for this and the results file

    def close(self, *, remove: bool = False) -> None:
        """Close the journal; `remove` deletes it (once the final results file is written)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if remove:
            self.path.unlink(missing_ok=True)


def _ends_mid_line(path: Path) -> bool:
    """Whether a non-empty file's last byte is not a newline."""
    with path.open("rb") as file:
        file.seek(0, 2)
        if file.tell() == 0:
            return False
        file.seek(-1, 2)
        return file.read(1) != b"\n"


@dataclass(frozen=True, slots=True)
class RecordedCase:
    """A case of a previous run, as its results file (or journal) records it."""

    name: str
    file: str
    suite: str | None = None
    """`None`: not recorded (a journal of a Proctor before its header listed the cases)."""
    tags: tuple[str, ...] = ()
    min_pass_rate: float | None = None
    """`None`: not recorded."""
    description: str | None = None
    planned: int | None = None
    """The trials the run planned for it; `None`: not recorded (an older Proctor's interrupted run)."""

    @property
    def key(self) -> str:
        """`<file>::<name>`."""
        return f"{self.file}::{self.name}"


HEADER_CASE_FIELDS = ("file", "name", "suite", "trials", "min_pass_rate", "tags", "description")
"""A case as a journal's header lists it: its `cases` holds one list of these a case (`trials`: planned), every
case the run planned. Lists, not objects: a 5,000-case run's header is made and encoded in ~3 ms, ~7 ms as objects."""


@dataclass(frozen=True, slots=True)
class PreviousRun:
    """A run being resumed: its header, its trials and its cases."""

    path: Path
    """The results JSON or journal it was read from."""
    header: dict[str, Any]
    """Its run fields (`run_id`, `model`, `target`, `status`, ...; a results file's `cases` among them)."""
    trials: dict[tuple[str, int], TrialResult]
    """Every trial it has, by `(case key, trial number)`."""
    cases: dict[str, RecordedCase]
    """Its cases by key, in its order."""
    listed: bool
    """Whether `cases` is every case the run planned; `False` for a journal of an older Proctor, whose header
    did not list them: `cases` then has only those with a journaled trial, and little of each."""

    @property
    def run_id(self) -> str:
        """The run's id."""
        return str(self.header.get("run_id") or self.path.stem)

    @property
    def status(self) -> str:
        """How the run ended: `complete`, `interrupted` or `aborted` (a journal's run never ended: `interrupted`)."""
        return str(self.header.get("status") or "interrupted")


def read_previous_run(path: Path) -> PreviousRun:
    """Read a previous run from its results JSON or journal: header, trials and cases (for `--resume`).

    A journal line cut short by a crash is ignored.

    Raises:
        ConfigError: The file does not exist or is neither form.
    """
    header, trials = read_previous_trials(path)
    if path.suffix == ".jsonl":
        listed = _header_cases(header, path)
        if listed is not None:
            return PreviousRun(path, header, trials, listed, True)
        seen: dict[str, RecordedCase] = {}
        for key, _ in trials:
            if key not in seen:
                file, _, name = key.rpartition("::")
                seen[key] = RecordedCase(name, file)
        return PreviousRun(path, header, trials, seen, False)
    return PreviousRun(path, header, trials, _results_cases(header), True)


def _header_cases(header: dict[str, Any], path: Path) -> dict[str, RecordedCase] | None:
    """The cases a journal's header lists (`None` when it lists none: an older Proctor's journal)."""
    listed = header.get("cases")
    if listed is None:
        return None
    cases: dict[str, RecordedCase] = {}
    try:
        for file, name, suite, planned, min_pass_rate, tags, description in listed:  # `HEADER_CASE_FIELDS`
            if not isinstance(file, str) or not isinstance(name, str) or not isinstance(suite, str):
                raise TypeError("a case's file, name and suite are strings")
            if not isinstance(planned, int) or planned < 1 or not isinstance(min_pass_rate, int | float):
                raise TypeError(f"case {name!r}: trials must be a positive integer, min_pass_rate a number")
            case = RecordedCase(name, file, suite, tuple(tags or ()), min_pass_rate, description, planned)
            cases[case.key] = case
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"--resume: {path}: the run header's case list is not valid ({exc})") from None
    return cases


def _results_cases(data: dict[str, Any]) -> dict[str, RecordedCase]:
    """The cases of a results JSON, each with the trials it planned when that is known.

    An incomplete case records its planned trials (`planned_trials`); any other case planned the trials it
    has. A file of an older Proctor did not record them: its interrupted or aborted run's cases are then
    known only when its planned trials add up to the run's (`summary.trials.planned`).
    """
    raw = data["cases"]
    recorded = [case.get("planned_trials") for case in raw]
    guessed = [len(case["trials"]) if planned is None else planned for case, planned in zip(raw, recorded, strict=True)]
    total = ((data.get("summary") or {}).get("trials") or {}).get("planned")
    known = data.get("status") == "complete" or sum(guessed) == total
    cases: dict[str, RecordedCase] = {}
    for case, planned, guess in zip(raw, recorded, guessed, strict=True):
        entry = RecordedCase(
            case["name"],
            case["file"],
            case["suite"],
            tuple(case.get("tags") or ()),
            case["min_pass_rate"],
            case.get("description"),
            guess if known else planned,
        )
        cases[entry.key] = entry
    return cases


def read_previous_trials(path: Path) -> tuple[dict[str, Any], dict[tuple[str, int], TrialResult]]:
    """Read a previous run's header and trials from its results JSON or journal.

    Returns:
        The run header (`run_id`, `model`, ...) and trials by `(case key, trial number)`. A journal
        line cut short by a crash is ignored.

    Raises:
        ConfigError: The file does not exist or is neither form.
    """
    # the file format's validators load here, for `--resume` alone: a run that resumes nothing never builds its
    # ~13 record classes
    from proctor.results._format import validate_results, validate_trial

    if not path.exists():
        raise ConfigError(f"--resume: no such run file: {path}")
    trials: dict[tuple[str, int], TrialResult] = {}
    if path.suffix == ".jsonl":
        header: dict[str, Any] = {}
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            try:
                record = loads(line)
            except (JSONDecodeError, UnicodeDecodeError):
                continue  # the last line of a crashed run may be incomplete
            if not isinstance(record, dict):
                continue
            if record.get("kind") == "run":
                header = record
            elif record.get("kind") == "trial":
                # One record at a time: validating all at once holds every validated copy together, and
                # the collector walking them made reading a 5,000-trial journal twice as slow.
                validate_trial(record, f"--resume: {path}:{number}")
                trial = TrialResult.from_dict(record["case"], record)
                trials[(trial.case_key, trial.trial)] = trial
        if not header:
            raise ConfigError(f"--resume: {path} is not a Proctor run journal (no run header)")
        return header, trials
    try:
        data = loads(path.read_bytes())
        validate_results(data, f"--resume: {path}")
        for case in data["cases"]:
            key = f"{case['file']}::{case['name']}"
            for raw in case["trials"]:
                trial = TrialResult.from_dict(key, raw)
                trials[(key, trial.trial)] = trial
    except (JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"--resume: {path} is not a Proctor results file ({exc})") from None
    return data, trials
