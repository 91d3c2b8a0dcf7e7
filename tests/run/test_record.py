"""Recording a run: the results file is the run's JSON form, and a killed run resumes from its journal."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from proctor.checks import registry
from proctor.results import HistoryStore, load_run, read_previous_trials
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites

MIXED = """\
name: mixed
target: {type: python, callable: "helpers.agents:memory"}
trials: 3
cases:
  - name: remembers
    tags: [memory, "é"]
    turns:
      - content: "My name is Alice."
        assert:
          - {type: contains, value: "meet", weight: 1}
      - content: "What is my name?"
        assert:
          - {type: contains, value: "Alice", weight: 3}
          - {type: contains, value: "Bob", weight: 1}
          - {type: llm-rubric, value: "Recalls the name", weight: 5}
  - name: one trial, judged only (skipped)
    trials: 1
    turns: [{content: "hi 中文", assert: [{type: llm-rubric, value: "Greets"}]}]
  - name: one trial, failing
    trials: 1
    turns: [{content: "hi", assert: [{type: contains, value: "never said"}]}]
"""

FLAKY = """\
name: flaky
target: {type: python, callable: "helpers.agents:flaky_by_trial"}
trials: 4
cases:
  - name: flaky
    turns: [{content: "confirm?", assert: [{type: contains, value: "confirmed"}]}]
  - name: crashes
    trials: 1
    target: {type: python, callable: "helpers.agents:crash"}
    turns: [{content: "boom"}]
"""


def test_the_results_file_is_the_json_form_the_standard_library_would_write(tmp_path: Path) -> None:
    (tmp_path / "mixed.yaml").write_text(MIXED, encoding="utf-8")
    (tmp_path / "flaky.yaml").write_text(FLAKY, encoding="utf-8")
    suites = load_suites([tmp_path], registry)
    outcome = run_sync(suites, RunOptions(model="m", seed=3, results_dir=tmp_path / "out"))
    assert outcome.path is not None
    written = outcome.path.read_bytes()
    # The content json.dumps gives for the same run (what Proctor wrote before orjson), key order included.
    reference = json.loads(json.dumps(outcome.data))
    assert json.loads(written) == reference
    assert json.dumps(json.loads(written)) == json.dumps(reference)
    assert outcome.result.to_json() == written  # RunResult.to_json is what was written
    assert load_run(outcome.path) == reference  # and it validates
    statuses = {c["name"]: c["status"] for c in reference["cases"]}
    assert statuses == {
        "remembers": "passed",
        "one trial, judged only (skipped)": "skipped",
        "one trial, failing": "failed",
        "flaky": "failed",
        "crashes": "error",
    }
    # The layout: the run's fields indented, then one compact line per case.
    lines = written.decode("utf-8").splitlines()
    assert lines[:2] == ["{", '  "version": 1,'] and lines[-2:] == ["  ]", "}"]
    assert sum(1 for line in lines if line.startswith('    {"name":')) == len(reference["cases"])
    # --resume reads the file back to the same trials.
    _, trials = read_previous_trials(outcome.path)
    assert len(trials) == sum(len(c["trials"]) for c in reference["cases"]) == 3 + 1 + 1 + 4 + 1


HANGING_AGENT = """\
import os, time
from pathlib import Path

def respond(messages):
    text = messages[-1]["content"]
    with open(os.environ["CALLS_LOG"], "a") as log:
        log.write(text + "\\n")
    if text == "hang" and not os.environ.get("RELEASE"):
        time.sleep(600)  # killed here
    return "ok " + text
"""


def test_a_killed_run_loses_no_journaled_trial_and_resumes(tmp_path: Path) -> None:
    (tmp_path / "hanging_agent.py").write_text(HANGING_AGENT, encoding="utf-8")
    check = "assert: [{type: contains, value: ok}]"
    cases = "".join(
        f"  - name: c{i}\n    turns: [{{content: {'hang' if i == 6 else f'm{i}'}, {check}}}]\n" for i in range(1, 8)
    )
    suite = tmp_path / "suite" / "s.yaml"
    suite.parent.mkdir()
    suite.write_text(f"name: s\ntrials: 1\ntarget: python:hanging_agent:respond\ncases:\n{cases}", encoding="utf-8")
    calls = tmp_path / "calls.log"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "CALLS_LOG": str(calls), "PROCTOR_HOME": str(tmp_path / "h")}
    results = tmp_path / "results"
    command = [sys.executable, "-m", "proctor", "run", str(suite.parent), "--trust", "--concurrency", "1"]
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            [*command, "--results-dir", str(results), "--ci"], env=env, stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "hang" not in (calls.read_text() if calls.exists() else ""):
            assert process.poll() is None, errors.read_text()
            time.sleep(0.05)
        (journal,) = results.glob("*.journal.jsonl")
    finally:
        process.send_signal(signal.SIGKILL)  # no handler, no flush: what a crash leaves
        process.wait(timeout=20)
    assert process.returncode == -signal.SIGKILL
    _, kept = read_previous_trials(journal)
    assert sorted(key.rsplit("::", 1)[1] for key, _ in kept) == ["c1", "c2", "c3", "c4", "c5"]  # none lost
    calls.unlink()
    resumed = subprocess.run(
        [*command, "--resume", str(journal), "--ci"],
        env={**env, "RELEASE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert calls.read_text().split() == ["hang", "m7"]  # only what the journal did not have ran again
    summary = json.loads(resumed.stdout)
    assert summary["status"] == "complete" and summary["summary"]["trials"]["run"] == 7
    assert not journal.exists() and Path(summary["results_file"]).exists()


def test_the_history_rows_of_a_run_are_those_of_its_results_file(tmp_path: Path) -> None:
    """The run is indexed from its `RunResult` (no JSON built): the rows indexing the written file gives."""
    (tmp_path / "mixed.yaml").write_text(MIXED, encoding="utf-8")
    (tmp_path / "flaky.yaml").write_text(FLAKY, encoding="utf-8")
    suites = load_suites([tmp_path], registry)
    store = tmp_path / "history.db"
    outcome = run_sync(suites, RunOptions(model="m", seed=3, results_dir=tmp_path / "out", history=store))
    assert outcome.path is not None
    with HistoryStore(tmp_path / "again.db") as again:
        again.add(outcome.path)  # read back from the file
    assert _rows(store) == _rows(tmp_path / "again.db")
    assert len(_rows(store)["trials"]) == 3 + 1 + 1 + 4 + 1


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    db = sqlite3.connect(path)
    try:
        runs = db.execute("SELECT * FROM runs").fetchall()
        columns = [d[0] for d in db.execute("SELECT * FROM runs").description]
        kept = [i for i, name in enumerate(columns) if name not in ("id", "indexed_at")]
        return {
            "runs": [tuple(row[i] for i in kept) for row in runs],
            "cases": db.execute("SELECT * FROM cases ORDER BY rowid").fetchall(),
            "trials": db.execute("SELECT * FROM trials ORDER BY rowid").fetchall(),
        }
    finally:
        db.close()
