from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from typer.testing import CliRunner

from proctor.cli import app

runner = CliRunner()

PASSING = """\
name: greets
trials: 2
target: python:helpers.agents:echo
turns:
  - content: "hello there"
    assert:
      - {type: contains, value: hello}
"""
FAILING = """\
name: fails
trials: 1
target: python:helpers.agents:echo
turns:
  - content: "hello there"
    assert:
      - {type: contains, value: goodbye}
"""


def suite_dir(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(text, encoding="utf-8")
    return tmp_path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_all_pass_exits_0_and_writes_results(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(suite_dir(tmp_path, greets=PASSING)), "--model", "demo"])
    assert result.exit_code == 0, result.output
    assert "greets" in result.output and "1 case: 1 passed, 0 failed, 0 errored" in result.output
    (path,) = (tmp_path / ".results").glob("demo_*.json")
    assert json.loads(path.read_text())["summary"]["passed"] == 1


def test_ci_prints_only_json_and_exit_1_on_failure(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = runner.invoke(
        app, ["run", str(suite_dir(tmp_path, greets=PASSING, fails=FAILING)), "--ci", "--output", str(out)]
    )
    assert result.exit_code == 1
    summary = json.loads(result.stdout)  # stdout is exactly one JSON document
    assert summary["exit_code"] == 1
    assert summary["summary"] | {} == summary["summary"]
    assert (summary["summary"]["passed"], summary["summary"]["failed"]) == (1, 1)
    assert {c["name"]: c["status"] for c in summary["cases"]} == {"fails": "failed", "greets": "passed"}
    written = json.loads(out.read_text())
    assert written["summary"] == summary["summary"]
    assert out.read_bytes() == Path(summary["results_file"]).read_bytes()  # a copy: serialised once


def test_junit_output_keeps_errors_apart_from_failures(tmp_path: Path) -> None:
    crash = "name: crash\ntrials: 1\ntarget: python:helpers.agents:crash\nturns: [{content: a}]\n"
    out = tmp_path / "junit.xml"
    result = runner.invoke(
        app, ["run", str(suite_dir(tmp_path, greets=PASSING, fails=FAILING, crash=crash)), "-q", "-o", str(out)]
    )
    assert result.exit_code == 1
    root = ET.parse(out).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "1")
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert "greets [trial 2]" in names
    failure = root.find(".//testcase[@classname='fails.fails']/failure")
    assert failure is not None and "expected reply to contain 'goodbye'" in (failure.text or "")


def test_bad_suite_exits_2_with_located_errors_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("name: x\nturns:\n  - content: a\n    assert: [{type: contians, value: a}]\n")
    result = runner.invoke(app, ["run", str(tmp_path / "bad.yaml")])
    assert result.exit_code == 2
    assert "bad.yaml:4:21: turns[0].assert[0].type: unknown check type 'contians'; did you mean 'contains'?" in (
        result.output
    )
    assert "Traceback" not in result.output


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    suite_dir(tmp_path, greets=PASSING)
    assert runner.invoke(app, ["run", str(tmp_path), "--concurrency", "0"]).exit_code == 2
    bad_target = runner.invoke(app, ["run", str(tmp_path), "--target", "ftp://x"])
    assert bad_target.exit_code == 2 and "--target: cannot read target 'ftp://x'" in bad_target.output
    assert runner.invoke(app, ["run", str(tmp_path), "--case", "nope"]).exit_code == 2
    assert runner.invoke(app, ["run", str(tmp_path), "--resume", "no-such-run"]).exit_code == 2


def test_unreachable_target_for_every_trial_exits_3(tmp_path: Path) -> None:
    suite_dir(tmp_path, greets=PASSING.replace("target: python:helpers.agents:echo\n", ""))
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = runner.invoke(app, ["run", str(tmp_path), "--target", url, "--ci"])
    assert result.exit_code == 3
    summary = json.loads(result.stdout)
    assert summary["summary"]["trials"]["errored"] == 2


