"""`proctor.run.rescore`: what a re-score re-runs, keeps and warns about (no judge model needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.checks import registry
from proctor.errors import ConfigError
from proctor.results import HistoryStore
from proctor.run import RunOptions, rescore_sync, run_sync
from proctor.suite import load_suites

SUITE = """\
name: s
target: python:helpers.agents:memory
trials: 2
cases:
  - name: remembers
    turns:
      - content: My name is Ada.
        assert: [{type: contains, value: Nice, name: greets}]
      - content: What is my name?
        assert: [{type: contains, value: Ada}]
  - name: forgets
    turns:
      - content: What is my name?
        assert: [{type: contains, value: "don't know"}]
"""


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    (tmp_path / "s.yaml").write_text(SUITE)
    outcome = run_sync(load_suites([tmp_path], registry), RunOptions(results_dir=tmp_path / ".results"))
    assert outcome.path is not None and outcome.data["summary"]["passed"] == 2
    return outcome.path


def test_changed_checks_are_applied_to_the_stored_conversation(stored: Path, tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE.replace("value: Ada}", "value: Grace}"))
    outcome = rescore_sync(stored)
    data = outcome.data
    assert data["rescored_from"] == json.loads(stored.read_text())["run_id"]
    by_name = {c["name"]: c for c in data["cases"]}
    assert by_name["remembers"]["status"] == "failed" and by_name["forgets"]["status"] == "passed"
    check = by_name["remembers"]["trials"][0]["checks"][1]
    assert check["status"] == "failed" and "Grace" in check["reason"]
    assert by_name["remembers"]["trials"][0]["turns"][3]["content"] == "Your name is Ada."
    assert outcome.path is not None and outcome.path.parent == stored.parent
    with HistoryStore(tmp_path / ".proctor" / "history.db") as store:
        runs = store.runs()
    assert [r.rescored_from for r in runs] == [data["rescored_from"], None]


def test_only_the_selected_checks_are_rerun(stored: Path, tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE.replace("value: Ada}", "value: Grace}").replace("Nice,", "Hello,"))
    data = rescore_sync(stored, checks=["contains: Grace"]).data
    trial = data["cases"][0]["trials"][0]
    assert [c["status"] for c in trial["checks"]] == ["passed", "failed"]  # 'greets' kept, 'Grace' re-run
    data = rescore_sync(stored, checks=["contains"]).data  # by type: both re-run
    assert [c["status"] for c in data["cases"][0]["trials"][0]["checks"]] == ["failed", "failed"]
    with pytest.raises(ConfigError, match="--checks"):
        rescore_sync(stored, checks=["bogus-check"])


def test_a_changed_message_is_reported_and_a_removed_case_kept(stored: Path, tmp_path: Path) -> None:
    text = SUITE.replace(
        "What is my name?\n        assert: [{type: contains, value: Ada}]",
        "Who am I?\n        assert: [{type: contains, value: Ada}]",
    )
    cut = text.index("  - name: forgets")
    (tmp_path / "s.yaml").write_text(text[:cut])
    data = rescore_sync(stored, RunOptions(write_results=False)).data
    remembers, forgets = data["cases"]
    assert "turn 2's message in the suite differs from the stored transcript" in remembers["trials"][0]["warnings"]
    assert forgets["status"] == "passed"
    assert "no longer in its suite file" in forgets["trials"][0]["warnings"][0]
    assert not list((tmp_path / ".results").glob("*rescored*"))  # write_results=False


def test_errored_trials_are_kept_and_missing_suites_refused(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE.replace("helpers.agents:memory", "helpers.agents:crash"))
    outcome = run_sync(load_suites([tmp_path], registry), RunOptions(results_dir=tmp_path / ".results"))
    assert outcome.path is not None
    again = rescore_sync(outcome.path, RunOptions(write_results=False)).data
    for before, after in zip(outcome.data["cases"], again["cases"], strict=True):
        assert [t["status"] for t in after["trials"]] == [t["status"] for t in before["trials"]] == ["error"] * 2
        assert after["trials"][0]["error"] == before["trials"][0]["error"]
    (tmp_path / "s.yaml").unlink()
    with pytest.raises(ConfigError, match="was not found"):
        rescore_sync(outcome.path)
