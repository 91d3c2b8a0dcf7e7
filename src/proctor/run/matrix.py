"""Matrices: the same cases against each combination of models and targets, as one group of runs.

`proctor run --model a --model b --target URL1 --target URL2` runs every combination (model x target)
one after the other, each an ordinary run with its own results file, and compares them: per
combination the case pass rate with its Wilson interval, the mean score, the median latency, tokens and
cost; against the first combination (the baseline) the cases that passed in one and not the other, and
McNemar's exact test on those pairs. Cases pair by `proctor compare`'s rule (`pair_outcomes`): only a
case that passed or failed in both runs pairs; one that errored, was skipped or was inconclusive in
either is left out and counted, never scored as a failure. The group (its runs and the comparison) is
written beside the results as `<group>.matrix.json`.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proctor.results import mcnemar_exact
from proctor.results._comparison import Pairing, pair_outcomes
from proctor.results._summary import case_identity
from proctor.run.batch import run
from proctor.run.options import RunObserver, RunOptions
from proctor.run.record import RunOutcome
from proctor.scoring import wilson_interval
from proctor.suite import Case, Suite

__all__ = ["Combination", "Matrix", "MatrixRow", "combinations", "run_matrix"]


@dataclass(frozen=True, slots=True)
class Combination:
    """One cell of the matrix: a model and a target (`None`: the suites' or the options' own)."""

    model: str | None
    """The model sent to the agent."""
    target: Any
    """The target spec replacing the suites' target."""
    label: str
    """How the comparison names it (`model @ target`)."""


def combinations(models: Sequence[str], targets: Sequence[tuple[str, Any]]) -> list[Combination]:
    """Every model x target pair, in the order given (models vary fastest within a target).

    Args:
        models: The models (empty: the suites' own).
        targets: `(label, spec)` of each target (empty: the suites' own).
    """
    out = []
    models_or_default: list[str | None] = [*models] or [None]
    for (target_label, spec), model in itertools.product(targets or [("", None)], models_or_default):
        parts = [part for part in (model, target_label) if part]
        out.append(Combination(model, spec, " @ ".join(parts) or "default"))
    return out


@dataclass(frozen=True, slots=True)
class MatrixRow:
    """One combination's line of the comparison."""

    label: str
    run_id: str
    cases: int
    passed: int
    pass_rate: float | None
    interval: tuple[float, float] | None
    mean_score: float | None
    p50_ms: float | None
    tokens: int
    cost_usd: float | None
    worse: int = 0
    """Cases that passed in the baseline and failed here."""
    better: int = 0
    """Cases that passed here and failed in the baseline."""
    p_value: float | None = None
    """McNemar's exact test against the baseline (`None` for the baseline itself)."""
    pairing: Pairing | None = None
    """The case pairs with the baseline and the cases left out (`None` for the baseline itself)."""

    def to_dict(self) -> dict[str, Any]:
        """The row's JSON form."""
        return {
            "label": self.label,
            "run_id": self.run_id,
            "cases": self.cases,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "pass_rate_ci": list(self.interval) if self.interval else None,
            "mean_score": self.mean_score,
            "p50_ms": self.p50_ms,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "vs_baseline": None
            if self.p_value is None
            else {
                "worse": self.worse,
                "better": self.better,
                "mcnemar_p": self.p_value,
                "pairs": None if self.pairing is None else len(self.pairing.pairs),
                "left_out": None if self.pairing is None else self.pairing.left_out_dict(),
            },
        }

    def versus(self) -> str:
        """The comparison with the baseline as text (`baseline` for the baseline itself)."""
        if self.p_value is None:
            return "baseline"
        left_out = None if self.pairing is None else self.pairing.left_out_note("case")
        if self.pairing is not None and not self.pairing.pairs:
            return f"no case paired ({left_out})" if left_out else "no case paired"
        text = f"{self.better} better, {self.worse} worse (McNemar p={self.p_value:.3g})"
        return f"{text}; {left_out}" if left_out else text


