"""`proctor compare` when B's run stopped before all its planned trials ran: its cases are `incomplete`.

Such a case is neither a regression nor an error: its change is `incomplete`; its trials that ran pair as any
others; a case none of whose trials ran in B leaves the comparison undecided (`--fail-on-regression`: 5).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from proctor.cli._compare import EXIT_UNDECIDED
from proctor.results import CaseResult, RunResult, TrialResult, write_json

runner = CliRunner()


def passed(case: str, number: int) -> TrialResult:
    return TrialResult(f"s.yaml::{case}", number, "passed", 1.0)


def results(path: Path, run_id: str, ran: dict[str, int], status: str) -> str:
    """A results file of `ran[case]` passed trials of 3 planned per case, ended with `status`."""
    cases = [
        CaseResult(name, "s", "s.yaml", [], 1.0, [passed(name, n) for n in range(1, count + 1)], planned=3)
        for name, count in ran.items()
    ]
    run = RunResult(run_id, "2026-11-29T00:00:00+00:00", "m", "t", cases, planned_trials=3 * len(cases))
    run.end(status)
    write_json(path, run.to_dict())
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    a = results(tmp_path / "a.json", "a_20261129T000000Z", {"once": 3, "never": 3}, "complete")
    b = results(tmp_path / "b.json", "b_20261129T000000Z", {"once": 1, "never": 0}, "interrupted")
    return a, b


def test_compare_json_says_incomplete_not_errored(files: tuple[str, str]) -> None:
    result = runner.invoke(app, ["compare", *files, "--json", "--fail-on-regression"])
    assert result.exit_code == EXIT_UNDECIDED, result.output  # `never` has no pair in B: not "no worse"
    data = json.loads(result.stdout)
    changes = {case["case"]: (case["change"], case["status"]) for case in data["cases"]}
    assert changes == {
        "once": ("incomplete", ["passed", "incomplete"]),
        "never": ("incomplete", ["passed", "incomplete"]),
    }
    assert data["regression"] is False and data["unpaired_cases"] == ["never"]
    assert data["pass_fail"]["pairs"] == 1  # the one trial of `once` that ran in B


def test_compare_table_lists_incomplete_cases(files: tuple[str, str]) -> None:
    result = runner.invoke(app, ["compare", *files])
    if result.exception is not None:
        raise result.exception
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith("│") and ("once" in line or "never" in line)]
    assert len(rows) == 2 and all("incomplete" in row and "errored" not in row for row in rows), rows
