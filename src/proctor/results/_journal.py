"""The run journal: one JSON line per finished trial, appended as trials finish.

A crash or Ctrl-C loses no finished trial: the journal is flushed after every line, and `--resume`
reads it (or the final results JSON) back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from proctor.errors import ConfigError
from proctor.results._format import validate_results, validate_trial
from proctor.results._model import TrialResult

__all__ = ["Journal", "read_previous_trials"]


class Journal:
    """Append-only, line-buffered record of a run."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        cut = existed and _ends_mid_line(path)
        self._file: IO[str] = path.open("a", encoding="utf-8")
        if cut:
            # A crash cut the last line short: end it, so the next record starts a line of its own
            # (the reader skips the cut line; glued onto it, the next record would be lost too).
            self._file.write("\n")
        if not existed:
            self._write({"kind": "run", **header})

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()

    def record(self, name: str, file: str, trial: TrialResult) -> None:
        """Append one finished trial."""
        self._write({"kind": "trial", "case": trial.case_key, "name": name, "file": file, **trial.to_dict()})

    def close(self, *, remove: bool = False) -> None:
        """Close the journal; `remove` deletes it (once the final results file is written)."""
        self._file.close()
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
    if not path.exists():
        raise ConfigError(f"--resume: no such run file: {path}")
    trials: dict[tuple[str, int], TrialResult] = {}
    if path.suffix == ".jsonl":
        header: dict[str, Any] = {}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # the last line of a crashed run may be incomplete
            if record.get("kind") == "run":
                header = record
            elif record.get("kind") == "trial":
                validate_trial(record, f"--resume: {path}:{number}")
                trial = TrialResult.from_dict(record["case"], record)
                trials[(trial.case_key, trial.trial)] = trial
        if not header:
            raise ConfigError(f"--resume: {path} is not a Proctor run journal (no run header)")
        return header, trials
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        validate_results(data, f"--resume: {path}")
        for case in data["cases"]:
            key = f"{case['file']}::{case['name']}"
            for raw in case["trials"]:
                trial = TrialResult.from_dict(key, raw)
                trials[(key, trial.trial)] = trial
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"--resume: {path} is not a Proctor results file ({exc})") from None
    return data, trials
