"""Calibrating a suite's judges against human labels: kappa and tau against hand-computed examples."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import CheckResult
from proctor.errors import ConfigError
from proctor.results import CaseResult, RunResult, TrialResult
from proctor.results._calibration import calibrate_run, read_labels
from proctor.results._stats import cohen_kappa, kendall_tau_b, tau_b_exact


def table(*cells: tuple[str, str, int]) -> tuple[list[str], list[str]]:
    """Two raters' labels from a contingency table of `(first, second, count)`."""
    first: list[str] = []
    second: list[str] = []
    for a, b, count in cells:
        first += [a] * count
        second += [b] * count
    return first, second


# Wikipedia, "Cohen's kappa", worked example: 50 grant proposals, reader A (rows) and reader B.
WIKIPEDIA = (("yes", "yes", 20), ("yes", "no", 5), ("no", "yes", 10), ("no", "no", 15))


def test_cohen_kappa_matches_the_published_worked_examples() -> None:
    # p_o = (20 + 15) / 50 = 0.7; p_e = 0.5 x 0.6 + 0.5 x 0.4 = 0.5; kappa = 0.2 / 0.5
    assert cohen_kappa(*table(*WIKIPEDIA)) == pytest.approx(0.4)
    # Wikipedia's "same agreement (60 %), different kappa" pair: 0.1304 and 0.2593
    first = table(("yes", "yes", 45), ("yes", "no", 15), ("no", "yes", 25), ("no", "no", 15))
    second = table(("yes", "yes", 25), ("yes", "no", 35), ("no", "yes", 5), ("no", "no", 35))
    assert cohen_kappa(*first) == pytest.approx(0.06 / 0.46) == pytest.approx(0.1304, abs=1e-4)
    assert cohen_kappa(*second) == pytest.approx(0.14 / 0.54) == pytest.approx(0.2593, abs=1e-4)


def test_cohen_kappa_edges() -> None:
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == 1.0
    assert cohen_kappa(["a", "b"], ["b", "a"]) == -1.0
    assert cohen_kappa(["pass"] * 4, ["pass"] * 4) is None  # p_e = 1: agreement beyond chance is unknown
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "a", "b"], ["a", "a", "a"]) == 0.0  # p_o = p_e = 2/3
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa(["a"], [])


def test_kendall_tau_b_on_a_two_by_two_table_is_phi() -> None:
    first, second = table(*WIKIPEDIA)
    xs, ys = [int(v == "yes") for v in first], [int(v == "yes") for v in second]
    phi = (20 * 15 - 5 * 10) / math.sqrt(25 * 25 * 30 * 20)  # (ad - bc) / sqrt of the margins: 0.4082
    assert tau_b_exact(xs, ys) == pytest.approx(phi) and kendall_tau_b(xs, ys) == pytest.approx(phi)


def llm_rubric(status: str, score: float | None) -> CheckResult:
    return CheckResult("llm-rubric: polite", "llm-rubric", status, score, 1.0, "judged", 0)  # type: ignore[arg-type]


def make_run(path: Path) -> Path:
    """A run of 50 trials of case `grant` (one `llm-rubric` check each, the judge = reader B of the
    Wikipedia example), 2 more trials whose judge errored, and a case `tone` with a `g-eval` check on
    two turns."""
    statuses = table(*WIKIPEDIA)[1] + ["error", "error"]
    grant = [
        TrialResult(
            "suite.yaml::grant",
            number,
            "error" if verdict == "error" else "passed",
            None,
            checks=[
                llm_rubric(
                    {"yes": "passed", "no": "failed"}.get(verdict, "error"),
                    {"yes": 0.9, "no": 0.2}.get(verdict),
                )
            ],
        )
        for number, verdict in enumerate(statuses, 1)
    ]
    tone = [
        TrialResult(
            "suite.yaml::tone",
            number,
            "passed",
            0.5,
            checks=[
                CheckResult("g-eval: tone", "g-eval", "passed", 0.8, 1.0, "ok", 0),
                CheckResult("g-eval: tone", "g-eval", status, score, 1.0, "ok", 1),  # type: ignore[arg-type]
            ],
        )
        for number, (status, score) in enumerate([("passed", 0.7), ("failed", 0.3), ("failed", 0.1)], 1)
    ]
    run = RunResult(
        "run-1",
        "2026-11-25T00:00:00+00:00",
        "m",
        "t",
        [CaseResult("grant", "s", "suite.yaml", [], 1.0, grant), CaseResult("tone", "s", "suite.yaml", [], 1.0, tone)],
    )
    path.write_text(json.dumps(run.to_dict()), encoding="utf-8")
    return path


HUMANS = table(*WIKIPEDIA)[0] + ["yes", "no"]
"""Reader A of the Wikipedia example, then labels for the two errored trials."""
TONE = [(1, 1, "pass", 0.9), (1, 2, "pass", 0.6), (2, 2, "pass", 0.4), (3, 2, "fail", 0.0)]
"""`(trial, turn, label, score)` for the `g-eval` checks."""


def label_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"case": "grant", "trial": n, "check": "llm-rubric: polite", "label": "pass" if h == "yes" else "fail"}
        for n, h in enumerate(HUMANS, 1)
    ]
    rows += [
        {"case": "suite.yaml::tone", "trial": t, "turn": turn, "check": "g-eval: tone", "label": v, "score": s}
        for t, turn, v, s in TONE
    ]
    return rows


