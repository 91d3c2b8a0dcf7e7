"""Calibration of a suite's judges against human labels (`proctor calibrate`).

A human verdict (`pass` or `fail`) is given per check of a run, in one of two ways:

* in the results JSON itself: a `human` field (or `human_label`, or `label`) added to a check, and
  optionally `human_score` (the human's 0..1 score);
* in a labels file keyed by case, trial and check (`--results` names the run): JSON Lines, CSV with a
  header row, or a YAML list, each record with `case` (name, or `<file>::<name>`), `trial` (1-based),
  `check` (the check's name as the results show it), `label`, and optionally `turn` (1-based, when one
  check name occurs on several turns) and `score` (the human's 0..1 score).

Each labelled check is paired with the run's verdict on it (`passed` -> pass, `failed` -> fail; an
`error` or `skipped` check is counted and left out), and per check type (`llm-rubric`, `g-eval`,
`faithfulness`, ...) and overall the report gives the agreement rate, Cohen's kappa, Kendall's tau-b (on
the scores when every compared label has one, else on the verdicts fail < pass) and the confusion
matrix (human rows, judge columns). With `min_kappa` set, a check type whose kappa is below it, or
undefined, fails the calibration.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from proctor.errors import ConfigError
from proctor.results._stats import cohen_kappa, kendall_tau_b
from proctor.results._summary import case_identity, load_run

__all__ = ["HUMAN_FIELDS", "Agreement", "Label", "SuiteCalibration", "calibrate_run", "read_labels"]

HUMAN_FIELDS = ("human", "human_label", "label")
"""Where a check in a results JSON may carry a human verdict, first found wins."""
VERDICTS = ("fail", "pass")
"""The human verdicts in their order (fail < pass)."""
JUDGE_COLUMNS = ("fail", "pass", "error", "skipped")
"""The confusion matrix's columns: the run's verdict, or why there was none."""
_VALUES = {
    "pass": "pass",
    "passed": "pass",
    "yes": "pass",
    "true": "pass",
    "1": "pass",
    "fail": "fail",
    "failed": "fail",
    "no": "fail",
    "false": "fail",
    "0": "fail",
}
_STATUS = {"passed": "pass", "failed": "fail", "error": "error", "skipped": "skipped"}
_MAX_SHOWN = 20


@dataclass(frozen=True, slots=True)
class Label:
    """A human verdict on one check of a run."""

    where: str
    """`file:line` of the label (or `file: cases[i].trials[j].checks[k]` inside a results file)."""
    case: str
    """The case: its name, or `<file>::<name>`."""
    trial: int
    """1-based trial number."""
    check: str
    """The check's name as the results show it."""
    verdict: str
    """`pass` or `fail`."""
    turn: int | None = None
    """1-based turn, to tell apart checks of one name on several turns."""
    score: float | None = None
    """The human's 0..1 score, when given."""


