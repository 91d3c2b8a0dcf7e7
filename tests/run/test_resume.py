"""Resuming continues *that* run and never drops a result its file (results JSON or journal) holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import agents
from proctor.checks import registry
from proctor.errors import ConfigError
from proctor.results import TrialResult
from proctor.results._journal import read_previous_run
from proctor.run import RunOptions, filter_cases, run_sync
from proctor.run.plan import plan_run
from proctor.run.record import Recorder
from proctor.suite import Suite, load_suites

SUITE = """\
name: counted
trials: 2
target: python:helpers.agents:counting
cases:
  - {name: a, tags: [x], turns: [{content: go, assert: [{type: contains, value: ok}]}]}
  - {name: b, turns: [{content: go, assert: [{type: contains, value: ok}]}]}
"""


def load(path: Path, text: str = SUITE) -> list[Suite]:
    path.write_text(text, encoding="utf-8")
    return load_suites([path], registry)


def crashed_journal(suites: list[Suite], results: Path) -> Path:
    """The journal a run leaves when it is killed after a's first trial: no results file."""
    plan = plan_run(suites, RunOptions(model="m", results_dir=results))
    recorder = Recorder(plan, "python helpers.agents:counting", seed=None, k=None, write=True, history=None)
    (case, *_) = plan.cases
    recorder.record(case, TrialResult(f"{case.file}::{case.name}", 1, "passed", 1.0))
    assert recorder.journal is not None
    recorder.journal.close()  # the process died here
    return recorder.journal.path


def test_a_journal_lists_every_planned_case_also_those_without_a_finished_trial(tmp_path: Path) -> None:
    suites = load(tmp_path / "s.yaml")
    journal = crashed_journal(suites, tmp_path / "out")
    run = read_previous_run(journal)
    assert run.listed and [(c.name, c.planned, c.suite) for c in run.cases.values()] == [
        ("a", 2, "counted"),
        ("b", 2, "counted"),
    ]
    assert list(run.trials) == [(f"{tmp_path / 's.yaml'}::a", 1)]


def test_resuming_a_journal_with_another_suite_is_refused_and_the_journal_is_kept(tmp_path: Path) -> None:
    suites = load(tmp_path / "s.yaml")
    journal = crashed_journal(suites, tmp_path / "out")
    before = journal.read_bytes()
    other = load(tmp_path / "other.yaml", SUITE.replace("name: counted", "name: other"))
    agents.CALLS.clear()
    with pytest.raises(ConfigError, match=r"has no case 'a' \(.*other\.yaml\).*without --resume"):
        run_sync(other, RunOptions(resume=journal, handle_sigint=False))
    assert agents.CALLS == {} and journal.read_bytes() == before
    assert not list((tmp_path / "out").glob("*.json"))


def test_a_subset_resume_of_a_journal_carries_the_other_cases_and_stays_interrupted(tmp_path: Path) -> None:
    suites = load(tmp_path / "s.yaml")
    journal = crashed_journal(suites, tmp_path / "out")
    agents.CALLS.clear()
    picked = run_sync(suites, RunOptions(resume=journal, handle_sigint=False), cases=filter_cases(suites, ["b"]))
    assert agents.CALLS == {"b#1": 1, "b#2": 1}  # b's trials only
    data = picked.data
    assert [c["name"] for c in data["cases"]] == ["a", "b"]
    a, b = data["cases"]
    assert (a["status"], a["reason"], len(a["trials"])) == ("incomplete", "interrupted: 1 of 2 trials ran", 1)
    assert b["status"] == "passed"
    assert data["status"] == "interrupted" and data["reason"] == "1 case not resumed has trials left to run"
    assert data["summary"]["trials"]["planned"] == 4
    assert picked.path is not None and not journal.exists()
    # a second partial resume replaces the note rather than piling it up; the full resume completes the run
    again = run_sync(suites, RunOptions(resume=picked.path, handle_sigint=False), cases=filter_cases(suites, ["b"]))
    assert again.data["reason"] == "1 case not resumed has trials left to run"
    agents.CALLS.clear()
    done = run_sync(suites, RunOptions(resume=picked.path, handle_sigint=False)).data
    assert agents.CALLS == {"a#2": 1}  # exactly the trial that never ran
    assert done["status"] == "complete" and done["reason"] is None
    assert [c["status"] for c in done["cases"]] == ["passed", "passed"]


