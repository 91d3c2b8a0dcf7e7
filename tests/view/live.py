"""A run in progress, made with Proctor's own journal: the tests append trials while a page or stream is open."""

from __future__ import annotations

from pathlib import Path

from proctor.checks import CheckResult
from proctor.results import CaseResult, HistoryStore, Journal, RunResult, TrialResult, write_json
from proctor.transcript import Message

LIVE = "live-model_20261104T090000Z"
HEADER = {"run_id": LIVE, "started_at": "2026-11-04T09:00:00+00:00", "model": "live/model", "target": "t", "seed": None}


def trial(case: str, number: int, passed: bool) -> TrialResult:
    check = CheckResult(
        "contains 'yes'", "contains", "passed" if passed else "failed", 1.0 if passed else 0.0, 1.0,
        "found 'yes'" if passed else "expected reply to contain 'yes'; 'yes' not found", 0,
    )  # fmt: skip
    turns = [Message("user", "ok?"), Message("assistant", "yes" if passed else "no", [], 3.0)]
    return TrialResult(f"live.yaml::{case}", number, "passed" if passed else "failed", check.score, turns, [check])


class LiveRun:
    """A run's journal in `<root>/.results`, and the end of the run (results file, history, journal removed)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.results = root / ".results"
        self.history = root / ".proctor" / "history.db"
        self.journal = Journal(self.results / f"{LIVE}.journal.jsonl", HEADER)
        self.trials: dict[str, list[TrialResult]] = {}

    def add(self, case: str, number: int, passed: bool) -> None:
        result = trial(case, number, passed)
        self.trials.setdefault(case, []).append(result)
        self.journal.record(case, "live.yaml", result)

    def finish(self) -> Path:
        cases = [CaseResult(name, "live", "live.yaml", [], 1.0, trials) for name, trials in self.trials.items()]
        run = RunResult(LIVE, HEADER["started_at"], "live/model", "t", cases, "2026-11-04T09:01:00+00:00")
        path = self.results / f"{LIVE}.json"
        data = run.to_dict()
        write_json(path, data)
        with HistoryStore(self.history) as store:
            store.add(path, data)
        self.journal.close(remove=True)
        return path