@dataclass(slots=True)
class Agreement:
    """Human labels against the run's verdicts for one check type (or all of them)."""

    check_type: str
    """The check type, or `all`."""
    compared: int = 0
    """Labelled checks with a `pass` or `fail` verdict from the run."""
    left_out: int = 0
    """Labelled checks the run did not decide (`error` or `skipped`)."""
    agreement: float | None = None
    """Share of compared checks where the run's verdict equals the human's."""
    kappa: float | None = None
    """Cohen's kappa; `None` when undefined (nothing compared, or both always gave the same verdict)."""
    tau: float | None = None
    """Kendall's tau-b; `None` when undefined (fewer than 2 compared, or one side constant)."""
    tau_on: Literal["scores", "verdicts"] = "verdicts"
    """What tau ranks: the scores when every compared label has one (and the check a score), else verdicts."""
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    """`confusion[human][judge]`: counts; columns `fail`, `pass`, `error`, `skipped`."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "check_type": self.check_type,
            "compared": self.compared,
            "left_out": self.left_out,
            "agreement": _round(self.agreement),
            "cohen_kappa": _round(self.kappa),
            "kendall_tau_b": _round(self.tau),
            "tau_on": self.tau_on,
            "confusion": self.confusion,
        }


@dataclass(slots=True)
class SuiteCalibration:
    """The calibration of a run's judges: per check type and overall."""

    run: Path
    """The results file."""
    labels: Path | None
    """The labels file (`None`: the labels were inside the results file)."""
    types: list[Agreement]
    """One entry per labelled check type, sorted by type."""
    overall: Agreement
    """Every labelled check together."""
    min_kappa: float | None = None
    """The kappa below which a check type fails (`None`: nothing is gated)."""

    @property
    def failing(self) -> list[str]:
        """The check types whose kappa is undefined or below `min_kappa`."""
        if self.min_kappa is None:
            return []
        gate = self.min_kappa
        return [a.check_type for a in self.types if a.kappa is None or a.kappa < gate]

    @property
    def passed(self) -> bool:
        """Whether every check type reaches `min_kappa` (always, without one)."""
        return not self.failing

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON."""
        return {
            "run": str(self.run),
            "labels": None if self.labels is None else str(self.labels),
            "min_kappa": self.min_kappa,
            "passed": self.passed,
            "failing": self.failing,
            "overall": self.overall.to_dict(),
            "check_types": [a.to_dict() for a in self.types],
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _verdict(value: Any) -> str | None:
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, int | float) and value in (0, 1):
        return "pass" if value == 1 else "fail"
    return _VALUES.get(str(value).strip().lower()) if isinstance(value, str) else None


def _label(record: Any, where: str, problems: list[str]) -> Label | None:
    """A label from one record, or `None` with its problems (located) appended."""
    if not isinstance(record, dict):
        problems.append(f"{where}: expected a mapping with case, trial, check and label, found {record!r}")
        return None
    found = len(problems)
    for name in ("case", "trial", "check", "label"):
        if record.get(name) in (None, ""):
            problems.append(f"{where}: {name}: missing (expected case, trial, check and label)")
    if len(problems) > found:
        return None
    trial, turn, score = record["trial"], record.get("turn"), record.get("score")
    verdict = _verdict(record["label"])
    if verdict is None:
        problems.append(f"{where}: label: expected pass or fail, found {record['label']!r}")
    trial = _positive(trial, f"{where}: trial", problems)
    turn = None if turn in (None, "") else _positive(turn, f"{where}: turn", problems)
    if score not in (None, ""):
        try:
            score = float(score)
        except (TypeError, ValueError):
            score = math.nan
        if not 0 <= score <= 1:
            problems.append(f"{where}: score: expected a number in 0..1, found {record['score']!r}")
    if len(problems) > found:
        return None
    return Label(
        where,
        str(record["case"]),
        trial or 0,
        str(record["check"]),
        verdict or "",
        turn,
        None if score in (None, "") else float(score),
    )


def _positive(value: Any, where: str, problems: list[str]) -> int | None:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1 or isinstance(value, float | bool):
        problems.append(f"{where}: expected a whole number >= 1, found {value!r}")
        return None
    return number


def _records(path: Path, text: str) -> Iterable[tuple[str, Any]]:
    """`(where, record)` of every record of a labels file, by its suffix."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [name for name in ("case", "trial", "check", "label") if name not in (reader.fieldnames or [])]
        if missing:
            raise ConfigError(f"{path}:1: the header row lacks {', '.join(missing)} (found {reader.fieldnames})")
        for row in reader:
            yield f"{path}:{reader.line_num}", row
    elif suffix in (".yaml", ".yml"):
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            values = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(values, list) or not isinstance(node, yaml.SequenceNode):
            raise ConfigError(f"{path}:1: expected a list of labels, found {type(values).__name__}")
        for item, value in zip(node.value, values, strict=True):
            yield f"{path}:{item.start_mark.line + 1}", value
    elif suffix in (".jsonl", ".ndjson"):
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield f"{path}:{number}", json.loads(line)
                except json.JSONDecodeError as exc:
                    yield f"{path}:{number}", f"invalid JSON ({exc.msg})"
    else:
        raise ConfigError(f"{path}: labels files are .jsonl, .csv or .yaml; found {path.suffix or 'no suffix'!r}")


