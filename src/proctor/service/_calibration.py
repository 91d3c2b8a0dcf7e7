"""Calibration: how well the pipeline's verdicts agree with human labels (`proctor calibrate`).

A labels file is JSON Lines of events, each with a human verdict in `label` (or `human_label`, or the
Go Eval Agent's `human_annotation`): `pass`, `review` or `fail`. The pipeline scores every event; the
report gives the agreement rate, Cohen's kappa (agreement beyond chance over the three verdicts), the
confusion matrix (human rows, pipeline columns) and Kendall's tau-b between the two orderings
fail < review < pass. Events whose verdict is `error` (no judge could
run) cannot be compared: they are counted and left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from proctor.errors import ConfigError
from proctor.results._stats import cohen_kappa, kendall_tau_b
from proctor.service._batch import LineError, evaluate_all, read_events
from proctor.service._pipeline import ServiceSettings, build_pipeline

__all__ = ["LABELS", "LABEL_FIELDS", "CalibrationReport", "calibrate", "kendall_tau_b"]

LABELS = ("fail", "review", "pass")
"""The verdicts in their order (fail < review < pass)."""
LABEL_FIELDS = ("label", "human_label", "human_annotation")
"""Where a line's human verdict may be, first found wins."""
_RANK = {label: rank for rank, label in enumerate(LABELS)}


@dataclass(slots=True)
class CalibrationReport:
    """Human labels against the pipeline's verdicts."""

    path: Path
    """The labels file."""
    compared: int = 0
    """Events with a label and a verdict other than `error`."""
    errors: int = 0
    """Events whose verdict is `error` (no judge could run): left out."""
    agreement: float | None = None
    """Share of compared events where the verdict equals the label."""
    tau: float | None = None
    """Kendall's tau-b between labels and verdicts (fail < review < pass); `None` when undefined."""
    threshold: float = 0.3
    """The tau below which calibration fails."""
    kappa: float | None = None
    """Cohen's kappa between labels and verdicts (three categories, unweighted); `None` when undefined."""
    min_kappa: float | None = None
    """The kappa below which calibration fails (`--min-kappa`); `None`: kappa does not gate."""
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    """`confusion[label][verdict]`: counts, with an `error` column."""
    invalid: list[LineError] = field(default_factory=list)
    """Lines skipped: not events, or without a valid label."""

    @property
    def passed(self) -> bool:
        """Whether tau is defined and at least the threshold (and kappa at least `min_kappa`, when set)."""
        kappa_ok = self.min_kappa is None or (self.kappa is not None and self.kappa >= self.min_kappa)
        return self.tau is not None and self.tau >= self.threshold and kappa_ok

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON."""
        return {
            "path": str(self.path),
            "compared": self.compared,
            "errors": self.errors,
            "agreement": self.agreement,
            "kendall_tau_b": self.tau,
            "correlation_threshold": self.threshold,
            "cohen_kappa": self.kappa,
            "min_kappa": self.min_kappa,
            "passed": self.passed,
            "confusion": self.confusion,
            "invalid": [{"line": e.line, "message": e.message} for e in self.invalid],
        }


def _label(extra: dict[str, Any]) -> str | None:
    for name in LABEL_FIELDS:
        value = extra.get(name)
        if value is not None:
            text = str(value).strip().lower()
            return text if text in _RANK else None
    return None


def calibrate(
    path: Path | str,
    *,
    settings: ServiceSettings,
    workers: int = 8,
    threshold: float = 0.3,
    min_kappa: float | None = None,
) -> CalibrationReport:
    """Score every labelled event and compare the verdicts with the labels.

    Args:
        path: JSON Lines of events, each with a human `label` (`pass`, `review` or `fail`).
        settings: The pipeline and judge model (calibration needs a judge).
        workers: Events evaluated at once.
        threshold: The Kendall tau below which the report fails.
        min_kappa: The Cohen's kappa below which the report fails (`None`: kappa does not gate).

    Returns:
        The report (invalid lines are listed in it and skipped).

    Raises:
        ConfigError: Unreadable file, no judge model, no labelled event, or bad settings.
    """
    path = Path(path)
    if settings.judge_model is None:
        raise ConfigError("calibration compares judge verdicts with human labels: configure a judge with --judge")
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    lines, invalid = read_events(path, LABEL_FIELDS)
    labelled = []
    for line in lines:
        label = _label(line.extra)
        if label is None:
            found = next((line.extra[k] for k in LABEL_FIELDS if k in line.extra), None)
            what = "no label" if found is None else f"label {found!r}"
            invalid.append(LineError(line.line, f"{what}: expected one of {', '.join(LABELS)} in 'label'"))
        else:
            labelled.append((label, line.event))
    invalid.sort(key=lambda error: error.line)
    if not labelled:
        raise ConfigError(f"{path}: no labelled event to calibrate with")
    pipeline = build_pipeline(settings)

    async def main() -> list[Any]:
        try:
            return await evaluate_all(pipeline, [event for _, event in labelled], workers=workers)
        finally:
            await pipeline.aclose()

    results = anyio.run(main)
    report = CalibrationReport(path, threshold=threshold, invalid=invalid, min_kappa=min_kappa)
    report.confusion = {label: dict.fromkeys((*LABELS, "error"), 0) for label in LABELS}
    humans: list[int] = []
    machines: list[int] = []
    for (label, _), result in zip(labelled, results, strict=True):
        report.confusion[label][result.verdict] += 1
        if result.verdict == "error":
            report.errors += 1
            continue
        humans.append(_RANK[label])
        machines.append(_RANK[result.verdict])
    report.compared = len(humans)
    if humans:
        report.agreement = sum(h == m for h, m in zip(humans, machines, strict=True)) / len(humans)
    report.tau = kendall_tau_b(humans, machines)
    report.kappa = cohen_kappa(humans, machines)
    return report
