"""`proctor run --judge`: judged checks end to end through the CLI, against a scripted model server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers.model_server import Reply

runner = CliRunner()

SUITE = """\
name: judged
trials: 2
target: python:helpers.agents:echo
rubric: tone.md
turns:
  - content: "Paris is the capital of France."
    assert:
      - {type: contains, value: Paris}
      - {type: llm-rubric, value: "States the capital", weight: 2}
      - {type: relevance}
"""
POINTWISE = json.dumps({"reason": "On topic.", "score": 0.9})
# One answer every judge here can parse: pointwise {reason, score}, llm-rubric also reads `pass`, the rubric
# reads `criteria`.
ANY_VERDICT = json.dumps(
    {
        "reason": "Fine.",
        "pass": True,
        "score": 0.9,
        "criteria": [{"name": "Polite", "passed": True, "explanation": "yes"}],
    }
)


def judged_run(tmp_path: Path, *extra: str) -> Any:
    return runner.invoke(
        app,
        [
            "run",
            str(tmp_path),
            "--judge",
            "openai/gpt-4.1-mini",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--ci",
            *extra,
        ],
    )


@pytest.fixture
def verdicts(model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """A scripted judge that answers each prompt kind with its verdict shape."""
    (tmp_path / "judged.yaml").write_text(SUITE)
    (tmp_path / "tone.md").write_text("# Tone\n- Polite\n")
    script = model_server.script(default=Reply(POINTWISE))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return script


def test_judged_run_scores_costs_and_cache(verdicts: Any, tmp_path: Path) -> None:
    verdicts.default = Reply(ANY_VERDICT)
    first = judged_run(tmp_path)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert summary["summary"]["checks"] == {"passed": 8, "failed": 0, "error": 0, "skipped": 0}
    judge = summary["summary"]["costs"]["judge"]
    assert (judge["calls"], judge["cached_calls"], judge["prompt"], judge["completion"]) == (6, 0, 600, 120)
    # gpt-4.1-mini: $0.40 / 1M input, $1.60 / 1M output (bundled prices)
    assert judge["cost_usd"] == pytest.approx(6 * (100 * 0.4 + 20 * 1.6) / 1e6)
    assert len(verdicts.bodies) == 6
    data = json.loads(Path(summary["results_file"]).read_text())
    trial = data["cases"][0]["trials"][0]
    rubric = next(c for c in trial["checks"] if c["type"] == "rubric")
    assert rubric["status"] == "passed" and rubric["details"]["judge"]["model"] == "openai/gpt-4.1-mini"
    # 0.5 x assertions ((1*1 + 0.9*2 + 0.9*1) / 4 = 0.925) + 0.5 x rubric (1.0)
    assert trial["score"] == pytest.approx(0.5 * 0.925 + 0.5 * 1.0)

    second = judged_run(tmp_path)
    assert second.exit_code == 0
    cached = json.loads(second.stdout)["summary"]["costs"]["judge"]
    assert (cached["calls"], cached["cached_calls"], cached["prompt"]) == (6, 6, 0)
    assert len(verdicts.bodies) == 6  # the warm cache answered: no judge request reached the server

    third = judged_run(tmp_path, "--no-cache")
    assert third.exit_code == 0 and len(verdicts.bodies) == 12


def test_judge_failure_is_an_error_and_the_trial_is_error(verdicts: Any, tmp_path: Path) -> None:
    verdicts.default = Reply("not json at all")
    result = judged_run(tmp_path)
    assert result.exit_code == 5  # errored, not failed: its own exit code (was 1 before issue 14)
    summary = json.loads(result.stdout)
    assert summary["summary"]["checks"]["error"] == 6 and summary["summary"]["checks"]["passed"] == 2
    assert summary["summary"]["trials"]["errored"] == 2 and summary["cases"][0]["status"] == "error"


def test_budget_stops_new_trials_and_exits_3(verdicts: Any, tmp_path: Path) -> None:
    verdicts.default = Reply(ANY_VERDICT)
    result = judged_run(tmp_path, "--budget", "0.0001", "--concurrency", "1", "--trials", "3")
    assert result.exit_code == 3, result.output
    summary = json.loads(result.stdout)
    assert summary["status"] == "aborted"
    assert summary["summary"]["trials"]["run"] == 1 and summary["summary"]["trials"]["planned"] == 3


def test_judges_of_a_trial_run_in_parallel(verdicts: Any, tmp_path: Path) -> None:
    verdicts.default = Reply(
        ANY_VERDICT,
        delay=0.2,
    )
    result = judged_run(tmp_path, "--trials", "1", "--no-cache")
    assert result.exit_code == 0, result.output
    assert verdicts.max_in_flight == 3  # llm-rubric, relevance and the rubric at once


def test_judge_concurrency_limit_is_honoured(verdicts: Any, tmp_path: Path) -> None:
    verdicts.default = Reply(
        ANY_VERDICT,
        delay=0.1,
    )
    result = judged_run(tmp_path, "--trials", "4", "--no-cache", "--judge-concurrency", "2")
    assert result.exit_code == 0, result.output
    assert verdicts.max_in_flight == 2 and len(verdicts.bodies) == 12


def test_unknown_judge_provider_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "judged.yaml").write_text(SUITE)
    (tmp_path / "tone.md").write_text("- Polite\n")
    result = runner.invoke(app, ["run", str(tmp_path), "--judge", "opnai/gpt-4.1-mini"])
    assert result.exit_code == 2
    assert "unknown model provider 'opnai'" in result.output and "did you mean 'openai'" in result.output


def test_an_empty_judge_leaves_the_project_s_judge(verdicts: Any, tmp_path: Path) -> None:
    # `--judge ""` (an unset CI variable) is no judge given, as an empty PROCTOR_JUDGE_MODEL is: proctor.yaml's
    # judge grades the checks, not nobody
    verdicts.default = Reply(ANY_VERDICT)
    (tmp_path / "proctor.yaml").write_text("judge: openai/gpt-4.1-mini\n")
    for given in (["--judge", ""], ["--judge", " "]):
        result = runner.invoke(
            app, ["run", str(tmp_path), "--ci", "--no-cache", *given], env={"PROCTOR_JUDGE_MODEL": ""}
        )
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary["summary"]["checks"] == {"passed": 8, "failed": 0, "error": 0, "skipped": 0}
        assert summary["summary"]["costs"]["judge"]["calls"] == 6