def read_labels(path: Path | str) -> list[Label]:
    """Read a labels file (JSON Lines, CSV or YAML by its suffix).

    Raises:
        ConfigError: The file is unreadable, or records are invalid (every problem, with file and line).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read labels file {path}: {exc}") from None
    problems: list[str] = []
    labels = [label for where, record in _records(path, text) if (label := _label(record, where, problems))]
    _raise(problems)
    if not labels:
        raise ConfigError(f"{path}: no labels")
    return labels


def _raise(problems: list[str]) -> None:
    if problems:
        shown = problems[:_MAX_SHOWN] + (
            [f"... and {len(problems) - _MAX_SHOWN} more"] if len(problems) > _MAX_SHOWN else []
        )
        raise ConfigError("invalid labels:\n  " + "\n  ".join(shown))


def _embedded(data: dict[str, Any], path: Path) -> list[tuple[Label, dict[str, Any]]]:
    """The human verdicts added to the checks of a results JSON, each with its check."""
    pairs: list[tuple[Label, dict[str, Any]]] = []
    problems: list[str] = []
    for i, case in enumerate(data["cases"]):
        for j, trial in enumerate(case.get("trials") or []):
            for k, check in enumerate(trial.get("checks") or []):
                name = next((f for f in HUMAN_FIELDS if check.get(f) is not None), None)
                if name is None:
                    continue
                where = f"{path}: cases[{i}].trials[{j}].checks[{k}].{name}"
                verdict = _verdict(check[name])
                if verdict is None:
                    problems.append(f"{where}: expected pass or fail, found {check[name]!r}")
                    continue
                turn = None if check.get("turn") is None else check["turn"] + 1
                score = check.get("human_score")
                if score is not None and (
                    isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1
                ):
                    problems.append(
                        f"{where[: where.rindex('.')]}.human_score: expected a number in 0..1, found {score!r}"
                    )
                    continue
                label = Label(where, case["name"], trial["trial"], check["name"], verdict, turn, score)
                pairs.append((label, check))
    _raise(problems)
    if not pairs:
        fields = ", ".join(HUMAN_FIELDS)
        raise ConfigError(f"{path}: no check has a human verdict ({fields}: pass or fail); or give a labels file")
    return pairs


def _matched(data: dict[str, Any], labels: list[Label], run: Path) -> list[tuple[Label, dict[str, Any]]]:
    """Each label with the one check of the run it names."""
    pairs: list[tuple[Label, dict[str, Any]]] = []
    problems: list[str] = []
    for label in labels:
        cases = [c for c in data["cases"] if label.case in (c["name"], case_identity(c))]
        if len(cases) > 1:
            problems.append(
                f"{label.where}: case: {label.case!r} names {len(cases)} cases in {run}; use <file>::<name>"
            )
            continue
        trials = [t for c in cases for t in c.get("trials") or [] if t["trial"] == label.trial]
        checks = [
            check
            for t in trials
            for check in t.get("checks") or []
            if check["name"] == label.check and (label.turn is None or check.get("turn") == label.turn - 1)
        ]
        if len(checks) == 1:
            pairs.append((label, checks[0]))
        elif not checks:
            what = "case" if not cases else "trial" if not trials else "check"
            missing = f"no check {label.check!r} in trial {label.trial} of case {label.case!r} in {run}"
            problems.append(f"{label.where}: {what}: {missing}")
        else:
            turns = sorted(str(c["turn"] + 1) for c in checks if c.get("turn") is not None)
            problems.append(
                f"{label.where}: check: {label.check!r} occurs {len(checks)} times in trial {label.trial} "
                f"(turns {', '.join(turns) or '-'}): add 'turn'"
            )
    _raise(problems)
    return pairs


def _agreement(check_type: str, pairs: list[tuple[Label, dict[str, Any]]]) -> Agreement:
    result = Agreement(check_type)
    result.confusion = {verdict: dict.fromkeys(JUDGE_COLUMNS, 0) for verdict in VERDICTS}
    compared: list[tuple[Label, dict[str, Any], str]] = []
    for label, check in pairs:
        judged = _STATUS.get(check.get("status", ""), "error")
        result.confusion[label.verdict][judged] += 1
        if judged in VERDICTS:
            compared.append((label, check, judged))
        else:
            result.left_out += 1
    result.compared = len(compared)
    if not compared:
        return result
    humans = [label.verdict for label, _, _ in compared]
    judges = [judged for _, _, judged in compared]
    result.agreement = sum(h == j for h, j in zip(humans, judges, strict=True)) / len(compared)
    result.kappa = cohen_kappa(humans, judges)
    if all(label.score is not None and check.get("score") is not None for label, check, _ in compared):
        result.tau_on = "scores"
        result.tau = kendall_tau_b(
            [float(label.score or 0) for label, _, _ in compared], [c["score"] for _, c, _ in compared]
        )
    else:
        result.tau = kendall_tau_b([VERDICTS.index(h) for h in humans], [VERDICTS.index(j) for j in judges])
    return result


def calibrate_run(
    run: Path | str, labels: Path | str | None = None, *, min_kappa: float | None = None
) -> SuiteCalibration:
    """Compare a run's check verdicts with human labels, per check type.

    Args:
        run: A results JSON (with human verdicts in its checks when `labels` is `None`).
        labels: A labels file keyed by case, trial and check (JSON Lines, CSV or YAML).
        min_kappa: The Cohen's kappa every labelled check type must reach.

    Raises:
        ConfigError: An unreadable file, invalid or unmatched labels (all of them, located), or no label.
    """
    run = Path(run)
    data = load_run(run)
    labels_path = None if labels is None else Path(labels)
    pairs = _embedded(data, run) if labels_path is None else _matched(data, read_labels(labels_path), run)
    by_type: dict[str, list[tuple[Label, dict[str, Any]]]] = {}
    for label, check in pairs:
        by_type.setdefault(check["type"], []).append((label, check))
    types = [_agreement(name, by_type[name]) for name in sorted(by_type)]
    return SuiteCalibration(run, labels_path, types, _agreement("all", pairs), min_kappa)
