"""Record a run: one `Recorder` for the journal (each trial as it finishes), the results file and history.

The journal's header lists the run's cases with their planned trials, so a run resumed from its journal
knows every case it planned, also those none of whose trials finished (`--resume`).
"""

from __future__ import annotations

import gc
import re
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

_LEFT = "trials left to run"
_NOTE = re.compile(rf"(^|; )\d+ cases? not resumed (has|have) {_LEFT}$")
"""The note a partial resume adds to the reason of the run it resumed (`Recorder.finish`)."""


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
        stale = plan.stale  # a resumed run's trials that run again: in the results until replaced
        cases = [
            CaseResult(
                c.name,
                c.suite,
                file,
                list(c.tags),
                c.scoring.min_pass_rate,
                [*plan.kept[key], *stale[key].values()] if key in stale else plan.kept[key],
                c.description,
                c.trials,
            )
            for c, file, key in zip(plan.cases, files, keys, strict=True)
        ]
        self._by_key = dict(zip(keys, cases, strict=True))
        if plan.carried:  # a resumed run's cases this run does not plan: in the results as they were, in its order
            cases = _in_order([*cases, *plan.carried], plan.order)
        self.result = RunResult(
            run_id=plan.run_id,
            started_at=plan.started_at,
            model=plan.model,
            target=target,
            cases=cases,
            seed=seed,
            planned_trials=sum(c.trials for c in plan.cases) + sum(c.planned or len(c.trials) for c in plan.carried),
            k=k,
        )
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
            "cases": [  # every case with its planned trials, as `results._journal.HEADER_CASE_FIELDS`: for --resume
                [c.file, c.name, c.suite, c.planned or len(c.trials), c.min_pass_rate, c.tags, c.description]
                for c in self.result.cases
            ]
            if is_new
            else None,
        }
        journal = Journal(path, header)
        if plan.resumed and is_new:  # resumed from a results file: its trials start the new journal
            for case in self.result.cases:  # kept, to run again (a new line replaces one), carried over
                for trial in case.trials:
                    journal.record(case.name, case.file, trial)
        return journal

    def record(self, case: Case, trial: TrialResult, key: str | None = None) -> None:
        """Add a finished trial (journaled at once); `key` is the case's `case_key`, when the caller has it."""
        if key is None:
            key = case_key(case)
        result = self._by_key[key]
        if self.plan.stale:  # a resumed run: the trial may replace one of the same number
            self._replace(key, trial.trial, result)
        result.trials.append(trial)
        if self.journal is not None:
            self.journal.record(result.name, result.file, trial)  # the case's name and file (`str(case.file)`)

    def _replace(self, key: str, number: int, result: CaseResult) -> None:
        """Drop the resumed run's trial `number` of the case, if it ran again (its new trial is being added)."""
        old = self.plan.stale.get(key, {}).pop(number, None)
        if old is not None:
            result.trials = [t for t in result.trials if t is not old]
            result._aggregate = None  # as many trials as before: the caches keyed by their count are stale
            self.result._summary = None

    def finish(self, status: str, reason: str | None = None) -> RunOutcome:
        """Close the run with `status` (and the reason it stopped early); write the results and index them.

        A resumed run that ran all it planned but carried over a case still incomplete (a `--case` subset
        of an interrupted run) has not completed: it ends as the run it resumed did, and says why.
        """
        result = self.result
        ended = self.plan.resumed_end
        if status == "complete" and ended is not None and any(c.missing_trials for c in self.plan.carried):
            previous, why = ended
            left = sum(1 for c in self.plan.carried if c.missing_trials)
            note = f"{left} case{'s' if left > 1 else ''} not resumed {'have' if left > 1 else 'has'} {_LEFT}"
            why = _NOTE.sub("", why or "")  # the note of an earlier partial resume, replaced
            status = previous if previous != "complete" else "interrupted"
            reason = f"{why}; {note}" if why else note
        result.end(status, reason)
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


def _in_order(cases: list[CaseResult], order: list[str]) -> list[CaseResult]:
    """`cases` in the resumed run's `order` of keys (any it does not have after, as they were)."""
    position = {key: index for index, key in enumerate(order)}
    return sorted(cases, key=lambda c: position.get(c.key, len(position)))
