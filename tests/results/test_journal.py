"""The run journal: a line cut short by a crash never swallows the records appended after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.results._journal import Journal, read_previous_trials
from proctor.results._model import TrialResult


def _trial(number: int) -> TrialResult:
    return TrialResult(case_key="s.yaml::greets", trial=number, status="passed", score=1.0)


def test_resuming_after_a_cut_line_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    journal = Journal(path, {"run_id": "r1", "model": "m"})
    journal.record("greets", "s.yaml", _trial(1))
    journal.close()
    whole = path.read_text(encoding="utf-8")
    path.write_text(whole + '{"kind":"trial","case":"s.yaml::greets","tr', encoding="utf-8")  # the crash

    resumed = Journal(path, {"run_id": "r1", "model": "m"})  # what --resume does
    resumed.record("greets", "s.yaml", _trial(2))
    resumed.close()

    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[-2].endswith('"tr') and json.loads(lines[-1])["trial"] == 2
    header, trials = read_previous_trials(path)
    assert header["run_id"] == "r1" and sorted(trials) == [("s.yaml::greets", 1), ("s.yaml::greets", 2)]


def test_a_whole_journal_gets_no_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    Journal(path, {"run_id": "r1"}).close()
    again = Journal(path, {"run_id": "r1"})
    again.record("greets", "s.yaml", _trial(1))
    again.close()
    assert [json.loads(line)["kind"] for line in path.read_text(encoding="utf-8").splitlines()] == ["run", "trial"]


def test_a_recorded_trial_is_in_the_file_before_the_journal_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    journal = Journal(path, {"run_id": "r1", "model": "m"})
    trial = TrialResult(case_key="s.yaml::greets", trial=1, status="passed", score=1.0, warnings=["é 中"])
    journal.record("greets", "s.yaml", trial)
    # No buffer in this process: what a killed process would leave is already there.
    lines = path.read_bytes().splitlines()
    assert path.read_bytes().endswith(b"\n") and len(lines) == 2
    record = json.loads(lines[1])
    expected = {"kind": "trial", "case": "s.yaml::greets", "name": "greets", "file": "s.yaml", **trial.to_dict()}
    assert list(record) == list(expected) and record == json.loads(json.dumps(expected))
    assert json.loads(lines[0]) == {"kind": "run", "run_id": "r1", "model": "m"}
    journal.close()
    with pytest.raises(ValueError, match="closed"):
        journal.record("greets", "s.yaml", _trial(2))


def test_the_journal_and_the_results_file_carry_the_same_trial_bytes(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    trial = _trial(1)
    journal = Journal(path, {"run_id": "r1"})
    journal.record("greets", "s.yaml", trial)
    journal.close(remove=False)
    line = path.read_bytes().splitlines()[1]
    assert line.endswith(trial.to_json()[1:])  # encoded once, for both: cut from the line
    assert trial.json_tail() is trial.json_tail() and trial.to_json() == b"{" + trial.json_tail()
