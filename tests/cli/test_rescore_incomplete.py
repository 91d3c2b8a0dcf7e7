"""`proctor rescore` of a run that stopped before all its planned trials ran: its cases stay `incomplete`.

Re-scoring runs no trial: a trial the stored run never ran is still not run, so the case is neither
`error` (nothing errored) nor `passed` (1 of 3 trials is not the case), and the rescored run ends as the
stored one did (interrupted: exit 130; the budget reached: exit 3), not as a complete run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.checks import CheckResult
from proctor.cli import app
from proctor.cli._console import EXIT_INTERRUPTED, EXIT_UNREACHABLE
from proctor.results import CaseResult, RunResult, TrialResult, write_json
from proctor.transcript import Message
from servers.model_server import Reply

runner = CliRunner()

SUITE = """\
name: s
trials: 3
target: python:helpers.agents:echo
cases:
  - {name: done, turns: [{content: hi, assert: [{type: contains, value: hi}]}]}
  - {name: partly, turns: [{content: hi, assert: [{type: contains, value: hi}]}]}
  - {name: never, turns: [{content: hi, assert: [{type: contains, value: hi}]}]}
"""


def trial(case: str, number: int) -> TrialResult:
    """A trial of `case` as the echo agent ran it (its transcript: what rescore re-checks)."""
    check = CheckResult("contains 'hi'", "contains", "passed", 1.0, 1.0, "found", 0)
    turns = [Message("user", "hi"), Message("assistant", "hi", latency_ms=1.0)]
    return TrialResult(f"s.yaml::{case}", number, "passed", 1.0, turns=turns, checks=[check], duration_ms=1.0)


def interrupted_run(tmp_path: Path) -> Path:
    """The results file of a run of `SUITE` interrupted with done 3, partly 1 and never 0 of 3 trials run."""
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    ran = {"done": 3, "partly": 1, "never": 0}
    cases = [
        CaseResult(name, "s", "s.yaml", [], 1.0, [trial(name, n) for n in range(1, count + 1)], planned=3)
        for name, count in ran.items()
    ]
    run = RunResult("r_20261129T000000Z", "2026-11-29T00:00:00+00:00", None, "t", cases, planned_trials=9)
    run.end("interrupted")
    path = tmp_path / ".results" / "r_20261129T000000Z.json"
    path.parent.mkdir()
    write_json(path, run.to_dict())
    return path


def test_rescore_of_an_interrupted_run_is_interrupted_with_its_incomplete_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bug: the rescored run said `complete`, `never` was `error` (exit 5) and `partly` `passed` (1 of 3)."""
    monkeypatch.chdir(tmp_path)
    source = interrupted_run(tmp_path)
    stored = json.loads(source.read_text())
    assert [c["status"] for c in stored["cases"]] == ["passed", "incomplete", "incomplete"]
    result = runner.invoke(app, ["rescore", str(source), "--json"])
    assert result.exit_code == EXIT_INTERRUPTED, result.output  # not 5 (errored), not 0
    summary = json.loads(result.stdout)
    assert summary["status"] == "interrupted" and summary["rescored_from"] == "r_20261129T000000Z"
    cases = {case["name"]: case for case in summary["cases"]}
    assert cases["done"]["status"] == "passed" and "planned_trials" not in cases["done"]
    for name, ran in (("partly", 1), ("never", 0)):
        assert cases[name]["status"] == "incomplete", name
        assert cases[name]["reason"] == f"interrupted: {ran} of 3 trials ran"
        assert cases[name]["planned_trials"] == 3
    assert cases["partly"]["trial_counts"]["passed"] == 1  # the trial that ran, re-checked
    assert (summary["summary"]["errored"], summary["summary"]["incomplete"]) == (0, 2)
    # the rescored file says the same (what `proctor report`, `view` and a later rescore read)
    written = json.loads(Path(summary["results_file"]).read_text())
    assert written["status"] == "interrupted" and written["rescored_from"] == "r_20261129T000000Z"
    assert [c["status"] for c in written["cases"]] == ["passed", "incomplete", "incomplete"]
    assert [c.get("planned_trials") for c in written["cases"]] == [None, 3, 3]
    assert written["summary"]["trials"] == {**written["summary"]["trials"], "planned": 9, "run": 4}
    # and a rescore of the rescore too
    again = runner.invoke(app, ["rescore", summary["results_file"], "--json"])
    assert again.exit_code == EXIT_INTERRUPTED, again.output
    assert [c["status"] for c in json.loads(again.stdout)["cases"]] == ["passed", "incomplete", "incomplete"]