def test_env_vars_set_options(tmp_path: Path) -> None:
    suite_dir(tmp_path, greets=PASSING)
    result = runner.invoke(app, ["run", str(tmp_path)], env={"PROCTOR_TRIALS": "1", "PROCTOR_CI": "1"})
    assert result.exit_code == 0
    assert json.loads(result.stdout)["summary"]["trials"]["run"] == 1


def test_list_and_schema(tmp_path: Path) -> None:
    suite_dir(tmp_path, greets=PASSING, fails=FAILING)
    listed = runner.invoke(app, ["list", str(tmp_path)])
    assert listed.exit_code == 0 and "greets" in listed.output and "2 cases" in listed.output
    run_list = runner.invoke(app, ["run", str(tmp_path), "--list"])
    assert run_list.exit_code == 0 and "fails" in run_list.output
    assert not (tmp_path / ".results").exists()
    checks = runner.invoke(app, ["list", "--checks"])
    assert checks.exit_code == 0 and "json-schema" in checks.output and "llm-rubric" in checks.output
    schema = runner.invoke(app, ["schema"])
    assert json.loads(schema.stdout)["title"] == "Proctor suite"


def test_ctrl_c_exits_130_and_keeps_finished_trials(tmp_path: Path) -> None:
    slow = (
        "name: slow\ntrials: 6\ntarget: python:helpers.agents:slow\n"
        "turns: [{content: a, assert: [{type: contains, value: finally}]}]\n"
    )
    suite_dir(tmp_path, slow=slow)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    process = subprocess.Popen(
        [sys.executable, "-m", "proctor", "run", str(tmp_path), "--concurrency", "1", "--model", "m"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    results = tmp_path / ".results"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # wait until two trials are journaled
        journals = list(results.glob("*.journal.jsonl")) if results.exists() else []
        if journals and journals[0].read_text().count('"kind":"trial"') >= 2:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, stderr
    (path,) = results.glob("m_*.json")
    data = json.loads(path.read_text())
    assert data["status"] == "interrupted"
    finished = data["cases"][0]["trials"]
    assert 2 <= len(finished) < 6 and all(t["status"] == "passed" for t in finished)
    assert "run interrupted" in stdout
    # --resume finishes the run: only the missing trials run.
    resumed = subprocess.run(
        [sys.executable, "-m", "proctor", "run", str(tmp_path), "--resume", str(path), "--ci"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["summary"]["trials"]["run"] == 6 and summary["status"] == "complete"


@pytest.mark.parametrize("flag", ["--version"])
def test_version(flag: str) -> None:
    result = runner.invoke(app, [flag])
    assert result.exit_code == 0 and result.output.startswith("proctor ")


def test_simulated_cases_without_a_model_are_skipped_and_exit_0(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    junit = tmp_path / "junit.xml"
    env = {"PROCTOR_JUDGE_MODEL": "", "PROCTOR_SIMULATOR_MODEL": ""}
    result = runner.invoke(
        app,
        ["run", str(examples / "embabel"), "--results-dir", str(tmp_path), "-o", str(junit), "--no-cache"],
        env={**env, "PROCTOR_HOME": str(tmp_path / "store")},  # not the checkout's own store
    )
    assert result.exit_code == 0, result.output
    assert "skipped" in result.output and "--simulator" in result.output
    suite = ET.parse(junit).getroot()
    assert suite.get("skipped") == "1" and suite.get("failures") == "0"


UNJUDGED = """\
name: polite
trials: 2
target: python:helpers.agents:echo
turns:
  - content: "hello there"
    assert:
      - {type: llm-rubric, value: "Is polite"}
"""
UNCHECKED = """\
name: unchecked
trials: 1
target: python:helpers.agents:echo
turns:
  - content: "hello there"
"""


def test_a_case_with_nothing_scored_is_skipped_and_says_why_everywhere(tmp_path: Path) -> None:
    suite_dir(tmp_path, polite=UNJUDGED)
    env = {"PROCTOR_JUDGE_MODEL": ""}
    console = runner.invoke(app, ["run", str(tmp_path), "--results-dir", str(tmp_path / "r")], env=env)
    assert console.exit_code == 0, console.output  # without --ci a skip is reported, not a failure
    assert "1 case: 0 passed, 0 failed, 0 errored, 1 skipped" in console.output
    assert "trial 1 skipped: nothing was scored: 1 check was skipped (no judge model configured" in console.output

    junit, out = tmp_path / "junit.xml", tmp_path / "out.json"
    ci = runner.invoke(
        app, ["run", str(tmp_path), "--ci", "--allow-skipped", "-o", str(junit), "--results-dir", str(out.parent)]
    )
    assert ci.exit_code == 0, ci.output  # --allow-skipped: skips are accepted, and judged checks may skip
    summary = json.loads(ci.stdout)
    case = summary["cases"][0]
    assert case["status"] == "skipped" and case["reason"].startswith("nothing was scored: 1 check was skipped")
    assert "--judge" in case["reason"]
    data = json.loads(Path(summary["results_file"]).read_text())
    trial = data["cases"][0]["trials"][0]
    assert (trial["status"], trial["passed"], trial["score"]) == ("skipped", False, None)
    assert "no judge model configured" in trial["reason"]
    skipped = ET.parse(junit).getroot().find(".//testcase/skipped")
    assert skipped is not None and "no judge model configured" in (skipped.get("message") or "")

    report = runner.invoke(app, ["report", summary["results_file"], "-o", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    markdown = (tmp_path / "report" / "evals-report.md").read_text()
    assert "## Skipped: " in markdown and "- **polite**: nothing was scored: 1 check was skipped" in markdown
    html = (tmp_path / "report" / "evals-report.html").read_text()
    assert "<dt>Why skipped</dt><dd>nothing was scored: 1 check was skipped (no judge model configured" in html


def test_ci_refuses_llm_judged_checks_without_a_judge_at_start(tmp_path: Path) -> None:
    suite_dir(tmp_path, polite=UNJUDGED, greets=PASSING)
    result = runner.invoke(app, ["run", str(tmp_path), "--ci"], env={"PROCTOR_JUDGE_MODEL": ""})
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line]
    assert len(lines) == 1  # one line, naming the case and the option that fixes it
    assert lines[0].startswith("error: case 'polite' (") and "check 'llm-rubric: Is polite'" in lines[0]
    assert "pass --judge provider/model" in lines[0]
    assert not (tmp_path / ".results").exists()  # refused before any trial ran


MIXJUDGE = """\
name: mixjudge
trials: 1
target: python:helpers.agents:echo
turns:
  - content: "alice says hi"
    assert: [{type: contains, value: alice}, {type: llm-rubric, value: polite}]
"""
SCRIPTED = """\
name: scripted
trials: 1
target: python:helpers.agents:echo
script:
  - user: "alice says hi"
    assert: [{type: contains, value: alice}]
  - judge: The agent was polite
  - check: [{type: llm-rubric, value: polite}]
"""


def refusal(result: Any, case: str, check: str) -> None:
    """`result` is the start-of-run refusal: exit 2, one line naming `case` and `check`, nothing run."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: case {case!r} (") and f"check {check!r} needs a judge model" in lines[0]
    assert "pass --judge provider/model" in lines[0] and "--allow-skipped" in lines[0]
    assert result.stdout == ""


@pytest.mark.parametrize("given", [["--judge", ""], ["--judge", "  "], ["--judge="]])
def test_ci_refuses_an_empty_judge_as_no_judge(tmp_path: Path, given: list[str]) -> None:
    # `--judge "$JUDGE"` with the CI variable unset: no judge, as with no --judge at all
    suite_dir(tmp_path, mixjudge=MIXJUDGE)
    result = runner.invoke(app, ["run", str(tmp_path), "--ci", *given], env={"PROCTOR_JUDGE_MODEL": ""})
    refusal(result, "mixjudge", "llm-rubric: polite")
    assert not (tmp_path / ".results").exists()  # refused before any trial ran
    allowed = runner.invoke(app, ["run", str(tmp_path), "--ci", "--allow-skipped", *given])
    assert allowed.exit_code == 0, allowed.output  # accepted: the judged check is skipped, and says why
    (trial,) = json.loads(Path(json.loads(allowed.stdout)["results_file"]).read_text())["cases"][0]["trials"]
    assert [c["status"] for c in trial["checks"]] == ["passed", "skipped"]
    assert "no judge model configured" in trial["checks"][1]["reason"]


@pytest.mark.parametrize("judge", ["", "  ", None])
def test_the_shared_judging_options_take_a_blank_judge_as_none(judge: str | None) -> None:
    from proctor.cli._options import judging

    options = dict(judge_concurrency=None, judge_rpm=None, judge_timeout=None, no_cache=False, cache_dir=None,
                   prices=None, strict=False, k=None)  # fmt: skip
    assert judging(judge=judge, **options)["judge"] is None
    assert judging(judge=" openai/gpt-4.1-mini ", **options)["judge"] == "openai/gpt-4.1-mini"


def test_ci_refuses_a_blank_judge_variable_as_no_judge(tmp_path: Path) -> None:
    suite_dir(tmp_path, mixjudge=MIXJUDGE)
    result = runner.invoke(app, ["run", str(tmp_path), "--ci"], env={"PROCTOR_JUDGE_MODEL": "  "})
    refusal(result, "mixjudge", "llm-rubric: polite")


def test_ci_refuses_a_scenario_script_s_judged_steps_without_a_judge(tmp_path: Path) -> None:
    suite = str(suite_dir(tmp_path, scripted=SCRIPTED) / "scripted.yaml")
    no_judge = {"PROCTOR_JUDGE_MODEL": ""}
    refusal(runner.invoke(app, ["run", suite, "--ci"], env=no_judge), "scripted", "llm-rubric: polite")
    suite_dir(tmp_path, scripted=SCRIPTED.replace("  - check: [{type: llm-rubric, value: polite}]\n", ""))
    checkpoint = "step 2 judge checkpoint: The agent was polite"
    refusal(runner.invoke(app, ["run", suite, "--ci", "--judge", ""], env=no_judge), "scripted", checkpoint)
    assert not (tmp_path / ".results").exists()
    suite_dir(tmp_path, scripted=SCRIPTED)
    allowed = runner.invoke(app, ["run", suite, "--ci", "--allow-skipped"], env=no_judge)
    assert allowed.exit_code == 0, allowed.output  # accepted: both judged checks skipped, the case on `contains`
    assert json.loads(allowed.stdout)["summary"]["checks"] == {"passed": 1, "failed": 0, "error": 0, "skipped": 2}


def test_ci_exits_6_on_a_skipped_case_and_5_on_an_errored_one(tmp_path: Path) -> None:
    suite_dir(tmp_path, greets=PASSING, unchecked=UNCHECKED)
    skipped = runner.invoke(app, ["run", str(tmp_path), "--ci"])
    assert skipped.exit_code == 6, skipped.output
    summary = json.loads(skipped.stdout)
    assert summary["exit_code"] == 6
    assert summary["cases"][1]["reason"] == "nothing was scored: the case has no checks"
    allowed = runner.invoke(app, ["run", str(tmp_path), "--ci", "--allow-skipped"])
    assert allowed.exit_code == 0 and json.loads(allowed.stdout)["exit_code"] == 0
    assert runner.invoke(app, ["run", str(tmp_path)]).exit_code == 0  # not under --ci: listed, not failed

    crash = "name: crash\ntrials: 1\ntarget: python:helpers.agents:crash\nturns: [{content: a}]\n"
    suite_dir(tmp_path, crash=crash)
    errored = runner.invoke(app, ["run", str(tmp_path), "--ci", "--allow-skipped"])
    assert errored.exit_code == 5 and json.loads(errored.stdout)["exit_code"] == 5


ALMOST = """\
name: almost
trials: 2
target: python:helpers.agents:echo
turns:
  - content: "Alice and Bob and Carol"
    assert:
      - {type: contains, value: Alice, weight: 10}
      - {type: contains-all, value: [Alice, Dave]}
"""


def test_console_names_a_failing_check_of_a_passing_case_without_verbose(tmp_path: Path) -> None:
    suite_dir(tmp_path, almost=ALMOST)
    result = runner.invoke(app, ["run", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "passed, with 1 failing check almost" in result.output
    assert "[failed] turn 1 contains-all" in result.output and "failed in 2 of 2 trials" in result.output
    assert "Dave" in result.output  # the reason: what was missing


def test_help_documents_the_exit_codes_and_the_verdict_options() -> None:
    text = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    needles = ("--allow-skipped", "--strict", "--judge-timeout", "--max-errors", "Exit codes", "5  none failed")
    for needle in needles:
        assert needle in text, needle


def test_bad_max_errors_exits_2_with_the_reason(tmp_path: Path) -> None:
    suite_dir(tmp_path, greets=PASSING)
    result = runner.invoke(app, ["run", str(tmp_path), "--max-errors", "lots"])
    assert result.exit_code == 2
    assert "--max-errors: expected a count of errored trials (e.g. 3), a rate (0.1) or a percentage (10%)" in (
        result.output
    )


def test_the_readmes_lobu_migration_example_scores_as_it_says(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Coming from the Lobu CLI", 1)[1].split("\n## ", 1)[0]
    suite = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "remembers-me.yaml").write_text(
        suite + "trials: 1\ntarget: python:helpers.agents:forgetful\n", encoding="utf-8"
    )
    result = runner.invoke(app, ["run", str(tmp_path), "--ci"])
    assert result.exit_code == 1, result.output
    data = json.loads(Path(json.loads(result.stdout)["results_file"]).read_text())
    trial = data["cases"][0]["trials"][0]
    assert (trial["status"], trial["score"]) == ("failed", 0.25)
    lobu_cli = sum(check["score"] for check in trial["checks"])  # weights ignored, turn scores added
    assert lobu_cli == 1.0
    assert "| Lobu CLI | 1 (weight ignored) | 0 | 1 + 0 = **1.0** | passed |" in section
    assert "= **0.25** | failed |" in section


def test_exit_codes_follow_the_written_results() -> None:
    from proctor.cli._console import EXIT_ERRORED, EXIT_SKIPPED, EXIT_UNREACHABLE, exit_code
    from proctor.scoring import ErrorBudget, parse_error_limit

    summary = {"failed": 0, "errored": 0, "skipped": 1}
    data = {"status": "complete", "reason": None, "cases": [], "summary": summary}
    assert exit_code(data) == 0 and exit_code(data, fail_on_skipped=True) == EXIT_SKIPPED
    assert exit_code({**data, "summary": {**summary, "errored": 1}}, fail_on_skipped=True) == EXIT_ERRORED
    assert exit_code({**data, "summary": {**summary, "errored": 1, "failed": 1}}) == 1
    budget = ErrorBudget(parse_error_limit("0"), planned=4)
    budget.record("error")
    stopped = {**data, "status": "aborted", "reason": budget.reason()}  # how the runner records the stop
    assert exit_code(stopped) == EXIT_ERRORED
    assert exit_code({**data, "status": "aborted", "reason": "budget of $1 reached"}) == EXIT_UNREACHABLE


FLAKY = """\
name: flaky
trials: 4
target: python:helpers.agents:flaky_by_trial
turns:
  - content: "confirm?"
    assert:
      - {type: contains, value: confirmed}
"""


def test_k_sets_pass_at_k_and_pass_hat_k_with_wilson_intervals_everywhere(tmp_path: Path) -> None:
    directory = suite_dir(tmp_path, flaky=FLAKY)  # trials 1 and 3 pass, 2 and 4 fail: n = 4, c = 2
    result = runner.invoke(app, ["run", str(directory), "--model", "k2", "--k", "2", "--ci"])
    assert result.exit_code == 1, result.output  # the case needs every trial to pass
    case = json.loads(result.stdout)["cases"][0]
    expected = {"k": 2, "pass_at_k": 0.833333, "pass_hat_k": 0.166667, "pass_rate_ci": [0.150039, 0.849961]}
    assert {key: case[key] for key in expected} == expected  # 1 - C(2,2)/C(4,2), C(2,2)/C(4,2), Wilson 2/4
    (path,) = (directory / ".results").glob("k2_*.json")
    written = json.loads(path.read_text())
    assert {key: written["cases"][0][key] for key in expected} == expected and written["cases"][0]["pass_k"] == 0.166667
    assert written["summary"]["k"] == 2 and written["summary"]["pass_rate_ci"] == [0.0, 0.793451]  # 0 cases of 1
    assert written["summary"]["trial_pass_rate_ci"] == [0.150039, 0.849961]  # 2 trials of 4

    table = runner.invoke(app, ["run", str(directory), "--model", "default"])
    assert table.exit_code == 1, table.output
    assert "95% CI" in table.output and "pass@4" in table.output and "pass^4" in table.output
    assert "50%" in table.output and "15-85%" in table.output  # the pass rate's interval, on the row
    assert "case pass rate 0% (95% CI 0-79%), mean pass@4 1.00, pass^4 0.00" in table.output

    beyond = runner.invoke(app, ["run", str(directory), "--model", "k5", "--k", "5", "--ci"])
    assert json.loads(beyond.stdout)["cases"][0]["pass_at_k"] is None  # 4 trials cannot estimate k = 5
    assert runner.invoke(app, ["run", str(directory), "--k", "0"]).exit_code == 2


def many_cases(count: int, failing: set[int]) -> str:
    """A suite of `count` one-turn cases named `case-000`...; those numbered in `failing` fail."""
    lines = ["name: many", "trials: 1", "target: python:helpers.agents:echo", "cases:"]
    for number in range(count):
        needle = "goodbye" if number in failing else "hello"
        lines += [f"  - name: case-{number:03d}", "    turns:", '      - content: "hello there"']
        lines += ["        assert:", f"          - {{type: contains, value: {needle}}}"]
    return "\n".join(lines) + "\n"


def test_a_large_run_lists_only_the_cases_that_did_not_pass_unless_verbose(tmp_path: Path) -> None:
    suite_dir(tmp_path, many=many_cases(101, {7}))
    result = runner.invoke(app, ["run", str(tmp_path), "--quiet"])
    assert result.exit_code == 1, result.output
    assert "case-007" in result.output and "case-008" not in result.output
    assert "100 passed cases not listed: the results file has every case" in result.output
    assert "101 cases: 100 passed, 1 failed" in result.output
    verbose = runner.invoke(app, ["run", str(tmp_path), "--quiet", "--verbose"])
    assert "case-008" in verbose.output and "case-100" in verbose.output and "not listed" not in verbose.output


def test_a_large_run_where_every_case_passed_says_so_in_one_line(tmp_path: Path) -> None:
    suite_dir(tmp_path, many=many_cases(101, set()))
    result = runner.invoke(app, ["run", str(tmp_path), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "101 cases passed (not listed one by one)" in result.output and "case-000" not in result.output


def test_a_run_of_up_to_100_cases_lists_every_case(tmp_path: Path) -> None:
    suite_dir(tmp_path, many=many_cases(100, {7}))
    result = runner.invoke(app, ["run", str(tmp_path), "--quiet"])
    assert result.exit_code == 1, result.output
    assert "case-007" in result.output and "case-099" in result.output and "not listed" not in result.output


def test_the_young_generation_threshold_leaves_room_for_what_the_planned_trials_keep() -> None:
    from types import SimpleNamespace

    from proctor.cli._run import young_threshold

    cases = [SimpleNamespace(trials=1)] * 5_000 + [SimpleNamespace(trials=3)]
    assert young_threshold(cases, None) == 40 * 5_003  # W2: its ~91,000 kept objects never trigger a collection
    assert young_threshold(cases, 2) == 40 * 10_002  # --trials overrides each case's
    assert young_threshold(cases[:10], None) == 100_000  # never below the run's old threshold
    assert young_threshold(cases * 10, None) == 1_000_000  # bounded: garbage cycles are still collected
