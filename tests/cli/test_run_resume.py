"""`proctor run --resume` never drops a result its file holds, and an interrupted or stopped run's unrun trials
make their cases `incomplete` (never `error`, never `passed`); `--resume` then runs exactly those trials."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from typer.testing import CliRunner

from helpers import agents
from proctor.cli import app
from proctor.cli._console import EXIT_INTERRUPTED, EXIT_UNREACHABLE, exit_code
from servers.model_server import Reply

runner = CliRunner()

ECHO = "python:helpers.agents:echo"


def suite(path: Path, name: str, cases: list[str], *, trials: int = 1, value: str = "hi") -> Path:
    """A suite file of `cases`, each one turn `hi` asserting the reply contains `value`."""
    lines = [f"name: {name}", f"trials: {trials}", "cases:"]
    lines += [
        f"  - {{name: {case}, turns: [{{content: hi, assert: [{{type: contains, value: {value}}}]}}]}}"
        for case in cases
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def only_results(directory: Path) -> Path:
    (path,) = directory.glob("*.json")
    return path


def test_resume_from_another_suite_is_refused_and_the_file_keeps_its_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA's report: resuming p1's run with p2's suite exited 0 and the file then held only p2's case."""
    monkeypatch.chdir(tmp_path)
    suite(tmp_path / "p1" / "s1.yaml", "s1", ["keepme"])
    suite(tmp_path / "p2" / "s2.yaml", "s2", ["other"])
    first = runner.invoke(app, ["run", "p1/s1.yaml", "--target", ECHO, "--results-dir", "out"])
    assert first.exit_code == 0, first.output
    path = only_results(tmp_path / "out")
    before = path.read_bytes()
    resumed = runner.invoke(app, ["run", "p2/s2.yaml", "--target", ECHO, "--resume", str(path)])
    assert resumed.exit_code == 2, resumed.output
    message = " ".join(resumed.output.split())
    assert "has no case 'other' (p2/s2.yaml)" in message and "whose cases are 'keepme' (p1/s1.yaml)" in message
    assert "as a new run (without --resume)" in message
    assert "Traceback" not in resumed.output
    assert path.read_bytes() == before  # refused before anything ran: the file is untouched
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [path.name]  # no journal, no other file


def test_resume_of_another_project_s_run_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two projects with the same layout (`evals/suite.yaml`): their cases' keys differ only by name."""
    for project, case in (("proj_a", "greets"), ("proj_b", "farewell")):
        suite(tmp_path / project / "evals" / "suite.yaml", "suite", [case])
    monkeypatch.chdir(tmp_path / "proj_a")
    assert runner.invoke(app, ["run", "evals", "--target", ECHO]).exit_code == 0
    path = only_results(tmp_path / "proj_a" / "evals" / ".results")
    before = path.read_bytes()
    monkeypatch.chdir(tmp_path / "proj_b")
    resumed = runner.invoke(app, ["run", "evals", "--target", ECHO, "--resume", str(path)])
    assert resumed.exit_code == 2, resumed.output
    assert "no case 'farewell'" in " ".join(resumed.output.split())
    assert path.read_bytes() == before
    assert not (tmp_path / "proj_b" / "evals" / ".results").exists()


def test_resume_with_another_model_target_or_fewer_trials_is_refused(tmp_path: Path) -> None:
    path = suite(tmp_path / "s.yaml", "s", ["a"], trials=2)
    out = tmp_path / "out"
    assert (
        runner.invoke(app, ["run", str(path), "--target", ECHO, "-m", "m1", "--results-dir", str(out)]).exit_code == 0
    )
    results = only_results(out)
    before = results.read_bytes()

    def resume(*extra: str) -> str:
        result = runner.invoke(app, ["run", str(path), "--resume", str(results), *extra])
        assert result.exit_code == 2, result.output
        return " ".join(result.output.split())

    assert "made with --model m1; --model m2 would mix" in resume("--target", ECHO, "-m", "m2")
    other = resume("--target", "python:helpers.agents:counting")
    assert "was made against python helpers.agents:echo" in other and "python helpers.agents:counting" in other
    fewer = resume("--target", ECHO, "--trials", "1")
    assert "has trial 2 of case 'a'" in fewer and "Give --trials 2 or more" in fewer
    assert results.read_bytes() == before
    # the same model, target and trials: resuming a complete run runs nothing and keeps it as it was
    again = runner.invoke(app, ["run", str(path), "--resume", str(results), "--target", ECHO, "-m", "m1", "--ci"])
    assert again.exit_code == 0, again.output
    kept, earlier = json.loads(results.read_text())["cases"], json.loads(before)["cases"]
    assert [case["trials"] for case in kept] == [case["trials"] for case in earlier]


