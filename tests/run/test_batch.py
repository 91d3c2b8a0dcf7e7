from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from helpers import agents
from proctor.checks import registry
from proctor.checks._judging import NO_JUDGE_HINT
from proctor.errors import ConfigError
from proctor.run import RunOptions, filter_cases, run_sync
from proctor.suite import load_suites

MEMORY_SUITE = """\
name: memory
target: {type: python, callable: "helpers.agents:memory"}
trials: 3
cases:
  - name: remembers
    tags: [memory]
    turns:
      - content: "My name is Alice."
        assert:
          - {type: contains, value: "meet", weight: 1}
      - content: "What is my name?"
        assert:
          - {type: contains, value: "Alice", weight: 3}
          - {type: contains, value: "Bob", weight: 1}
          - {type: llm-rubric, value: "Recalls the name", weight: 5}
  - name: no-checks
    trials: 1
    turns: [{content: "hi"}]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_weighted_multi_turn_run_writes_results(tmp_path: Path) -> None:
    suites = load_suites([write(tmp_path, "memory.yaml", MEMORY_SUITE)], registry)
    outcome = run_sync(suites, RunOptions(model="openai/gpt-4.1-mini", seed=7))
    data = outcome.data
    assert outcome.path is not None and outcome.path.parent == tmp_path / ".results"
    assert outcome.path.name.startswith("openai-gpt-4-1-mini_") and outcome.path.suffix == ".json"
    assert json.loads(outcome.path.read_text()) == data
    assert not list((tmp_path / ".results").glob("*.jsonl"))  # journal removed once results are written
    remembers, no_checks = data["cases"]
    # (1*1 + 3*1 + 1*0) / 5 = 0.8; the skipped llm-rubric (weight 5) is excluded, not scored as 0.
    assert [t["score"] for t in remembers["trials"]] == [0.8, 0.8, 0.8]
    assert remembers["status"] == "passed" and remembers["pass_rate"] == 1.0 and remembers["pass_k"] == 1.0
    trial = remembers["trials"][0]
    assert [m["role"] for m in trial["turns"]] == ["user", "assistant", "user", "assistant"]
    assert trial["turns"][3]["content"] == "Your name is Alice."
    assert trial["turns"][3]["tool_calls"] == [{"name": "recall", "arguments": {}}]
    assert trial["tokens"] == {"prompt": 10, "completion": 5, "total": 15}
    assert remembers["tokens"]["total"] == 45
    skipped = [c for c in trial["checks"] if c["status"] == "skipped"]
    assert skipped == [
        {
            "name": "llm-rubric: Recalls the name",
            "type": "llm-rubric",
            "status": "skipped",
            "score": None,
            "weight": 5.0,
            "reason": NO_JUDGE_HINT,
            "turn": 1,
        }
    ]
    assert no_checks["status"] == "skipped" and no_checks["trials"][0]["score"] is None  # issue 14: not passed
    assert no_checks["reason"] == no_checks["trials"][0]["reason"] == "nothing was scored: the case has no checks"
    assert data["summary"] == data["summary"] | {"cases": 2, "passed": 1, "failed": 0, "errored": 0, "skipped": 1}
    assert data["summary"]["trials"] == {"planned": 4, "run": 4, "passed": 3, "failed": 0, "errored": 0, "skipped": 1}
    assert data["model"] == "openai/gpt-4.1-mini" and data["seed"] == 7 and data["version"] == 1


def test_agent_errors_are_trial_errors_and_later_turns_are_skipped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "crash.yaml",
        "name: crash\ntrials: 2\ntarget: python:helpers.agents:crash\n"
        "turns:\n  - content: a\n    assert: [{type: contains, value: x}]\n"
        "  - content: b\n    assert: [{type: contains, value: y}]\n",
    )
    data = run_sync(load_suites([path], registry), RunOptions(write_results=False)).data
    (case,) = data["cases"]
    assert case["status"] == "error" and case["pass_rate"] is None
    trial = case["trials"][0]
    assert trial["status"] == "error" and trial["error_type"] == "TargetError"
    assert trial["error"] == "turn 1: helpers.agents:crash raised RuntimeError: agent exploded"
    assert [c["status"] for c in trial["checks"]] == ["skipped", "skipped"]
    assert data["summary"]["errored"] == 1 and data["summary"]["failed"] == 0


def test_turn_timeout_is_an_error_not_a_failure(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "slow.yaml",
        "name: slow\ntrials: 1\ntimeout: 0.1\ntarget: python:helpers.agents:slow\nturns: [{content: a}]\n",
    )
    data = run_sync(load_suites([path], registry), RunOptions(write_results=False)).data
    trial = data["cases"][0]["trials"][0]
    assert trial["status"] == "error" and trial["error_type"] == "TargetTimeout"
    assert trial["error"] == "turn 1: no reply within 0.1 s"


def test_a_hung_async_agent_times_out_and_the_answered_turn_is_still_checked(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "hangs.yaml",
        "name: hangs\ntrials: 2\ntimeout: 0.1\ntarget: python:helpers.agents:hangs\n"
        "turns:\n  - content: a\n    assert: [{type: contains, value: first}]\n"
        "  - content: b\n    assert: [{type: contains, value: x}]\n",
    )
    started = time.monotonic()
    data = run_sync(load_suites([path], registry), RunOptions(write_results=False, concurrency=2)).data
    assert time.monotonic() - started < 5
    for trial in data["cases"][0]["trials"]:
        assert trial["status"] == "error" and trial["error_type"] == "TargetTimeout"
        assert trial["error"] == "turn 2: no reply within 0.1 s"
        assert [c["status"] for c in trial["checks"]] == ["passed", "skipped"]


def test_flaky_case_pass_rate_and_pass_k(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "flaky.yaml",
        "name: flaky\ntrials: 4\nscoring: {min_pass_rate: 0.5}\ntarget: python:helpers.agents:flaky_by_trial\n"
        "turns: [{content: confirm?, assert: [{type: contains, value: confirmed}]}]\n",
    )
    data = run_sync(load_suites([path], registry), RunOptions(write_results=False, concurrency=2)).data
    (case,) = data["cases"]
    assert [t["status"] for t in case["trials"]] == ["passed", "failed", "passed", "failed"]
    assert (case["pass_rate"], case["pass_k"], case["status"], case["avg_score"]) == (0.5, 0.0, "passed", 0.5)


def test_overrides_filters_and_missing_target(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        "cases:\n  - {name: a, tags: [x], turns: [{content: hi}]}\n  - {name: b, turns: [{content: hi}]}\n",
    )
    suites = load_suites([path], registry)
    with pytest.raises(ConfigError, match="has no target: give --target"):
        run_sync(suites, RunOptions(write_results=False))
    cases = filter_cases(suites, tags=["x"])
    assert [c.name for c in cases] == ["a"]
    with pytest.raises(ConfigError, match="no case named zz"):
        filter_cases(suites, names=["zz"])
    options = RunOptions(target={"type": "python", "callable": "helpers.agents:echo"}, trials=2, write_results=False)
    data = run_sync(suites, options, cases=cases).data
    assert [len(c["trials"]) for c in data["cases"]] == [2]
    assert data["cases"][0]["trials"][0]["turns"][1]["content"] == "hi"
    with pytest.raises(ConfigError, match="concurrency must be >= 1"):
        RunOptions(concurrency=0)


def test_resume_runs_only_missing_and_errored_trials(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "r.yaml",
        "name: r\ntrials: 3\ntarget: python:helpers.agents:counting\n"
        "turns: [{content: go, assert: [{type: contains, value: ok}]}]\n",
    )
    suites = load_suites([path], registry)
    agents.CALLS.clear()
    first = run_sync(suites, RunOptions(model="m"))
    assert first.path is not None and sum(agents.CALLS.values()) == 3
    # Simulate a crash after trial 1: keep only the journal with trial 1 and an errored trial 2.
    data = json.loads(first.path.read_text())
    trials = data["cases"][0]["trials"]
    trials[1]["status"] = "error"
    journal = first.path.with_name(first.path.stem + ".journal.jsonl")
    header = {"kind": "run", "run_id": data["run_id"], "started_at": data["started_at"], "model": "m"}
    lines = [header] + [{"kind": "trial", "case": f"{path}::r", **t} for t in trials[:2]]
    journal.write_text("\n".join(json.dumps(line) for line in lines) + "\n{truncated", encoding="utf-8")
    first.path.unlink()
    agents.CALLS.clear()
    resumed = run_sync(suites, RunOptions(resume=journal))
    assert agents.CALLS == {"r#2": 1, "r#3": 1}  # trial 1 kept; 2 (error) and 3 (missing) re-run
    assert resumed.path == first.path and resumed.data["run_id"] == data["run_id"]
    assert resumed.data["model"] == "m"
    assert [t["trial"] for t in resumed.data["cases"][0]["trials"]] == [1, 2, 3]
    assert resumed.data["cases"][0]["status"] == "passed"
    assert not journal.exists()


LIMITS_SUITE = """\
name: limits
target: {type: openai, base_url: "AGENT"}
trials: TRIALS
cases:
  - name: mostly-right
    turns:
      - content: "Who works here?"
        assert:
          - {type: contains, value: "Alice", weight: 9}
          - {type: contains, value: "Bob", weight: 1}
