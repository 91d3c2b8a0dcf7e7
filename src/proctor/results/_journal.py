"""The run journal: one JSON line per finished trial, appended as trials finish.

A crash, a kill or Ctrl-C loses no finished trial: each line is written to the operating system as the
trial is recorded (see `Journal`), and `--resume` reads it (or the final results JSON) back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from proctor.errors import ConfigError
from proctor.results._json import JSONDecodeError, dumps, loads
from proctor.results._model import TrialResult

__all__ = ["Journal", "read_previous_trials"]


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