def test_resume_of_a_case_subset_keeps_the_other_cases_results(tmp_path: Path) -> None:
    """`--case` picks some of the run's cases: only theirs run; every other case stays in the file as it was."""
    counted = suite(tmp_path / "counted.yaml", "counted", ["a"], trials=2, value="ok")
    crashing = suite(tmp_path / "crashing.yaml", "crashing", ["b"], trials=2)
    counted.write_text(counted.read_text() + "target: python:helpers.agents:counting\n")
    crashing.write_text(crashing.read_text() + "target: python:helpers.agents:crash\n")
    out = tmp_path / "out"
    agents.CALLS.clear()
    first = runner.invoke(app, ["run", str(tmp_path), "--results-dir", str(out), "--ci"])
    assert first.exit_code == 5, first.output  # b errored
    results = only_results(out)
    before = {case["name"]: case for case in json.loads(results.read_text())["cases"]}
    assert before["b"]["status"] == "error" and len(before["b"]["trials"]) == 2
    agents.CALLS.clear()
    resumed = runner.invoke(app, ["run", str(tmp_path), "--resume", str(results), "--case", "a", "--ci"])
    assert resumed.exit_code == 5, resumed.output  # b is still in the run, still errored
    assert agents.CALLS == {}  # a's trials passed: kept; b's errored trials are not re-run (not picked)
    after = json.loads(results.read_text())
    assert [case["name"] for case in after["cases"]] == ["a", "b"]  # the run's order
    assert after["cases"][1] == before["b"]  # b exactly as it was, trials and all
    assert after["summary"]["cases"] == 2 and after["summary"]["trials"] == {
        "planned": 4,
        "run": 4,
        "passed": 2,
        "failed": 0,
        "errored": 2,
    }
    assert after["status"] == "complete"  # every case it carried was complete


SLOW_AGENT = """\
import asyncio, os

async def respond(messages, context=None):
    with open(os.environ["CALLS_LOG"], "a") as log:
        log.write(f"{context.case}#{context.trial}\\n")
    await asyncio.sleep(float(os.environ.get("DELAY", "0.4")))
    return "ok"
"""


def _journaled(results: Path) -> int:
    journals = list(results.glob("*.journal.jsonl")) if results.exists() else []
    return journals[0].read_text().count('"kind":"trial"') if journals else 0