"""


def limits_suite(tmp_path: Path, agent_url: str, trials: int = 1) -> Path:
    text = LIMITS_SUITE.replace("AGENT", agent_url).replace("TRIALS", str(trials))
    return write(tmp_path, "limits.yaml", text)


def test_strict_fails_a_trial_with_a_failed_check_whatever_its_score(model_server: object, tmp_path: Path) -> None:
    from servers.model_server import Reply

    agent = model_server.script(default=Reply("Alice works here."))  # type: ignore[attr-defined]
    suites = load_suites([limits_suite(tmp_path, agent.base_url)], registry)
    lenient = run_sync(suites, RunOptions(write_results=False, handle_sigint=False)).data
    strict = run_sync(suites, RunOptions(write_results=False, handle_sigint=False, strict=True)).data
    assert lenient["cases"][0]["status"] == "passed"  # 0.9 >= 0.8
    trial = strict["cases"][0]["trials"][0]
    assert (trial["status"], trial["score"]) == ("failed", 0.9)
    assert trial["warnings"][0].startswith("strict: failed because 1 check(s) failed")


def test_max_errors_stops_the_run_and_says_why(model_server: object, tmp_path: Path) -> None:
    from proctor.cli._console import EXIT_ERRORED, exit_code
    from proctor.scoring import ERROR_BUDGET_EXCEEDED, parse_error_limit
    from servers.model_server import Reply

    agent = model_server.script(default=Reply("no", status=400))  # type: ignore[attr-defined]
    suites = load_suites([limits_suite(tmp_path, agent.base_url, trials=6)], registry)
    options = RunOptions(write_results=False, handle_sigint=False, concurrency=1, max_errors=parse_error_limit("1"))
    data = run_sync(suites, options).data
    assert data["status"] == "aborted" and data["reason"].startswith(ERROR_BUDGET_EXCEEDED)
    assert data["summary"]["trials"]["run"] == 2  # the second error exceeds a limit of 1: no third trial
    assert exit_code(data) == EXIT_ERRORED


def test_judge_timeout_bounds_a_hung_judge(model_server: object, tmp_path: Path) -> None:
    import time

    from servers.model_server import Reply

    agent = model_server.script(default=Reply("Alice works here."))  # type: ignore[attr-defined]
    hung = model_server.script(default=Reply('{"reason": "late", "pass": true, "score": 1}', delay=30))  # type: ignore[attr-defined]
    path = write(
        tmp_path,
        "judged.yaml",
        f"name: judged\ntarget: {{type: openai, base_url: '{agent.base_url}'}}\ntrials: 1\n"
        "turns: [{content: hi, assert: [{type: llm-rubric, value: Greets}]}]\n",
    )
    options = RunOptions(write_results=False, handle_sigint=False, judge="openai/judge", judge_timeout=0.2, cache=False)
    started = time.perf_counter()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_BASE_URL", hung.base_url)
        env.setenv("OPENAI_API_KEY", "k")
        data = run_sync(load_suites([path], registry), options).data
    check = data["cases"][0]["trials"][0]["checks"][0]
    assert (check["status"], check["score"]) == ("error", None)
    assert time.perf_counter() - started < 15  # 4 attempts of 0.2 s and their back-off, not 4 x 30 s
