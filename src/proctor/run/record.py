"""Record a run: one `Recorder` for the journal (each trial as it finishes), the results file and history."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proctor.results import (
    CaseResult,
    Journal,
    RunResult,
    TrialResult,
    default_history_path,
    index_run,
    write_bytes,
)
from proctor.run.plan import Plan
from proctor.run.trial import case_key
from proctor.suite import Case

__all__ = ["Recorder", "RunOutcome"]


class RunOutcome:
    """What a run produced.

    Args:
        result: The run's typed result.
        data: Its JSON form, when the caller has it; otherwise made from `result` on first use.
        path: Where the results JSON was written.
        cases: The cases that were planned.
    """

    __slots__ = ("_data", "cases", "path", "result")

    def __init__(
        self,
        result: RunResult,
        data: dict[str, Any] | None = None,
        path: Path | None = None,
        cases: list[Case] | None = None,
    ) -> None:
        self.result = result
        """The run's typed result; `result.summary` holds its figures (the console, `--ci` JSON and exit
        code read them)."""
        self._data = data
        self.path = path
        """Where the results JSON was written."""
        self.cases: list[Case] = cases if cases is not None else []
        """The cases that were planned."""

    @property
    def data(self) -> dict[str, Any]:
        """Its JSON form: what was written (`result.to_dict()`).

        Made on first use: a `proctor run` that writes its results file and history does not need it.
        """
        if self._data is None:
            self._data = self.result.to_dict()
        return self._data

    def __repr__(self) -> str:
        return f"RunOutcome(run_id={self.result.run_id!r}, status={self.result.status!r}, path={self.path!r})"


class Recorder:
    """Collects a run's trials; journals each as it finishes; writes the results and indexes the run.

    Args:
        plan: The run's plan (its kept trials are part of the result from the start).
        target: The target(s) description.
        seed: The run's `--seed`.
        k: The k of pass@k and pass^k (`None`: each case's trial count).
        write: Journal and write files (off for library use that only wants the result).
        history: The history store (default: beside the results directory).
    """

    def __init__(
        self, plan: Plan, target: str, *, seed: int | None, k: int | None, write: bool, history: Path | None
    ) -> None:
        self.plan = plan
        self.history = history
        files = [str(c.file) for c in plan.cases]
        keys = [f"{file}::{c.name}" for c, file in zip(plan.cases, files, strict=True)]  # each `case_key`, made once
        self.result = RunResult(
            run_id=plan.run_id,
            started_at=plan.started_at,
            model=plan.model,
            target=target,
            cases=[
                CaseResult(c.name, c.suite, file, list(c.tags), c.scoring.min_pass_rate, plan.kept[key], c.description)
                for c, file, key in zip(plan.cases, files, keys, strict=True)
            ],
            seed=seed,
            planned_trials=sum(c.trials for c in plan.cases),
            k=k,
        )
        self._by_key = dict(zip(keys, self.result.cases, strict=True))
        self.journal = self._open_journal(seed) if write else None

    def _open_journal(self, seed: int | None) -> Journal:
        plan = self.plan
        path = plan.results_dir / f"{plan.run_id}.journal.jsonl"
        is_new = not path.exists()
        header = {
            "run_id": plan.run_id,
            "started_at": plan.started_at,
            "model": plan.model,
            "target": self.result.target,
            "seed": seed,
            "planned_trials": self.result.planned_trials,  # the viewer's live page shows "N of M"
        }
        journal = Journal(path, header)
        if plan.resumed and is_new:  # resumed from a results file: its kept trials start the new journal
            for case in plan.cases:
                for trial in plan.kept[case_key(case)]:
                    journal.record(case.name, str(case.file), trial)
        return journal

    def record(self, case: Case, trial: TrialResult, key: str | None = None) -> None:
        """Add a finished trial (journaled at once); `key` is the case's `case_key`, when the caller has it."""
        result = self._by_key[case_key(case) if key is None else key]
        result.trials.append(trial)
        if self.journal is not None:
            self.journal.record(result.name, result.file, trial)  # the case's name and file (`str(case.file)`)

    def finish(self, status: str, reason: str | None = None) -> RunOutcome:
        """Close the run with `status` (and the reason it stopped early); write the results and index them."""
        result = self.result
        result.status, result.reason = status, reason
        result.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        collecting = gc.isenabled()
        gc.disable()  # what follows makes no cycles; a collection midway would only walk the run's objects
        try:
            path: Path | None = None
            if self.journal is not None:
                path = self.plan.results_dir / f"{self.plan.run_id}.json"
                write_bytes(path, result.json_chunks())  # each trial's bytes as journaled: encoded once
                result.release_encoded()  # ~1.3 KB a trial not needed again: the peak of what follows is lower
                self.journal.close(remove=True)
                index_run(self.history or default_history_path(self.plan.results_dir), path, result)
        finally:
            if collecting:
                gc.enable()
        return RunOutcome(result, None, path, self.plan.cases)
