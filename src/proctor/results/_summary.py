"""The report model: what a run amounts to, and several runs side by side, computed from results JSON.

Renderers (`_markdown`, `_html`) and the history store read these; none of them re-derives a figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proctor.errors import ConfigError
from proctor.results._aggregate import mean_statistics
from proctor.results._json import JSONDecodeError, loads
from proctor.results._model import RESULTS_VERSION, TrialFigures, with_k
from proctor.scoring import percentile, wilson_interval  # not via `_stats` (the same function): a run never loads it

__all__ = [
    "Report",
    "ReportCase",
    "ReportRun",
    "RunSummary",
    "StoredCase",
    "build_report",
    "case_identity",
    "case_pass_interval",
    "known_cost",
    "load_run",
    "turn_latencies",
]


def load_run(path: Path) -> dict[str, Any]:
    """Read a results JSON file.

    Raises:
        ConfigError: The file is missing, is not a Proctor results file, or was written by a newer Proctor.
    """
    try:
        data = loads(path.read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"no such results file: {path}") from None
    except (OSError, UnicodeDecodeError, JSONDecodeError) as exc:
        raise ConfigError(f"{path} is not a Proctor results file ({exc})") from None
    if not isinstance(data, dict) or "run_id" not in data or not isinstance(data.get("cases"), list):
        raise ConfigError(f"{path} is not a Proctor results file (no run_id or cases)")
    version = data.get("version")
    if isinstance(version, int) and version > RESULTS_VERSION:
        raise ConfigError(
            f"{path} has results format version {version}; this Proctor reads up to {RESULTS_VERSION}: upgrade it"
        )
    from proctor.results._format import validate_results  # here: a run that reads no results file never loads it

    validate_results(data, str(path))
    return data


def case_pass_interval(cases: Iterable[Mapping[str, Any]]) -> tuple[float, float] | None:
    """The case pass rate's 95 % Wilson interval as the results JSON's `summary.pass_rate_ci` has it.

    Passed cases out of the cases that are not skipped (a skipped case had nothing scored: it is neither a
    pass nor a miss; an errored or inconclusive one did not pass), from the cases' JSON with the function
    the JSON's figure comes from (`mean_statistics`); what the HTML report and `proctor view` show.
    """
    return mean_statistics([case.get("status") or "error" for case in cases], (), ())[2]


def known_cost(costs: dict[str, Any] | None) -> float | None:
    """The sum of the known USD costs over roles (agent, judge, ...); `None` when none is known."""
    total = None
    for part in (costs or {}).values():
        cost = part.get("cost_usd")
        if cost is not None:
            total = cost if total is None else total + cost
    return None if total is None else round(total, 8)


def turn_latencies(trial: dict[str, Any]) -> list[float]:
    """Latencies of a trial's assistant replies, in ms, in turn order."""
    return [
        m["latency_ms"]
        for m in trial.get("turns") or []
        if m.get("role") == "assistant" and m.get("latency_ms") is not None
    ]


