"""The `--ci` summary: its figures are the results file's, and `summary_text` is `json.dumps(..., indent=2)`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.checks import registry
from proctor.cli._console import summary_json, summary_text
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites

SUITE = """\
name: s
target: {type: python, callable: "helpers.agents:flaky_by_trial"}
trials: 3
cases:
  - name: NAME
    turns: [{content: "confirm?", assert: [{type: contains, value: "confirmed"}]}]
  - name: once
    trials: 1
    turns: [{content: "confirm?", assert: [{type: contains, value: "never"}]}]
"""


@pytest.mark.parametrize("name", ["flaky", "flaky é 中文"])
def test_summary_text_is_the_indented_json_of_summary_json(tmp_path: Path, name: str) -> None:
    (tmp_path / "s.yaml").write_text(SUITE.replace("NAME", json.dumps(name)), encoding="utf-8")
    outcome = run_sync(load_suites([tmp_path], registry), RunOptions(results_dir=tmp_path / "out"))
    data = summary_json(outcome.result, outcome.path, fail_on_skipped=True)
    assert summary_text(outcome.result, outcome.path, fail_on_skipped=True) == json.dumps(data, indent=2)
    written = json.loads(outcome.path.read_bytes()) if outcome.path else {}
    assert data["summary"] == written["summary"]
    for case, row in zip(written["cases"], data["cases"], strict=True):
        for key in ("status", "pass_rate", "pass_k", "k", "pass_at_k", "pass_hat_k", "pass_rate_ci", "avg_score"):
            assert row[key] == case[key], key
        assert row["trial_counts"] == case["trial_counts"]
        assert row["failing_checks"] == [
            {k: check[k] for k in ("name", "turn", "failed", "ran")} for check in case["failing_checks"]
        ]
    assert [c["status"] for c in data["cases"]] == ["failed", "failed"] and data["exit_code"] == 1