def test_rescore_of_a_complete_run_stays_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupted run whose every planned trial had run (Ctrl-C after the last) is rescored as complete."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    cases = [CaseResult(n, "s", "s.yaml", [], 1.0, [trial(n, t) for t in (1, 2, 3)]) for n in ("done", "partly")]
    run = RunResult("c_20261129T000000Z", "2026-11-29T00:00:00+00:00", None, "t", cases, planned_trials=6)
    run.end("interrupted")
    path = tmp_path / ".results" / "c.json"
    path.parent.mkdir()
    write_json(path, run.to_dict())
    result = runner.invoke(app, ["rescore", str(path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["status"] == "complete" and "incomplete" not in summary["summary"]


JUDGED = """\
name: judged
trials: 2
target: python:helpers.agents:echo
cases:
  - {name: first, turns: [{content: "Paris is the capital of France.", assert: [{type: llm-rubric, value: capital}]}]}
  - {name: second, turns: [{content: "Paris is the capital of France.", assert: [{type: llm-rubric, value: capital}]}]}
"""


def test_rescore_of_a_budget_stopped_run_keeps_its_stop(
    model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run the budget stopped (first 1 of 2 trials, second 0 of 2), re-judged: still stopped, exit 3."""
    judge = model_server.script(default=Reply(json.dumps({"reason": "Fine.", "pass": True, "score": 1.0})))
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "judged.yaml").write_text(JUDGED, encoding="utf-8")
    judging = ["--judge", "openai/gpt-4.1-mini", "--no-cache"]
    run = runner.invoke(app, ["run", "judged.yaml", *judging, "--budget", "0.000001", "--concurrency", "1", "--ci"])
    assert run.exit_code == EXIT_UNREACHABLE, run.output
    original = json.loads(run.stdout)
    assert original["status"] == "aborted" and original["summary"]["incomplete"] == 2
    reason = json.loads(Path(original["results_file"]).read_text())["reason"]
    assert reason.startswith("budget of $1e-06 reached")

    result = runner.invoke(app, ["rescore", original["results_file"], *judging, "--json"])
    assert result.exit_code == EXIT_UNREACHABLE, result.output  # was 5: `second` errored with no trial
    summary = json.loads(result.stdout)
    assert summary["status"] == "aborted"
    assert json.loads(Path(summary["results_file"]).read_text())["reason"] == reason  # the stored run's stop
    cases = {case["name"]: case for case in summary["cases"]}
    assert (cases["first"]["status"], cases["first"]["reason"]) == ("incomplete", "aborted: 1 of 2 trials ran")
    assert (cases["second"]["status"], cases["second"]["reason"]) == ("incomplete", "aborted: 0 of 2 trials ran")
    assert cases["first"]["trial_counts"]["passed"] == 1 and summary["summary"]["passed"] == 0

    # the re-judging's own budget reached too: the stored run's stop stays, and the re-judging's is said
    spent = runner.invoke(app, ["rescore", original["results_file"], *judging, "--budget", "0.000001", "--json"])
    assert spent.exit_code == EXIT_UNREACHABLE, spent.output
    data = json.loads(spent.stdout)
    written = json.loads(Path(data["results_file"]).read_text())
    assert data["status"] == "aborted" and written["reason"].startswith(f"{reason}; budget of $1e-06 reached while")
    assert {case["status"] for case in data["cases"]} == {"incomplete"}