def case_identity(case: dict[str, Any]) -> str:
    """`<file>::<name>`: how runs, suites and rescoring match a case."""
    return f"{case.get('file', '')}::{case['name']}"


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run in a few figures: what `proctor runs` lists and the history store keeps."""

    run_id: str
    model: str | None
    target: str
    status: str
    started_at: str
    finished_at: str | None
    cases: int
    passed: int
    failed: int
    errored: int
    pass_rate: float | None
    """Passed cases / cases (Lobu's pass rate)."""
    trials_run: int
    trials_passed: int
    trials_failed: int
    trials_errored: int
    avg_score: float | None
    """Mean of the cases' average scores."""
    p50_latency_ms: float | None
    """Median latency over every reply of the run."""
    tokens: int
    """Agent tokens."""
    cost_usd: float | None
    """Known cost over every role; `None` when no price was known."""
    rescored_from: str | None = None
    """The run this one re-scored."""
    run_group: str | None = None
    """The group of runs it belongs to (a `--model`/`--target` matrix: `matrix_<time>`)."""
    path: str | None = None
    """Where the results JSON is."""

    @property
    def label(self) -> str:
        """What reports call the run: its model, else its id."""
        return self.model or self.run_id

    @classmethod
    def from_data(cls, data: dict[str, Any], path: Path | str | None = None) -> RunSummary:
        """Summarise a run from its JSON form."""
        return cls.from_parts(data, case_parts(data), path)

    @classmethod
    def from_parts(cls, head: dict[str, Any], cases: Sequence[CaseParts], path: Path | str | None = None) -> RunSummary:
        """Summarise a run from its JSON form's fields before the cases and each case's (see `case_parts`).

        The same figures as `from_data`, for a caller that has the pieces but not the whole JSON (a run
        being recorded: `RunResult` serves them without building it).
        """
        return cls.from_figures(
            head,
            [c.get("status") for c, _ in cases],
            [c["avg_score"] for c, _ in cases if c.get("avg_score") is not None],
            [lat for _, runs in cases for t in runs for lat in t[6]],
            sum(len(runs) for _, runs in cases),
            path,
        )

    @classmethod
    def from_figures(
        cls,
        head: dict[str, Any],
        statuses: Sequence[str | None],
        scores: Sequence[float],
        latencies: Sequence[float],
        trial_count: int,
        path: Path | str | None = None,
    ) -> RunSummary:
        """Summarise a run from its JSON form's fields before the cases and what `from_parts` reads of its cases.

        Args:
            head: The fields before the cases (`summary` among them).
            statuses: Each case's `status`.
            scores: The cases' `avg_score`s that are not `None`, in case order.
            latencies: Every trial's reply latencies (its `turns`' rounded `latency_ms`), in case and trial order.
            trial_count: How many trials the cases hold (read when `summary.trials` has no `run`).
            path: Where the results JSON is.
        """
        summary = head.get("summary") or {}
        trials = summary.get("trials") or {}
        p50 = percentile(latencies, 50)
        return cls(
            run_id=head["run_id"],
            model=head.get("model"),
            target=head.get("target") or "",
            status=head.get("status") or "complete",
            started_at=head.get("started_at") or "",
            finished_at=head.get("finished_at"),
            cases=len(statuses),
            passed=statuses.count("passed"),
            failed=statuses.count("failed"),
            errored=statuses.count("error"),
            pass_rate=summary.get("pass_rate"),
            trials_run=trials.get("run", trial_count),
            trials_passed=trials.get("passed", 0),
            trials_failed=trials.get("failed", 0),
            trials_errored=trials.get("errored", 0),
            avg_score=round(sum(scores) / len(scores), 6) if scores else None,
            p50_latency_ms=None if p50 is None else round(p50, 3),
            tokens=(summary.get("tokens") or {}).get("total", 0),
            cost_usd=known_cost(summary.get("costs")),
            rescored_from=head.get("rescored_from"),
            run_group=head.get("group"),
            path=None if path is None else str(path),
        )


CaseParts = tuple[dict[str, Any], Sequence[TrialFigures]]
"""A case of a results JSON as its fields (the trials may be among them, unread) and its trials' figures."""


def trial_figures(trial: dict[str, Any]) -> TrialFigures:
    """`TrialFigures` of a trial's JSON form (what `TrialResult.figures` gives of the trial it was written from)."""
    return (
        trial["trial"],
        trial["status"],
        trial.get("score"),
        trial.get("duration_ms"),
        (trial.get("tokens") or {}).get("total", 0),
        trial.get("costs"),
        turn_latencies(trial),
    )


def case_parts(data: dict[str, Any]) -> list[CaseParts]:
    """The cases of a results JSON as `CaseParts`."""
    return [(case, [trial_figures(t) for t in case.get("trials") or []]) for case in data["cases"]]


@dataclass(frozen=True, slots=True)
class StoredCase:
    """A case of a run with its trials' outcomes: what `proctor compare` pairs."""

    key: str
    """`<file>::<name>`."""
    name: str
    suite: str
    tags: list[str]
    status: str
    """The case's status in the run."""
    trials: dict[int, tuple[str, float | None]]
    """`trial number -> (status, score)`."""
    checks: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    """`check label -> (trials it failed in, trials it was scored in)`, from a results file (the history
    index does not keep checks); the label is the check's name with its turn."""

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> list[StoredCase]:
        """The cases of a run's results JSON."""
        return [
            cls(
                case_identity(case),
                case["name"],
                case.get("suite") or "",
                list(case.get("tags") or []),
                case.get("status") or "error",
                {t["trial"]: (t["status"], t.get("score")) for t in case.get("trials") or []},
                check_outcomes(case),
            )
            for case in data["cases"]
        ]


def check_outcomes(case: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """A case's checks: label (name, and turn when on one) -> (trials failed in, trials scored in)."""
    counts: dict[str, list[int]] = {}
    for trial in case.get("trials") or []:
        for check in trial.get("checks") or []:
            turn = check.get("turn")
            label = check["name"] if turn is None else f"turn {turn + 1} {check['name']}"
            entry = counts.setdefault(label, [0, 0])
            if check["status"] in ("passed", "failed"):
                entry[1] += 1
                entry[0] += check["status"] == "failed"
    return {label: (failed, scored) for label, (failed, scored) in counts.items()}


@dataclass(slots=True)
class ReportRun:
    """A run as a report column."""

    label: str
    """The column title: the model, made unique with the run id when two runs share a model."""
    data: dict[str, Any]
    """The run's results JSON."""
    summary: RunSummary
    """Its figures."""
    color: str = "#4e79a7"
    """Its colour in charts."""

    @property
    def trial_interval(self) -> tuple[float, float] | None:
        """Wilson 95 % interval of the trial pass rate (errored trials left out)."""
        s = self.summary
        return wilson_interval(s.trials_passed, s.trials_passed + s.trials_failed)

    @property
    def case_interval(self) -> tuple[float, float] | None:
        """Wilson 95 % interval of the case pass rate, skipped cases left out (`case_pass_interval`)."""
        return case_pass_interval(self.data["cases"])

    def trials(self) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
        """Every `(case, trial)` of the run, in case order."""
        for case in self.data["cases"]:
            for trial in case.get("trials") or []:
                yield case, trial

    def latency_by_turn(self) -> list[list[float]]:
        """Reply latencies grouped by turn number (index 0 = first reply), over every trial."""
        by_turn: list[list[float]] = []
        for _, trial in self.trials():
            for index, latency in enumerate(turn_latencies(trial)):
                while len(by_turn) <= index:
                    by_turn.append([])
                by_turn[index].append(latency)
        return by_turn

    def scores(self) -> list[float]:
        """Every scored trial's score."""
        return [t["score"] for _, t in self.trials() if t.get("score") is not None and t.get("status") != "error"]


@dataclass(slots=True)
class ReportCase:
    """A row of the report: one case across runs."""

    name: str
    suite: str
    tags: list[str]
    description: str | None
    by_run: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The case's JSON in each run, by run label (absent when the run did not have the case)."""

    @property
    def anchor(self) -> str:
        """An HTML id for the case."""
        return "case-" + "".join(ch if ch.isalnum() else "-" for ch in f"{self.suite}-{self.name}").lower()


PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")


@dataclass(slots=True)
class Report:
    """Several runs side by side (one column each), with the cases as rows."""

    runs: list[ReportRun]
    cases: list[ReportCase]
    generated_at: str
    """ISO 8601 UTC."""
    notes: list[tuple[str, str]] = field(default_factory=list)
    """Sections a caller adds after the overview, as `(title, preformatted text)` (e.g. a matrix's paired
    comparison)."""

    @property
    def agents(self) -> str:
        """The targets evaluated (usually one)."""
        seen = list(dict.fromkeys(r.summary.target for r in self.runs if r.summary.target))
        return ", ".join(seen) or "-"

    @property
    def tags(self) -> list[str]:
        """Every tag of every case, sorted."""
        return sorted({tag for case in self.cases for tag in case.tags})


def build_report(
    runs: Sequence[tuple[dict[str, Any], Path | str | None]], generated_at: str | None = None, *, k: int | None = None
) -> Report:
    """Lay runs side by side.

    Args:
        runs: `(results JSON, path)` per run, in column order; a run given twice is shown once.
        generated_at: The report's time stamp (default now, UTC).
        k: The k of pass@k and pass^k; default the k each run was written with (else each case's
            number of scored trials). The statistics are recomputed from the trials either way.
    """
    distinct: dict[str, tuple[dict[str, Any], Path | str | None]] = {}
    for data, path in runs:
        own = (data.get("summary") or {}).get("k")
        distinct.setdefault(data["run_id"], (with_k(data, own if k is None else k), path))
    runs = list(distinct.values())
    summaries = [RunSummary.from_data(data, path) for data, path in runs]
    counts: dict[str, int] = {}
    for summary in summaries:
        counts[summary.label] = counts.get(summary.label, 0) + 1
    columns: list[ReportRun] = []
    for index, ((data, _), summary) in enumerate(zip(runs, summaries, strict=True)):
        label = summary.label if counts[summary.label] == 1 else f"{summary.label} ({summary.run_id})"
        columns.append(ReportRun(label, data, summary, PALETTE[index % len(PALETTE)]))
    rows: dict[tuple[str, str], ReportCase] = {}
    for column in columns:
        for case in column.data["cases"]:
            key = (case.get("suite", ""), case["name"])
            row = rows.get(key)
            if row is None:
                row = rows[key] = ReportCase(
                    case["name"], case.get("suite", ""), list(case.get("tags") or []), case.get("description")
                )
            row.by_run[column.label] = case
    stamp = generated_at or datetime.now(UTC).isoformat(timespec="seconds")
    return Report(columns, list(rows.values()), stamp)
