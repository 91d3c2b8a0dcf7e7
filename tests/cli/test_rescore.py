"""`proctor rescore --ci`: a check to re-judge with no judge model is refused at start, as `run --ci` does.

Without a judge, a re-scored LLM-judged check would be `skipped` and the trial scored on the other checks:
a run whose judged check failed would re-score into a pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers.model_server import Reply

runner = CliRunner()

MIXJUDGE = """\
name: mixjudge
trials: 2
target: python:helpers.agents:echo
turns:
  - content: "alice says hi"
    assert: [{type: contains, value: alice}, {type: llm-rubric, value: polite}]
"""
ALL_JUDGED = """\
name: alljudged
trials: 1
target: python:helpers.agents:echo
turns:
  - content: "alice says hi"
    assert: [{type: llm-rubric, value: polite}]
"""
SCRIPTED = """\
name: scripted
trials: 1
target: python:helpers.agents:echo
script:
  - user: "alice says hi"
    assert: [{type: contains, value: alice}]
  - check: [{type: llm-rubric, value: polite}]
"""
NO_JUDGE = {"PROCTOR_JUDGE_MODEL": ""}


def verdict(passed: bool) -> Reply:
    return Reply(json.dumps({"reason": "Rude." if not passed else "Polite.", "pass": passed, "score": float(passed)}))


@pytest.fixture
def judge(model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """A scripted judge that fails every check it is asked about (the agent was rude)."""
    script = model_server.script(default=verdict(False))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)  # the new runs' default store: this test's
    return script


def judged_run(tmp_path: Path, name: str, text: str) -> dict[str, Any]:
    """Run the suite `text` (written as `name.yaml`) judged by the scripted judge; its JSON summary."""
    (tmp_path / f"{name}.yaml").write_text(text)
    suite = str(tmp_path / f"{name}.yaml")
    result = runner.invoke(app, ["run", suite, "--ci", "--judge", "openai/gpt-4.1-mini", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


def rescore(original: dict[str, Any], *args: str) -> Any:
    return runner.invoke(app, ["rescore", original["results_file"], "--ci", "--no-cache", *args], env=NO_JUDGE)


def refusal(result: Any, case: str, check: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: case {case!r} (") and f"check {check!r} needs a judge model" in lines[0]
    assert "pass --judge provider/model" in lines[0] and "--allow-skipped" in lines[0]
    assert result.stdout == ""


def runs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / ".results").glob("*.json"))


def test_a_failed_judged_check_is_not_rescored_into_a_pass_without_a_judge(judge: Any, tmp_path: Path) -> None:
    original = judged_run(tmp_path, "mixjudge", MIXJUDGE)
    assert original["exit_code"] == 1  # the judge failed llm-rubric: the case failed
    before = runs(tmp_path)
    for no_judge in ([], ["--judge", ""], ["--judge", "  "]):
        refusal(rescore(original, *no_judge), "mixjudge", "llm-rubric: polite")
    assert runs(tmp_path) == before  # refused before a new run was written
    allowed = rescore(original, "--allow-skipped")
    assert allowed.exit_code == 0, allowed.output  # what --allow-skipped accepts: the judged check skipped
    assert json.loads(allowed.stdout)["summary"]["checks"]["skipped"] == 2
    judged = rescore(original, "--judge", "openai/gpt-4.1-mini")
    assert judged.exit_code == 1, judged.output  # with the judge: the same verdict as the run's


def test_every_check_judged_exits_2_at_start_not_6(judge: Any, tmp_path: Path) -> None:
    original = judged_run(tmp_path, "alljudged", ALL_JUDGED)
    refusal(rescore(original), "alljudged", "llm-rubric: polite")
    assert rescore(original, "--allow-skipped").exit_code == 0


def test_only_the_checks_to_rerun_need_a_judge(judge: Any, tmp_path: Path) -> None:
    original = judged_run(tmp_path, "mixjudge", MIXJUDGE)
    kept = rescore(original, "--checks", "contains")  # llm-rubric keeps its stored (failed) verdict
    assert kept.exit_code == 1, kept.output
    assert json.loads(kept.stdout)["summary"]["checks"] == {"passed": 2, "failed": 2, "error": 0, "skipped": 0}
    refusal(rescore(original, "--checks", "llm-rubric"), "mixjudge", "llm-rubric: polite")


def test_cases_kept_as_recorded_need_no_judge(judge: Any, tmp_path: Path) -> None:
    judge.default = verdict(True)
    original = judged_run(tmp_path, "scripted", SCRIPTED)  # scenario scripts are not re-scored: kept
    result = rescore(original)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["checks"]["skipped"] == 0


def test_a_suite_judge_counts(judge: Any, tmp_path: Path) -> None:
    original = judged_run(tmp_path, "mixjudge", MIXJUDGE)
    (tmp_path / "mixjudge.yaml").write_text("judge: openai/gpt-4.1-mini\n" + MIXJUDGE)
    result = rescore(original)
    assert result.exit_code == 1, result.output  # re-judged by the suite's judge: failed again, not refused
    assert len(judge.bodies) == 4  # two trials judged in the run, two in the re-score