def test_interrupted_run_reports_unrun_trials_as_incomplete_and_resume_runs_exactly_them(tmp_path: Path) -> None:
    """QA's report: 4 cases x 3 trials, Ctrl-C midway: unstarted cases were `error`, a case with 1 of 3 `passed`."""
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT, encoding="utf-8")
    project = tmp_path / "evals"
    path = suite(project / "s.yaml", "s", ["a", "b", "c", "d"], trials=3, value="ok")
    path.write_text(path.read_text() + "target: python:slow_agent:respond\n")
    calls = tmp_path / "calls.log"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "CALLS_LOG": str(calls), "PROCTOR_HOME": str(tmp_path / "h")}
    results = tmp_path / "results"
    command = [sys.executable, "-m", "proctor", "run", str(project), "--trust", "--results-dir", str(results)]
    junit = tmp_path / "junit.xml"
    process = subprocess.Popen(
        [*command, "--concurrency", "2", "-o", str(junit)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _journaled(results) < 4:  # a's 3 trials and one of b's
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == EXIT_INTERRUPTED, stderr
    data = json.loads(only_results(results).read_text())
    assert data["status"] == "interrupted"
    ran = {case["name"]: len(case["trials"]) for case in data["cases"]}
    assert ran["a"] == 3 and ran["b"] >= 1 and ran["d"] == 0, ran
    short = [name for name, n in ran.items() if n < 3]
    for case in data["cases"]:
        if case["name"] in short:  # not `error` (nothing errored), not `passed` (trials never ran)
            n = len(case["trials"])
            assert case["status"] == "incomplete" and case["passed"] is False, case["name"]
            assert case["reason"] == f"interrupted: {n} of 3 trials ran" and case["planned_trials"] == 3
            assert case["trial_counts"]["passed"] == n  # the trials that ran, as they ran
        else:
            assert case["status"] == "passed" and "planned_trials" not in case
    summary = data["summary"]
    assert (summary["passed"], summary["errored"], summary["incomplete"]) == (4 - len(short), 0, len(short))
    assert summary["trials"]["planned"] == 12 and summary["trials"]["run"] == sum(ran.values())
    assert f"{len(short)} incomplete" in stdout and f"{sum(ran.values())} of 12 trials" in stdout
    assert "interrupted: 0 of 3 trials ran" in stdout and "2 errored" not in stdout
    root = ET.parse(junit).getroot()  # every planned trial is a test; the unrun ones are skipped, saying why
    assert (root.get("tests"), root.get("errors"), root.get("failures")) == ("12", "0", "0")
    assert root.get("skipped") == str(12 - sum(ran.values()))
    assert {s.get("message") for s in root.iter("skipped")} >= {"not run: interrupted: 0 of 3 trials ran"}

    # --resume --case d: d's trials run; the cases not picked are carried over, still incomplete: the run
    # is still interrupted (exit 130), and says so
    calls.unlink()
    picked = subprocess.run(
        [*command, "--resume", str(only_results(results)), "--case", "d", "--ci"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert picked.returncode == EXIT_INTERRUPTED, picked.stderr
    assert sorted(calls.read_text().split()) == ["d#1", "d#2", "d#3"]
    partial = json.loads(only_results(results).read_text())
    assert partial["status"] == "interrupted" and "not resumed" in partial["reason"]
    statuses = {case["name"]: case["status"] for case in partial["cases"]}
    assert statuses["d"] == "passed" and statuses["c"] == "incomplete"
    assert {case["name"]: len(case["trials"]) for case in partial["cases"]} == {**ran, "d": 3}

    # --resume: exactly the trials that never ran, and the run is complete
    calls.unlink()
    resumed = subprocess.run(
        [*command, "--resume", str(only_results(results)), "--ci"], env=env, capture_output=True, text=True, timeout=60
    )
    assert resumed.returncode == 0, resumed.stderr
    missing = {f"{name}#{t}" for name, n in ran.items() if name != "d" for t in range(n + 1, 4)}
    assert sorted(calls.read_text().split()) == sorted(missing)
    final = json.loads(resumed.stdout)
    assert final["status"] == "complete" and final["summary"]["trials"]["run"] == 12
    assert {case["status"] for case in final["cases"]} == {"passed"} and "incomplete" not in final["summary"]


def test_max_errors_stop_leaves_the_unrun_trials_incomplete(tmp_path: Path) -> None:
    path = suite(tmp_path / "s.yaml", "s", ["first", "second"], trials=2)
    path.write_text(path.read_text() + "target: python:helpers.agents:crash\n")
    result = runner.invoke(
        app, ["run", str(path), "--max-errors", "0", "--concurrency", "1", "--results-dir", str(tmp_path), "--ci"]
    )
    assert result.exit_code == 5, result.output  # the stop's code: --max-errors
    summary = json.loads(result.stdout)
    assert summary["status"] == "aborted"
    cases = {case["name"]: case for case in summary["cases"]}
    assert cases["first"]["status"] == "incomplete" and cases["first"]["reason"] == "aborted: 1 of 2 trials ran"
    assert cases["first"]["trial_counts"]["error"] == 1 and cases["first"]["planned_trials"] == 2
    assert cases["second"]["status"] == "incomplete" and cases["second"]["reason"] == "aborted: 0 of 2 trials ran"
    assert (summary["summary"]["errored"], summary["summary"]["incomplete"]) == (0, 2)
    assert summary["summary"]["trials"]["errored"] == 1


JUDGED = """\
name: judged
trials: 3
target: python:helpers.agents:echo
turns:
  - content: "Paris is the capital of France."
    assert:
      - {type: llm-rubric, value: "States the capital"}
"""


def test_budget_stop_leaves_the_unrun_trials_incomplete(
    model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    judge = model_server.script(default=Reply(json.dumps({"reason": "Fine.", "pass": True, "score": 1.0})))
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    (tmp_path / "judged.yaml").write_text(JUDGED, encoding="utf-8")
    result = runner.invoke(
        app,
        [
            "run", str(tmp_path), "--judge", "openai/gpt-4.1-mini", "--no-cache", "--budget", "0.000001",
            "--concurrency", "1", "--ci",
        ],
    )  # fmt: skip
    assert result.exit_code == EXIT_UNREACHABLE, result.output  # the stop's code: the budget was reached
    summary = json.loads(result.stdout)
    assert summary["status"] == "aborted" and summary["summary"]["trials"]["run"] == 1
    (case,) = summary["cases"]
    assert (case["status"], case["reason"]) == ("incomplete", "aborted: 1 of 3 trials ran")
    assert summary["summary"]["passed"] == 0 and summary["summary"]["incomplete"] == 1


def test_a_complete_run_holding_an_incomplete_case_does_not_exit_0() -> None:
    """The code is the stop's; a results file saying `complete` yet holding an incomplete case could not complete."""
    summary = {"cases": 1, "passed": 0, "failed": 0, "errored": 0, "incomplete": 1}
    data: dict[str, Any] = {"status": "complete", "summary": summary, "cases": [{"trials": []}]}
    assert exit_code(data) == EXIT_UNREACHABLE
    assert exit_code({**data, "status": "interrupted"}) == EXIT_INTERRUPTED
