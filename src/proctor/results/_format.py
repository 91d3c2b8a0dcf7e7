"""The results JSON format, as typed dicts pydantic validates (`load_run`) and publishes (JSON Schema).

A run is written from its typed objects (`RunResult`, `CaseResult`, `TrialResult` and the aggregates of
`_aggregate`); these models describe the file those objects produce, version by version, so a reader
(`--resume`, `rescore`, `report`, `compare`, another tool) gets a located error for a file that is not
one, instead of a `KeyError` deep inside a report. Unknown fields are allowed (a newer Proctor of the same
format version may add some); a field of the wrong type or a missing required one is an error.
Typed dicts, not `BaseModel`s: validating one costs a quarter of a model's (~20 against ~80 µs a trial),
and a reader keeps the plain JSON it already has.
"""

# No `from __future__ import annotations`: each TypedDict would compile its annotation strings (ForwardRefs) at import.

import functools
from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from proctor.errors import ConfigError

__all__ = [
    "ResultsRecord",
    "TrialRecord",
    "results_json_schema",
    "validate_results",
    "validate_trial",
]

Status = Literal["passed", "failed", "error", "inconclusive", "skipped"]
CaseStatus = Literal["passed", "failed", "error", "inconclusive", "skipped", "incomplete"]
"""A trial's status, or `incomplete`: the run stopped before all the case's planned trials ran."""
CheckStatus = Literal["passed", "failed", "error", "skipped"]


class _Record(TypedDict):
    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]


class TokensRecord(_Record):
    """Token counts."""

    prompt: int
    completion: int
    total: int


class RoleCostsRecord(_Record):
    """What one role (agent, judge, simulator) used."""

    calls: int
    cached_calls: NotRequired[int]
    prompt: int
    completion: int
    cost_usd: float | None


class ToolCallRecord(_Record):
    """A tool call the agent made."""

    name: str
    arguments: dict[str, Any]
    id: NotRequired[str | None]
    result: NotRequired[Any]
    source: NotRequired[Literal["agent", "tools", "agent+tools"] | None]
    latency_ms: NotRequired[float | None]
    error: NotRequired[bool]


class MessageRecord(_Record):
    """A message of the transcript."""

    role: str
    content: str
    latency_ms: NotRequired[float | None]
    tool_calls: NotRequired[list[ToolCallRecord]]


class CheckRecord(_Record):
    """A check's result."""

    name: str
    type: str
    status: CheckStatus
    score: float | None
    weight: NotRequired[float]
    reason: str
    turn: int | None
    details: NotRequired[dict[str, Any] | None]


class TrialRecord(_Record):
    """One trial of a case."""

    trial: Annotated[int, Field(ge=1)]
    status: Status
    passed: bool
    score: float | None
    error: str | None
    error_type: NotRequired[str | None]
    warnings: list[str]
    retries: NotRequired[int]
    duration_ms: float
    tokens: TokensRecord
    costs: dict[str, RoleCostsRecord]
    trace_ids: NotRequired[list[str]]
    trace_id: NotRequired[str | None]
    trace_url: NotRequired[str | None]
    turns: list[MessageRecord]
    checks: list[CheckRecord]
    reason: NotRequired[str | None]
    simulation: NotRequired[dict[str, Any] | None]


class FailingCheckRecord(_Record):
    """A check that failed in at least one trial."""

    name: str
    type: str
    turn: int | None
    failed: int
    ran: int
    reason: str | None


class LatencyRecord(_Record):
    """Reply latency percentiles, in ms."""

    p50: float | None
    p95: float | None


class CaseRecord(_Record):
    """A case with its aggregates and trials."""

    name: str
    suite: str
    file: str
    description: NotRequired[str | None]
    tags: list[str]
    status: CaseStatus
    reason: NotRequired[str | None]
    passed: bool
    pass_rate: float | None
    k: NotRequired[int | None]
    pass_at_k: NotRequired[float | None]
    pass_hat_k: NotRequired[float | None]
    pass_rate_ci: NotRequired[tuple[float, float] | None]
    pass_k: NotRequired[float | None]
    min_pass_rate: float
    avg_score: float | None
    trial_counts: dict[str, int]
    planned_trials: NotRequired[Annotated[int, Field(ge=1)]]  # an incomplete case's; absent: every one ran
    latency_ms: LatencyRecord
    tokens: TokensRecord
    costs: dict[str, RoleCostsRecord]
    retries: int
    failing_checks: NotRequired[list[FailingCheckRecord]]
    trials: list[TrialRecord]


class TrialCountsRecord(_Record):
    """A run's trials by status."""

    planned: int
    run: int
    passed: int
    failed: int
    errored: int
    inconclusive: NotRequired[int]
    skipped: NotRequired[int]


class SummaryRecord(_Record):
    """A run's summary."""

    cases: int
    passed: int
    failed: int
    errored: int
    inconclusive: NotRequired[int]
    skipped: NotRequired[int]
    incomplete: NotRequired[int]
    pass_rate: float | None
    k: NotRequired[int | None]
    pass_at_k: NotRequired[float | None]
    pass_hat_k: NotRequired[float | None]
    pass_rate_ci: NotRequired[tuple[float, float] | None]
    trials: TrialCountsRecord
    trial_pass_rate_ci: NotRequired[tuple[float, float] | None]
    checks: dict[str, int]
    tokens: TokensRecord
    retries: int
    costs: dict[str, RoleCostsRecord]


class ResultsRecord(_Record):
    """A results file (`.results/<run id>.json`, `--output x.json`), format version 1."""

    version: Literal[1]
    run_id: str
    status: Literal["complete", "interrupted", "aborted"]
    reason: NotRequired[str | None]
    started_at: str
    finished_at: str | None
    model: str | None
    target: str
    seed: NotRequired[int | None]
    rescored_from: NotRequired[str | None]
    group: NotRequired[str | None]
    summary: SummaryRecord
    cases: list[CaseRecord]


@functools.cache
def _results_adapter() -> TypeAdapter[ResultsRecord]:
    """Built on first use (~40 ms): a run that only writes results never validates one."""
    return TypeAdapter(ResultsRecord)


@functools.cache
def _trial_adapter() -> TypeAdapter[TrialRecord]:
    """Built on first use, as `_results_adapter`."""
    return TypeAdapter(TrialRecord)


def validate_results(data: Any, source: str) -> None:
    """Check that `data` is a results file of a version this Proctor reads.

    Raises:
        ConfigError: Located at the first few problems: `source: cases[3].trials[0].status: expected one
            of ..., found 'pased'`.
    """
    try:
        _results_adapter().validate_python(data)
    except ValidationError as exc:
        problems = [_located(error) for error in exc.errors()[:5]]
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise ConfigError(f"{source} is not a valid Proctor results file: " + "; ".join(problems) + more) from None


def validate_trial(data: Any, source: str) -> None:
    """Check one trial's JSON form (a journal line).

    Raises:
        ConfigError: Located as `validate_results` does.
    """
    try:
        _trial_adapter().validate_python(data)
    except ValidationError as exc:
        problems = [_located(error) for error in exc.errors()[:5]]
        raise ConfigError(f"{source} is not a valid trial record: " + "; ".join(problems)) from None


def _located(error: Any) -> str:
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]).lstrip(".")
    found = error.get("input")
    shown = repr(found) if not isinstance(found, dict | list) else type(found).__name__
    return f"{where or '(top level)'}: {error['msg'].lower()}, found {shown[:80]}"


def results_json_schema() -> dict[str, Any]:
    """The JSON Schema of the results format (for editors and other tools)."""
    return _results_adapter().json_schema()