def test_a_resumed_case_runs_the_trials_its_run_planned(tmp_path: Path) -> None:
    """A `--trials 3` run resumed without `--trials` finishes its 3 trials, not the suite's 2."""
    suites = load(tmp_path / "s.yaml")
    plan = plan_run(suites, RunOptions(model="m", results_dir=tmp_path / "out", trials=3))
    recorder = Recorder(plan, "python helpers.agents:counting", seed=None, k=None, write=True, history=None)
    for case in plan.cases:
        recorder.record(case, TrialResult(f"{case.file}::{case.name}", 1, "passed", 1.0))
    interrupted = recorder.finish("interrupted")
    assert interrupted.path is not None
    agents.CALLS.clear()
    resumed = run_sync(suites, RunOptions(resume=interrupted.path, handle_sigint=False)).data
    assert sorted(agents.CALLS) == ["a#2", "a#3", "b#2", "b#3"]
    assert [len(c["trials"]) for c in resumed["cases"]] == [3, 3] and resumed["status"] == "complete"


def test_an_older_interrupted_results_file_is_resumed_whole_but_not_in_part(tmp_path: Path) -> None:
    """A file of a Proctor before `planned_trials`: which of its cases are unfinished is not recorded."""
    suites = load(tmp_path / "s.yaml")
    first = run_sync(suites, RunOptions(model="m", results_dir=tmp_path / "out", handle_sigint=False))
    assert first.path is not None
    data = json.loads(first.path.read_text())
    data["status"] = "interrupted"  # as an older Proctor wrote an interrupted run: b lost a trial, no marker
    b = data["cases"][1]
    b["trials"] = b["trials"][:1]
    first.path.write_text(json.dumps(data), encoding="utf-8")
    assert read_previous_run(first.path).cases[f"{tmp_path / 's.yaml'}::b"].planned is None
    with pytest.raises(ConfigError, match=r"does not record how many trials case 'b'.*resume all its cases"):
        run_sync(suites, RunOptions(resume=first.path, handle_sigint=False), cases=filter_cases(suites, ["a"]))
    agents.CALLS.clear()
    whole = run_sync(suites, RunOptions(resume=first.path, handle_sigint=False)).data
    assert agents.CALLS == {"b#2": 1} and whole["status"] == "complete"


def test_an_interrupted_resume_keeps_the_trials_it_was_to_run_again(tmp_path: Path) -> None:
    """An errored trial runs again on resume; until its new trial finishes, the file keeps the old one."""
    suites = load(tmp_path / "s.yaml")
    first = run_sync(suites, RunOptions(model="m", results_dir=tmp_path / "out", handle_sigint=False))
    assert first.path is not None
    data = json.loads(first.path.read_text())
    data["cases"][0]["trials"][1].update(status="error", passed=False, score=None, error="agent unreachable")
    first.path.write_text(json.dumps(data), encoding="utf-8")
    plan = plan_run(suites, RunOptions(resume=first.path))
    assert [(w.case.name, w.number) for w in plan.todo] == [("a", 2)]
    recorder = Recorder(plan, "python helpers.agents:counting", seed=None, k=None, write=True, history=None)
    assert recorder.journal is not None
    journaled = read_previous_run(recorder.journal.path).trials  # a crash now loses nothing either
    assert journaled[(f"{tmp_path / 's.yaml'}::a", 2)].error == "agent unreachable" and len(journaled) == 4
    interrupted = recorder.finish("interrupted")  # Ctrl-C before a's trial 2 ran again
    a = interrupted.data["cases"][0]
    assert [(t["trial"], t["status"], t["error"]) for t in a["trials"]] == [
        (1, "passed", None),
        (2, "error", "agent unreachable"),
    ]
    assert a["status"] == "error" and "planned_trials" not in a  # as the file had it: nothing dropped
    agents.CALLS.clear()
    assert interrupted.path is not None
    done = run_sync(suites, RunOptions(resume=interrupted.path, handle_sigint=False)).data
    assert agents.CALLS == {"a#2": 1}  # run again, and its new trial replaces the old one
    assert [(t["trial"], t["status"]) for t in done["cases"][0]["trials"]] == [(1, "passed"), (2, "passed")]
    assert done["summary"]["trials"]["run"] == 4 and done["status"] == "complete"