def check_report(report: Any) -> None:
    geval, rubric = report.types
    assert (rubric.check_type, rubric.compared, rubric.left_out) == ("llm-rubric", 50, 2)
    assert rubric.agreement == pytest.approx(0.7) and rubric.kappa == pytest.approx(0.4)
    assert rubric.tau_on == "verdicts" and rubric.tau == pytest.approx(250 / math.sqrt(375_000))
    assert rubric.confusion == {
        "pass": {"pass": 20, "fail": 5, "error": 1, "skipped": 0},
        "fail": {"pass": 10, "fail": 15, "error": 1, "skipped": 0},
    }
    # g-eval: humans pass pass pass fail, judge pass pass fail fail: p_o 3/4, p_e (3 x 2 + 1 x 2) / 16
    assert geval.compared == 4 and geval.kappa == pytest.approx((0.75 - 0.5) / 0.5)
    assert geval.tau_on == "scores"  # every label has a score: human 0.9 0.6 0.4 0.0 vs judge 0.8 0.7 0.3 0.1
    assert geval.tau == pytest.approx(1.0)
    assert report.overall.compared == 54 and report.overall.left_out == 2


def test_human_verdicts_inside_a_results_file(tmp_path: Path) -> None:
    path = make_run(tmp_path / "run.json")
    data = json.loads(path.read_text())
    by_trial = {(c["name"], t["trial"]): t for c in data["cases"] for t in c["trials"]}
    for row in label_rows():
        checks = by_trial[(row["case"].split("::")[-1], row["trial"])]["checks"]
        check = checks[row.get("turn", 1) - 1]
        check["human"] = row["label"]
        check["human_score"] = row.get("score")
    path.write_text(json.dumps(data))
    report = calibrate_run(path, min_kappa=0.5)
    geval, rubric = report.types
    assert rubric.kappa == pytest.approx(0.4) and geval.kappa == pytest.approx(0.5)
    assert report.failing == ["llm-rubric"] and not report.passed
    assert calibrate_run(path, min_kappa=0.4).passed and calibrate_run(path).passed  # no gate without one
    assert [t["cohen_kappa"] for t in report.to_dict()["check_types"]] == [0.5, 0.4]  # g-eval, llm-rubric


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".yaml"])
def test_labels_files_in_every_format_give_the_same_report(tmp_path: Path, suffix: str) -> None:
    rows = label_rows()
    labels = tmp_path / f"labels{suffix}"
    if suffix == ".jsonl":
        labels.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    elif suffix == ".csv":
        lines = ["case,trial,turn,check,label,score"]
        lines += [
            f"{r['case']},{r['trial']},{r.get('turn', '')},{r['check']},{r['label']},{r.get('score', '')}" for r in rows
        ]
        labels.write_text("\n".join(lines) + "\n")
    else:
        labels.write_text("".join(f"- {json.dumps(r)}\n" for r in rows))
    report = calibrate_run(make_run(tmp_path / "run.json"), labels)
    check_report(report)


def test_bad_labels_are_located_errors(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run.json")
    csv = tmp_path / "labels.csv"
    csv.write_text(
        "case,trial,check,label\n"
        "grant,1,llm-rubric: polite,pass\n"
        "grant,2,llm-rubric: polite,maybe\n"
        "grant,0,llm-rubric: polite,fail\n"
        "grant,99,llm-rubric: polite,fail\n"
        "nope,1,llm-rubric: polite,fail\n"
        "tone,1,g-eval: tone,pass\n"
    )
    with pytest.raises(ConfigError) as error:
        calibrate_run(run, csv)
    message = str(error.value)
    assert f"{csv}:3: label: expected pass or fail, found 'maybe'" in message
    assert f"{csv}:4: trial: expected a whole number >= 1, found '0'" in message
    csv.write_text(
        "case,trial,check,label\ngrant,99,llm-rubric: polite,fail\nnope,1,x,fail\ntone,1,g-eval: tone,pass\n"
    )
    with pytest.raises(ConfigError) as error:
        calibrate_run(run, csv)
    message = str(error.value)
    assert f"{csv}:2: trial: no check 'llm-rubric: polite' in trial 99 of case 'grant'" in message
    assert f"{csv}:3: case: no check 'x' in trial 1 of case 'nope'" in message
    assert f"{csv}:4: check: 'g-eval: tone' occurs 2 times in trial 1 (turns 1, 2): add 'turn'" in message

    yaml_file = tmp_path / "labels.yaml"
    yaml_file.write_text("- {case: grant, trial: 1, check: 'llm-rubric: polite', label: pass}\n- {case: grant}\n")
    with pytest.raises(ConfigError, match=r"labels.yaml:2: trial: missing"):
        read_labels(yaml_file)
    with pytest.raises(ConfigError, match=r"header row lacks label"):
        read_labels(_write(tmp_path / "h.csv", "case,trial,check\n"))
    with pytest.raises(ConfigError, match=r"labels files are .jsonl, .csv or .yaml"):
        read_labels(_write(tmp_path / "l.txt", "x"))
    with pytest.raises(ConfigError, match="no check has a human verdict"):
        calibrate_run(run)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
