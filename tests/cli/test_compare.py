"""`proctor compare` when a run has no outcome to compare: skipped, errored trials (QA, two HIGH defects).

Errors are not scores, and nothing unchecked passes: a skipped or errored trial is left out of the pairs
(and counted), never a failure; and `--fail-on-regression` does not pass a candidate that could not be
compared (exit 5, undecided).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from proctor.cli._compare import EPILOG, EXIT_UNDECIDED

runner = CliRunner()

CASES = 6
TRIALS = 3


def write_suite(directory: Path, check: str) -> None:
    cases = "".join(
        f"  - name: c{n}\n    turns:\n      - content: hello {n}\n        assert: [{check}]\n"
        for n in range(1, CASES + 1)
    )
    (directory / "s.yaml").write_text(f"name: s\ntrials: {TRIALS}\ncases:\n{cases}", encoding="utf-8")


def run(suites: Path, results: Path, target: str, *extra: str) -> str:
    """Run the suite against `target`; the results file."""
    result = runner.invoke(app, ["run", str(suites), "--target", target, "--ci", "--results-dir", str(results), *extra])
    assert result.exit_code in (0, 3, 5), result.output  # 3: every trial errored in the target
    return str(json.loads(result.stdout)["results_file"])


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, str]:
    """`passed` (every trial), `skipped` (llm-rubric without a judge) and `errored` (the agent raises)."""
    suites = tmp_path / "evals"
    suites.mkdir()
    write_suite(suites, "{type: contains, value: hello}")
    files = {"passed": run(suites, tmp_path / "a", "python:helpers.agents:echo")}
    files["errored"] = run(suites, tmp_path / "e", "python:helpers.agents:crash")
    write_suite(suites, "{type: llm-rubric, value: Says hello}")  # same file and cases: they pair by key
    files["skipped"] = run(suites, tmp_path / "s", "python:helpers.agents:echo", "--allow-skipped")
    for name, status in (("passed", "passed"), ("errored", "error"), ("skipped", "skipped")):
        data = json.loads(Path(files[name]).read_text(encoding="utf-8"))
        assert {t["status"] for c in data["cases"] for t in c["trials"]} == {status}
    return files


def compare(*args: str) -> Any:
    return runner.invoke(app, ["compare", *args])


def test_a_skipped_candidate_is_not_a_regression_nor_an_improvement(runs: dict[str, str]) -> None:
    # Before: "A passed and B failed 18", McNemar p=7.6e-06, verdict regression, exit 1 (and the reverse an
    # improvement): B had checked nothing.
    gate = compare(runs["passed"], runs["skipped"], "--fail-on-regression")
    assert gate.exit_code == EXIT_UNDECIDED == 5, gate.output
    assert "A passed and B failed 0, A failed and B passed 0" in gate.stdout
    assert "18 trial pairs left out: B skipped 18" in gate.stdout
    assert "undecided: no trial pair passed or failed in both runs" in gate.stdout
    assert "verdict: undecided" in gate.stdout and "regressed" not in gate.stdout
    data = json.loads(compare(runs["passed"], runs["skipped"], "--json").stdout)
    assert data["verdict"] == "undecided" and data["regression"] is False
    assert data["pass_fail"]["pairs"] == 0 and data["pass_fail"]["a_only_passed"] == 0
    assert data["pass_fail"]["left_out"] == {"pairs": 18, "a": {}, "b": {"skipped": 18}}
    assert {c["change"] for c in data["cases"]} == {"skipped"}
    back = compare(runs["skipped"], runs["passed"], "--fail-on-regression")
    assert back.exit_code == EXIT_UNDECIDED, back.output
    assert "verdict: undecided" in back.stdout and "improvement" not in back.stdout
    assert "fixed" not in back.stdout and "recovered" in back.stdout
    assert "18 trial pairs left out: A skipped 18" in back.stdout


def test_an_errored_candidate_fails_the_gate_and_is_labelled_errored(runs: dict[str, str]) -> None:
    # Before: exit 0, "no significant difference" with 0 pairs, while the table said "regressed" six times.
    gate = compare(runs["passed"], runs["errored"], "--fail-on-regression")
    assert gate.exit_code == EXIT_UNDECIDED, gate.output
    assert "verdict: undecided" in gate.stdout and "18 trial pairs left out: B errored 18" in gate.stdout
    assert "regressed" not in gate.stdout and gate.stdout.count("errored") >= CASES
    data = json.loads(compare(runs["passed"], runs["errored"], "--json").stdout)
    assert data["undecided"] is True and data["unpaired_cases"] == [f"c{n}" for n in range(1, CASES + 1)]
    assert {c["change"] for c in data["cases"]} == {"errored"}
    assert compare(runs["passed"], runs["errored"]).exit_code == 0  # without the gate it is only reported
    back = compare(runs["errored"], runs["passed"], "--fail-on-regression")
    assert back.exit_code == EXIT_UNDECIDED, back.output
    assert "fixed" not in back.stdout and "recovered" in back.stdout  # error -> passed is not a fix


def test_the_undecided_exit_code_is_documented() -> None:
    codes = {int(m[1]): m[2] for m in re.finditer(r"^\s+(\d+)  (.+)$", EPILOG.partition("Exit codes")[2], re.M)}
    assert sorted(codes) == [0, 1, 2, EXIT_UNDECIDED] and "undecided" in codes[EXIT_UNDECIDED]
    assert "--fail-on-regression" in codes[EXIT_UNDECIDED]
