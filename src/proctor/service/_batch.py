"""Offline runs of the service pipeline: score a JSON Lines file of events (`proctor score`).

Each line is one event, the same JSON the HTTP API and the stream take. Every line is validated before
any judge is called, so a bad file fails fast (or, with `continue_on_error`, its bad lines are listed
and the rest is scored).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from proctor.errors import ConfigError
from proctor.run.execute import execute
from proctor.service._models import EvaluationRequest, EvaluationResult
from proctor.service._pipeline import Pipeline, ServiceSettings, build_pipeline

__all__ = ["EventLine", "LineError", "ScoreSummary", "evaluate_all", "looks_like_events", "read_events", "score_events"]


@dataclass(frozen=True, slots=True)
class LineError:
    """A line that is not a valid event."""

    line: int
    """1-based line number."""
    message: str
    """What is wrong with it."""

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True, slots=True)
class EventLine:
    """A valid event and where it came from."""

    line: int
    """1-based line number."""
    event: EvaluationRequest
    """The event."""
    extra: dict[str, Any]
    """The line's other top-level fields (e.g. a human `label` for calibration)."""


@dataclass(slots=True)
class ScoreSummary:
    """What `score_events` did."""

    path: Path
    """The events file."""
    events: int = 0
    """Valid events found."""
    invalid: list[LineError] = field(default_factory=list)
    """Lines that are not valid events (scored only with `continue_on_error`, and then skipped)."""
    verdicts: dict[str, int] = field(default_factory=dict)
    """Results by verdict (`pass`, `review`, `fail`, `error`); with `dry_run`: `fail` for early exits and
    `needs-judges` for the rest."""
    results: list[EvaluationResult] = field(default_factory=list)
    """Every result, in file order (empty with `dry_run`)."""
    output: Path | None = None
    """Where the results were written as JSON Lines, if anywhere."""
    dry_run: bool = False
    """Whether only the prechecks ran (no judge call)."""

    @property
    def exit_code(self) -> int:
        """The exit code for a command.

        0: every event `pass` or `review` (with `dry_run`: every line valid); 3: events reached the judges
        and none got a verdict (all `error`: no judge configured or reachable); 1: otherwise (a `fail`,
        an `error`, or a skipped invalid line).
        """
        if self.dry_run:
            return 1 if self.invalid else 0
        judged = [r for r in self.results if any(n.endswith("-judge") for n in _stage_names(r))]
        if judged and all(r.verdict == "error" for r in judged):
            return 3
        if self.invalid or self.verdicts.get("fail") or self.verdicts.get("error"):
            return 1
        return 0

    @property
    def judge_calls_needed(self) -> int:
        """With `dry_run`: the events that would reach the judges."""
        return self.verdicts.get("needs-judges", 0)

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON (without the results)."""
        return {
            "path": str(self.path),
            "events": self.events,
            "invalid": [{"line": e.line, "message": e.message} for e in self.invalid],
            "verdicts": dict(sorted(self.verdicts.items())),
            "output": None if self.output is None else str(self.output),
            "dry_run": self.dry_run,
            "exit_code": self.exit_code,
        }


def _stage_names(result: EvaluationResult) -> list[str]:
    return [stage.name for stage in result.stages] + [error.name for error in result.errors]


def _invalid(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "not a valid event: " + "; ".join(problems)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    yield number, line
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_events(path: Path, extra_fields: tuple[str, ...] = ()) -> tuple[list[EventLine], list[LineError]]:
    """Read and validate every event of a JSON Lines file.

    Args:
        path: The file.
        extra_fields: Top-level fields to keep beside the event (e.g. `label`).

    Returns:
        The valid events and the invalid lines.
    """
    events: list[EventLine] = []
    errors: list[LineError] = []
    for number, line in _lines(path):
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(LineError(number, f"not JSON: {exc.msg} at column {exc.colno}"))
            continue
        if not isinstance(data, dict):
            errors.append(LineError(number, f"expected a JSON object, found {type(data).__name__}"))
            continue
        try:
            event = EvaluationRequest.model_validate(data)
        except ValidationError as exc:
            errors.append(LineError(number, _invalid(exc)))
            continue
        events.append(EventLine(number, event, {k: data[k] for k in extra_fields if k in data}))
    return events, errors


def looks_like_events(path: Path) -> bool:
    """Whether `path` is a JSON Lines file of service events.

    True when its first line is an object with `event_id` and an `interaction` object: for a command
    that accepts several kinds of files (`proctor score`) to dispatch on.
    """
    for _, line in _lines(path):
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            return False
        return isinstance(data, dict) and "event_id" in data and isinstance(data.get("interaction"), dict)
    return False


async def evaluate_all(
    pipeline: Pipeline,
    events: list[EvaluationRequest],
    *,
    workers: int,
    progress: Callable[[EvaluationResult], None] | None = None,
) -> list[EvaluationResult]:
    """Evaluate events with at most `workers` at once; results in input order."""
    results: list[EvaluationResult | None] = [None] * len(events)

    async def one(index: int) -> None:
        result = await pipeline.evaluate(events[index])
        results[index] = result
        if progress is not None:
            progress(result)

    await execute(range(len(events)), one, concurrency=workers)
    return [result for result in results if result is not None]


def score_events(
    path: Path | str,
    *,
    workers: int = 8,
    continue_on_error: bool = False,
    dry_run: bool = False,
    output: Path | str | None = None,
    settings: ServiceSettings | None = None,
    progress: Callable[[EvaluationResult], None] | None = None,
) -> ScoreSummary:
    """Score a JSON Lines file of Go-seed events with the service pipeline (what `proctor score` runs).

    Args:
        path: The events, one JSON object per line.
        workers: Events evaluated at once.
        continue_on_error: Skip invalid lines (listed in the summary) instead of failing.
        dry_run: Validate and run the prechecks only: count early exits and the events that would need
            the judges; no model is called and nothing is written.
        output: Write one result per line here (JSON Lines, in file order).
        settings: Scoring rules and the judge model (default: no judge, so events that pass the
            prechecks get verdict `error`).
        progress: Called with each result as it is ready.

    Returns:
        The summary, with every result.

    Raises:
        ConfigError: Unreadable file, invalid lines without `continue_on_error`, or bad settings.
    """
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    path = Path(path)
    settings = settings or ServiceSettings()
    events, invalid = read_events(path)
    if invalid and not continue_on_error:
        shown = "\n".join(f"  {error}" for error in invalid[:10])
        more = f"\n  ... and {len(invalid) - 10} more" if len(invalid) > 10 else ""
        raise ConfigError(
            f"{path}: {len(invalid)} invalid line(s) (use --continue-on-error to skip them):\n{shown}{more}"
        )
    summary = ScoreSummary(path, events=len(events), invalid=invalid, dry_run=dry_run)
    if dry_run:
        prechecks = Pipeline(settings.pipeline)
        counts: Counter[str] = Counter()
        for item in events:
            first = prechecks.stage_one(item.event)
            counts[first.verdict if isinstance(first, EvaluationResult) else "needs-judges"] += 1
        summary.verdicts = dict(counts)
        return summary
    pipeline = build_pipeline(settings)

    async def main() -> list[EvaluationResult]:
        try:
            return await evaluate_all(pipeline, [item.event for item in events], workers=workers, progress=progress)
        finally:
            await pipeline.aclose()

    summary.results = anyio.run(main)
    summary.verdicts = dict(Counter(result.verdict for result in summary.results))
    if output is not None:
        summary.output = Path(output)
        with summary.output.open("w", encoding="utf-8") as handle:
            for result in summary.results:
                handle.write(result.model_dump_json() + "\n")
    return summary
