"""The history store keeps an `incomplete` case as such (no schema change: a case's status is text), and its
run's figures never count it as passed or errored: what `proctor runs`, `compare` and `view` read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from proctor.results import CaseResult, HistoryStore, RunResult, TrialResult, write_json


def passed(case: str, number: int) -> TrialResult:
    return TrialResult(f"s.yaml::{case}", number, "passed", 1.0)


def interrupted() -> RunResult:
    cases = [
        CaseResult(name, "s", "s.yaml", [], 1.0, [passed(name, n) for n in range(1, ran + 1)], planned=3)
        for name, ran in (("done", 3), ("partly", 1), ("never", 0))
    ]
    run = RunResult("r_20261129T000000Z", "2026-11-29T00:00:00+00:00", "m", "t", cases, planned_trials=9)
    run.end("interrupted")
    return run


@pytest.mark.parametrize("given", ["result", "json", "file"])
def test_an_incomplete_case_is_stored_as_incomplete(tmp_path: Path, given: str) -> None:
    run = interrupted()
    path = tmp_path / "r.json"
    data: dict[str, Any] = run.to_dict()
    write_json(path, data)
    with HistoryStore(tmp_path / "history.db") as store:
        store.add(path, {"result": run, "json": data, "file": None}[given])  # type: ignore[arg-type]
        (summary,) = store.runs()
        cases = store.cases(summary)
    assert (summary.status, summary.cases, summary.passed, summary.failed, summary.errored) == (
        "interrupted",
        3,
        1,
        0,
        0,
    )
    assert (summary.trials_run, summary.trials_passed, summary.trials_errored) == (4, 4, 0)
    assert [(c.name, c.status) for c in cases] == [
        ("done", "passed"),
        ("partly", "incomplete"),
        ("never", "incomplete"),
    ]
    assert cases[1].trials == {1: ("passed", 1.0)} and cases[2].trials == {}


def test_proctor_runs_lists_the_run_as_interrupted_with_only_its_passed_cases_passed(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json(path, interrupted().to_dict())
    history = tmp_path / "history.db"
    with HistoryStore(history) as store:
        store.add(path)
    result = CliRunner().invoke(app, ["runs", "--history", str(history), "--json"])
    assert result.exit_code == 0, result.output
    (listed,) = json.loads(result.stdout)
    assert (listed["status"], listed["cases"], listed["passed"], listed["errored"]) == ("interrupted", 3, 1, 0)
    table = CliRunner().invoke(app, ["runs", "--history", str(history)])
    assert "interrupted" in table.stdout and "1/3" in table.stdout
