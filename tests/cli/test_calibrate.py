"""`proctor calibrate` on a suite's judges: a real judged run, then human labels against its verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers.model_server import Reply
from service.events import SEED_EVALUATE, event

runner = CliRunner()

SUITE = """\
name: judged
trials: 4
target: python:helpers.agents:echo
turns:
  - content: "Paris is the capital of France."
    assert:
      - {type: relevance}
"""


def pointwise(score: float) -> Reply:
    return Reply(json.dumps({"reason": "judged", "score": score}))


@pytest.fixture
def judged_run(model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """A run whose judge passes trials 1 and 3 and fails 2 and 4 (one trial at a time, in order)."""
    (tmp_path / "judged.yaml").write_text(SUITE)
    script = model_server.script(pointwise(0.9), pointwise(0.2), pointwise(0.9), pointwise(0.2))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    result = runner.invoke(
        app, ["run", str(tmp_path), "--judge", "openai/j", "--no-cache", "--concurrency", "1", "--ci"]
    )
    assert result.exit_code == 1, result.output
    summary = json.loads(result.stdout)
    data = json.loads(Path(summary["results_file"]).read_text())
    checks = [trial["checks"] for trial in data["cases"][0]["trials"]]
    assert [(c[0]["name"], c[0]["status"]) for c in checks] == [
        ("relevance", "passed"),
        ("relevance", "failed"),
        ("relevance", "passed"),
        ("relevance", "failed"),
    ]
    return summary


HUMANS = ["pass", "pass", "pass", "fail"]
"""The human's verdicts on trials 1..4; the judge's are pass, fail, pass, fail."""


def test_labels_file_against_a_run_gates_on_kappa(judged_run: dict[str, Any], tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "case,trial,check,label\n" + "".join(f"judged,{n},relevance,{h}\n" for n, h in enumerate(HUMANS, 1))
    )
    results = judged_run["results_file"]
    # p_o = 3/4; chance = 3 x 2 (pass) + 1 x 2 (fail) = 8 of 16; kappa = (4 x 3 - 8) / (16 - 8) = 0.5
    strict = runner.invoke(app, ["calibrate", str(labels), "--results", results, "--min-kappa", "0.6"])
    assert strict.exit_code == 1, strict.output
    assert "relevance: 4 compared" in strict.output
    assert "agreement 0.750, Cohen's kappa 0.500 FAIL, Kendall tau-b 0.577 (on verdicts)" in strict.output
    assert "min kappa 0.6: FAIL (relevance)" in strict.output
    by_id = runner.invoke(
        app,
        ["calibrate", str(labels), "--results", judged_run["run_id"], "--history", str(tmp_path), "--min-kappa", "0.5"],
    )
    assert by_id.exit_code == 0, by_id.output
    as_json = runner.invoke(app, ["calibrate", str(labels), "--results", results, "--json"])
    assert as_json.exit_code == 0, as_json.output  # no --min-kappa: a report, no gate
    report = json.loads(as_json.stdout)
    (relevance,) = report["check_types"]
    assert relevance["cohen_kappa"] == 0.5 and relevance["kendall_tau_b"] == pytest.approx(2 / 12**0.5, abs=1e-6)
    assert relevance["confusion"] == {
        "fail": {"fail": 1, "pass": 0, "error": 0, "skipped": 0},
        "pass": {"fail": 1, "pass": 2, "error": 0, "skipped": 0},
    }


def test_human_verdicts_added_to_the_results_file(judged_run: dict[str, Any], tmp_path: Path) -> None:
    path = Path(judged_run["results_file"])
    data = json.loads(path.read_text())
    for trial, human in zip(data["cases"][0]["trials"], HUMANS, strict=True):
        trial["checks"][0]["human"] = human
    labelled = tmp_path / "labelled.json"
    labelled.write_text(json.dumps(data))
    result = runner.invoke(app, ["calibrate", str(labelled), "--min-kappa", "0.5"])
    assert result.exit_code == 0, result.output
    assert "Cohen's kappa 0.500 PASS" in result.output and "min kappa 0.5: PASS" in result.output
    unlabelled = runner.invoke(app, ["calibrate", str(path)])
    assert unlabelled.exit_code == 2 and "no check has a human verdict" in unlabelled.output
    assert "Traceback" not in unlabelled.output
    bad = tmp_path / "bad.csv"
    bad.write_text("case,trial,check,label\njudged,1,relevance,perhaps\n")
    located = runner.invoke(app, ["calibrate", str(bad), "--results", str(path)])
    assert located.exit_code == 2 and f"{bad}:2: label: expected pass or fail, found 'perhaps'" in located.output


def test_a_blank_judge_is_no_judge_for_the_services_commands(tmp_path: Path) -> None:
    # `--judge "$JUDGE"` with the variable unset: no judge (as an empty PROCTOR_JUDGE_MODEL), not a model named " "
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({**event(SEED_EVALUATE, "a"), "label": "pass"}) + "\n")
    for blank in ("", "  "):
        result = runner.invoke(app, ["calibrate", str(labels), "--judge", blank], env={"PROCTOR_JUDGE_MODEL": ""})
        assert result.exit_code == 2 and "configure a judge" in result.output, result.output
