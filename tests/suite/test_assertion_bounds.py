"""Load-time bounds on an assertion: a finite, bounded `weight`, and the value a check cannot run without.

Both are located errors (file, line, column, field), as an unknown field or a `contains` without a value is:
a suite that loads is one whose every check can be scored.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from proctor.checks import CheckResult, registry
from proctor.errors import SuiteError
from proctor.scoring import score_trial, weighted_score
from proctor.suite import load_suite_file
from proctor.suite._model import MAX_WEIGHT, AssertionSpec


def suite(tmp_path: Path, check: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nturns:\n  - content: hi\n    assert:\n      - {check}\n", encoding="utf-8")
    return path


def load_error(path: Path) -> tuple[str | None, int | None, int | None, str | None, str]:
    with pytest.raises(SuiteError) as raised:
        load_suite_file(path, registry)
    (issue,) = raised.value.issues
    return issue.file, issue.line, issue.column, issue.field, issue.message


@pytest.mark.parametrize("weight", [".inf", ".Inf", "-.inf", ".nan"])
def test_a_weight_that_is_not_finite_is_a_located_load_error(tmp_path: Path, weight: str) -> None:
    # Before: `.inf` loaded (its trial `skipped`: "every check that ran has weight 0"); `.nan` failed as `< 0`.
    path = suite(tmp_path, f"{{type: contains, value: hi, weight: {weight}}}")
    file, line, column, field, message = load_error(path)
    assert (file, line, column, field) == (str(path), 5, 45, "turns[0].assert[0].weight")
    assert message.startswith("input should be a finite number; found ")


@pytest.mark.parametrize("weight", ["1e308", "1000000.5"])
def test_a_weight_above_the_bound_is_a_located_load_error(tmp_path: Path, weight: str) -> None:
    # Before: 1e308 loaded; two such checks, one passed and one failed, scored their trial 0.0 (not 0.5): the
    # sum of the weights overflowed to `inf`.
    path = suite(tmp_path, f"{{type: contains, value: hi, weight: {weight}}}")
    file, line, _, field, message = load_error(path)
    assert (file, line, field) == (str(path), 5, "turns[0].assert[0].weight")
    assert message.startswith("input should be less than or equal to 1000000; found ")


@pytest.mark.parametrize("weight", ["0", "0.25", "1000000", "1e6"])
def test_weights_from_zero_to_the_bound_load(tmp_path: Path, weight: str) -> None:
    path = suite(tmp_path, f"{{type: contains, value: hi, weight: {weight}}}")
    (check,) = load_suite_file(path, registry).cases[0].turns[0].assert_
    assert check.weight == float(weight)


def test_the_bound_keeps_every_trial_score_finite() -> None:
    assert MAX_WEIGHT == 1e6
    heavy = [CheckResult(f"c{i}", "contains", "passed", 1.0, MAX_WEIGHT) for i in range(100_000)]
    light = CheckResult("light", "contains", "failed", 0.0, 1e-9)
    assert weighted_score([*heavy, light]) == pytest.approx(1.0)
    trial = score_trial([*heavy, light], pass_threshold=0.8)
    assert trial.status == "passed" and trial.score is not None and math.isfinite(trial.score)


def test_the_schema_shows_the_bound() -> None:
    weight = AssertionSpec.model_json_schema()["properties"]["weight"]
    assert (weight["minimum"], weight["maximum"]) == (0, MAX_WEIGHT)


def test_faithfulness_without_its_context_is_a_located_load_error(tmp_path: Path) -> None:
    # Before: it loaded, was `skipped` at every run, and the case passed under --ci on its other checks.
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nturns:\n  - content: hi\n    assert:\n      - {type: contains, value: hi}\n"
        "      - {type: faithfulness}\n",
        encoding="utf-8",
    )
    file, line, column, field, message = load_error(path)
    assert (file, line, column, field) == (str(path), 6, 9, "turns[0].assert[1].value")
    assert message == (
        "check type 'faithfulness' needs a value: "
        "Every claim in the answer is supported by the context given as the value (judge)."
    )


def test_faithfulness_with_its_context_loads(tmp_path: Path) -> None:
    path = suite(tmp_path, "{type: faithfulness, value: Paris is the capital of France.}")
    (check,) = load_suite_file(path, registry).cases[0].turns[0].assert_
    assert check.value == "Paris is the capital of France."