@dataclass(slots=True)
class Matrix:
    """A group of runs, one per combination, and their comparison."""

    group: str
    """The group's id (`matrix_<time>`)."""
    runs: list[tuple[Combination, RunOutcome]] = field(default_factory=list)
    """Each combination with its run."""

    def comparison(self) -> list[MatrixRow]:
        """One row per combination; the first is the baseline the others are tested against."""
        rows: list[MatrixRow] = []
        baseline: dict[str, str] | None = None
        for combination, outcome in self.runs:
            data = outcome.data
            statuses = {case_identity(c): str(c.get("status") or "error") for c in data["cases"]}
            row = _row(combination.label, data)
            if baseline is None:
                baseline = statuses
            else:
                shared = sorted(set(baseline) & set(statuses))
                pairing = pair_outcomes((baseline[key], statuses[key]) for key in shared)  # `proctor compare`'s rule
                worse, better = pairing.discordant
                row = replace(row, worse=worse, better=better, p_value=mcnemar_exact(worse, better), pairing=pairing)
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The group's JSON form: its runs and the comparison."""
        return {
            "group": self.group,
            "runs": [
                {"label": c.label, "model": c.model, "run_id": o.data.get("run_id"), "results": str(o.path or "")}
                for c, o in self.runs
            ],
            "comparison": [row.to_dict() for row in self.comparison()],
        }

    def write(self, directory: Path) -> Path:
        """Write `<group>.matrix.json` into `directory`; returns its path."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.group}.matrix.json"
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    def table(self) -> str:
        """The comparison as plain text, one line per combination."""
        rows = self.comparison()
        width = max([len("combination"), *(len(row.label) for row in rows)])  # labels whole, never cut
        head = f"{'combination':<{width}} {'pass rate':>9} {'95% CI':>9} {'score':>6} {'p50 ms':>7} {'tokens':>7}"
        lines = [f"{head} {'cost $':>8}  vs baseline"]
        for row in rows:
            rate = "-" if row.pass_rate is None else f"{row.pass_rate:.0%}"
            ci = "-" if row.interval is None else f"{row.interval[0]:.0%}-{row.interval[1]:.0%}"
            score = "-" if row.mean_score is None else f"{row.mean_score:.2f}"
            p50 = "-" if row.p50_ms is None else f"{row.p50_ms:.0f}"
            cost = "-" if row.cost_usd is None else f"{row.cost_usd:.4f}"
            lines.append(
                f"{row.label:<{width}} {rate:>9} {ci:>9} {score:>6} {p50:>7} {row.tokens:>7} {cost:>8}  {row.versus()}"
            )
        return "\n".join(lines)


def _scored(case: dict[str, Any]) -> bool:
    return case.get("status") in ("passed", "failed", "error")


def _row(label: str, data: dict[str, Any]) -> MatrixRow:
    cases = [c for c in data["cases"] if _scored(c)]
    passed = sum(1 for c in cases if c["status"] == "passed")
    scores = [c["avg_score"] for c in cases if c.get("avg_score") is not None]
    latencies = [c["latency_ms"]["p50"] for c in cases if (c.get("latency_ms") or {}).get("p50") is not None]
    costs = [((c.get("costs") or {}).get("agent") or {}).get("cost_usd") for c in data["cases"]]
    known = [cost for cost in costs if cost is not None]
    return MatrixRow(
        label=label,
        run_id=str(data.get("run_id", "")),
        cases=len(cases),
        passed=passed,
        pass_rate=passed / len(cases) if cases else None,
        interval=wilson_interval(passed, len(cases)),
        mean_score=statistics.fmean(scores) if scores else None,
        p50_ms=statistics.median(latencies) if latencies else None,
        tokens=sum(int((c.get("tokens") or {}).get("total") or 0) for c in data["cases"]),
        cost_usd=sum(known) if known else None,
    )


async def run_matrix(
    suites: Sequence[Suite],
    options: RunOptions,
    cells: Sequence[Combination],
    *,
    cases: Sequence[Case] | None = None,
    observer: RunObserver | None = None,
) -> Matrix:
    """Run `cases` once per combination, one after the other (each with the options' limits).

    Raises:
        ConfigError: As `proctor.run.run`, for the first combination that cannot start.
    """
    matrix = Matrix(f"matrix_{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}")
    for cell in cells:
        cell_options = replace(
            options,
            model=cell.model if cell.model is not None else options.model,
            target=cell.target if cell.target is not None else options.target,
            group=matrix.group,
        )
        matrix.runs.append((cell, await run(suites, cell_options, cases=cases, observer=observer)))
    return matrix
