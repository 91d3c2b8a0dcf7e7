"""Score a whole data file: stream its records, score them with bounded concurrency, write rows as they finish.

```python
summary = await score_file("runs.csv", judge, ScoreOptions(scorers=["context_relevancy"], output=Path("out.jsonl")))
```

One reader feeds a bounded queue; `concurrency` workers take records from it, run the chosen scorers
(`proctor.recorded.AGENT_SCORERS`, the same code as suite checks) and append each scored row to the output
as it finishes. At most `2 x concurrency` records are held at once, whatever the file's size. With
`resume`, rows already scored without error in the output are kept and not scored again (the input must
be the same file); a row whose judged scorer was skipped for want of a judge model is scored again. Rows
come out in the order they finish; `row` is the record's position in the input.

Nothing is lost to a mistake: the output may not be the input, resuming needs an output that is a scores
file (`read_scored`), a run without `resume` replaces only a scores file (`check_overwrite`), and a file
with no record at all is an error (`DatasetError`), not "0 rows scored".
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Generator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from proctor.checks._agent_scorers import AGENT_SCORERS, missing_fields, score_agent_data
from proctor.checks._judging import Judge
from proctor.checks._result import CheckResult
from proctor.recorded._dataset import OnError
from proctor.recorded._output import ID_FIELDS, ScoreWriter, check_overwrite, read_scored, row_complete, same_file
from proctor.recorded._readers import DatasetError, Record, RecordReader, RowError
from proctor.run.execute import execute
from proctor.scoring import RunningStat

__all__ = [
    "Aggregates",
    "ScoreObserver",
    "ScoreOptions",
    "ScoreSummary",
    "plan_file",
    "resolve_scorers",
    "score_file",
]

GROUPS = {"agent": "agent_name", "task": "task_id", "user": "user_id"}
"""Aggregate groups: name -> the row field that keys them."""
_NO_JUDGE = "no judge model"
"""How the reason of a judged scorer skipped for want of a judge model begins (`checks._judging.no_judge`)."""


@dataclass(frozen=True, slots=True)
class ScoreOptions:
    """How a file is scored."""

    scorers: Sequence[str] | None = None
    """Scorer names (`AGENT_SCORERS`; `-` may stand for `_`); `None`: every scorer the data has fields for."""
    concurrency: int = 16
    """Records scored at once."""
    output: Path | None = None
    """Where scored rows go (`.csv`, `.json`, `.jsonl`); `None` writes none (summary only)."""
    resume: bool = False
    """Keep the rows the output already holds without error, and score only the rest (a row with a judged
    scorer skipped for want of a judge model is among the rest)."""
    columns: Mapping[str, str] = field(default_factory=dict)
    """Field -> column (or key) for fields not stored under their own name."""
    input_format: str | None = None
    """`csv`, `jsonl` or `json`; default from the name."""
    bad_rows: OnError = "raise"
    """A record that cannot be read: `raise` (stop, naming its line) or `skip` (written as an error row
    and reported)."""
    threshold: float | None = None
    """The normalised score at which a scorer passes (default 0.5)."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise DatasetError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.bad_rows not in ("skip", "raise"):
            raise DatasetError(f"bad_rows must be 'skip' or 'raise', not {self.bad_rows!r}")
        if self.resume and self.output is None:
            raise DatasetError("resuming needs the output file of the interrupted run")


class Aggregates:
    """Per-scorer statistics, overall and by agent, task and user."""

    def __init__(self, scorers: Sequence[str]) -> None:
        self.scorers = list(scorers)
        self.overall = {name: RunningStat() for name in self.scorers}
        self.groups: dict[str, dict[str, dict[str, RunningStat]]] = {group: {} for group in GROUPS}
        self.rows = 0
        self.bad_rows = 0

    def add(self, row: Mapping[str, Any]) -> None:
        """Count one scored row."""
        self.rows += 1
        if row.get("error"):
            self.bad_rows += 1
            return
        scores = row.get("scores") or {}
        targets = [self.overall]
        for group, key in GROUPS.items():
            value = row.get(key)
            if value is not None:
                stats = self.groups[group].get(value)
                if stats is None:
                    stats = self.groups[group][value] = {name: RunningStat() for name in self.scorers}
                targets.append(stats)
        for name in self.scorers:
            entry = scores.get(name)
            if entry is not None:
                for stats in targets:
                    stats[name].add(entry)

    @property
    def errors(self) -> int:
        """Scorer results that are errors, over every scorer."""
        return sum(stat.errors for stat in self.overall.values())

    @property
    def nothing_scored(self) -> bool:
        """Whether rows were read and not one result has a score.

        Every result was skipped (no judge for the judged scorers, the agent not exited, a scorer's input
        missing) or is an error.
        """
        return self.rows > self.bad_rows and not any(stat.count for stat in self.overall.values())

    def to_dict(self) -> dict[str, Any]:
        """The summary's aggregates."""
        return {
            "rows": self.rows,
            "bad_rows": self.bad_rows,
            "scorers": {name: stat.to_dict() for name, stat in self.overall.items()},
            **{
                f"by_{group}": {
                    value: {name: stat.to_dict() for name, stat in stats.items()} for value, stats in members.items()
                }
                for group, members in self.groups.items()
            },
        }


@dataclass(slots=True)
class ScoreSummary:
    """What scoring a file produced."""

    path: Path
    """The input."""
    output: Path | None
    """Where the scored rows are."""
    scorers: list[str]
    """The scorers run."""
    aggregates: Aggregates
    """Statistics over every row (kept ones included)."""
    kept: int = 0
    """Rows kept from the resumed output."""
    scored: int = 0
    """Rows of this run that some scorer gave a score (`passed` or `failed`); a row whose every result is
    skipped or an error, or that could not be read, is read but not scored."""
    bad_rows: list[RowError] = field(default_factory=list)
    """Records that could not be read (the first 100)."""
    duration_s: float = 0.0
    """Wall time of this run."""
    judged_errors: int = 0
    """Judged results of this run that are errors."""
    judged: int = 0
    """Judged results of this run (any status but skipped for want of a judge)."""

    @property
    def read(self) -> int:
        """Rows handled in this run, scored or not (unreadable ones included)."""
        return self.aggregates.rows - self.kept

    def to_dict(self) -> dict[str, Any]:
        """The JSON summary (`proctor score --summary`)."""
        return {
            "input": str(self.path),
            "output": None if self.output is None else str(self.output),
            "scorers": self.scorers,
            "kept": self.kept,
            "scored": self.scored,
            "duration_s": round(self.duration_s, 3),
            "bad_row_examples": [str(error) for error in self.bad_rows[:10]],
            **self.aggregates.to_dict(),
        }


class ScoreObserver(Protocol):
    """Receives progress (the CLI draws its progress bar from these)."""

    def started(self, reader: RecordReader, scorers: list[str], kept: int) -> None:
        """Scoring starts; `reader.fraction` tells how far through the input it is."""
        ...

    def row_finished(self, row: dict[str, Any]) -> None:
        """A row was scored and written."""
        ...


def resolve_scorers(names: Sequence[str] | None, present: set[str] | None = None) -> list[str]:
    """Validate scorer names, or choose them: every scorer whose required fields the data has.

    Raises:
        DatasetError: An unknown name (the message suggests the closest one).
    """
    if names is None:
        chosen = [
            name
            for name, scorer in AGENT_SCORERS.items()
            if present is None or all(field in present for field in scorer.required)
        ]
        return chosen or list(AGENT_SCORERS)
    out = []
    for raw in names:
        name = raw.strip().replace("-", "_")
        if name not in AGENT_SCORERS:
            close = difflib.get_close_matches(name, list(AGENT_SCORERS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise DatasetError(f"unknown scorer {raw!r}{hint}; scorers: {', '.join(AGENT_SCORERS)}")
        if name not in out:
            out.append(name)
    return out


def _row(record: Record, results: Mapping[str, CheckResult]) -> dict[str, Any]:
    data = record.data
    row: dict[str, Any] = {"row": record.index, "line": record.line}
    for key in ID_FIELDS:
        row[key] = getattr(data, key) if data is not None else None
    row["error"] = record.error
    row["scores"] = {
        name: {
            "status": result.status,
            "score": result.score,
            "raw_score": result.details.get("raw_score", result.score),
            "reason": result.reason,
            "details": result.details,
        }
        for name, result in results.items()
    }
    return row


def _peek(records: Generator[Record, None, None]) -> tuple[Record | None, Generator[Record, None, None]]:
    """The first record, and a generator of every record (closing it closes the file)."""
    first = next(records, None)

    def chained() -> Generator[Record, None, None]:
        try:
            if first is not None:
                yield first
            yield from records
        finally:
            records.close()

    return first, chained()


def _previous(options: ScoreOptions, requested: list[str] | None) -> tuple[list[str] | None, list[dict[str, Any]]]:
    """The scorers and the complete rows of the output being resumed (none when it does not exist)."""
    assert options.output is not None
    if not options.output.exists():
        return requested, []
    kept: list[dict[str, Any]] = []
    try:
        scorers, rows = read_scored(options.output)
        for row in rows:
            if scorers is None:
                scorers = list((row.get("scores") or {}).keys()) if not row.get("error") else None
            if scorers is not None and row_complete(row, scorers) and not _awaits_judge(row):
                kept.append(row)
    except DatasetError as exc:
        raise DatasetError(
            f"cannot resume into {options.output}: it is not a scores file written by proctor score, and "
            f"resuming would replace it ({exc}). Write to another --output, or delete the file to start over"
        ) from None
    if requested is not None and scorers is not None and set(requested) != set(scorers):
        raise DatasetError(
            f"{options.output} was scored with {', '.join(scorers)}; resume with the same --scorers "
            f"(asked for {', '.join(requested)}), or write to another --output"
        )
    return scorers or requested, kept


def _unjudged(result: CheckResult) -> bool:
    """Whether a result is a judged scorer's, skipped for want of a judge model."""
    return result.status == "skipped" and result.reason.startswith(_NO_JUDGE)


def _awaits_judge(row: Mapping[str, Any]) -> bool:
    """Whether a written row has a judged scorer skipped for want of a judge.

    Resuming scores such a row again (with the judge the resumed run may now have), rather than keeping it
    as if it had been scored.
    """
    return any(
        isinstance(entry, Mapping)
        and entry.get("status") == "skipped"
        and str(entry.get("reason") or "").startswith(_NO_JUDGE)
        for entry in (row.get("scores") or {}).values()
    )


async def score_file(
    path: str | Path,
    judge: Judge | None,
    options: ScoreOptions,
    observer: ScoreObserver | None = None,
) -> ScoreSummary:
    """Score every record of a data file and write the scored rows as they finish.

    Args:
        path: A CSV, JSON Lines or JSON array file of `AgentData` records.
        judge: The judge; `None` skips the judged scorers with a hint.
        options: Scorers, concurrency, output, resume, column mapping, bad-row policy.
        observer: Progress callbacks.

    Returns:
        The summary with aggregates over every row of the output.

    Raises:
        DatasetError: The input cannot be read, a mapping or scorer name is wrong, or a bad record
            with `bad_rows="raise"`.
    """
    started = time.perf_counter()
    reader = RecordReader(path, options.input_format, options.columns)
    requested = None if options.scorers is None else resolve_scorers(options.scorers)
    if options.output is not None and same_file(reader.path, options.output):
        raise DatasetError(
            f"--output {options.output} is the input file {reader.path}: scoring would overwrite it; "
            "choose another --output"
        )
    kept_rows: list[dict[str, Any]] = []
    if options.resume:
        requested, kept_rows = _previous(options, requested)
    elif options.output is not None:
        check_overwrite(options.output)
    first, records = _first_record(reader)
    present = set(first.data.model_fields_set) if first.data is not None else None
    scorers = requested if requested is not None else resolve_scorers(None, present)
    aggregates = Aggregates(scorers)
    done = set()
    for row in kept_rows:
        aggregates.add(row)
        done.add(int(row["row"]))
    summary = ScoreSummary(reader.path, options.output, scorers, aggregates, kept=len(kept_rows))
    writer = _start_writer(options.output, scorers, kept_rows, records)
    del kept_rows
    if observer is not None:
        observer.started(reader, scorers, summary.kept)

    def pending() -> Generator[Record, None, None]:
        for record in records:
            if record.index in done:
                continue
            if record.data is None:
                error = RowError(str(reader.path), record.line, record.error or "unreadable record")
                if options.bad_rows == "raise":
                    raise DatasetError(f"{error} (skip bad records with --continue-on-error)")
                if len(summary.bad_rows) < 100:
                    summary.bad_rows.append(error)
            yield record

    async def work(record: Record) -> None:
        results = await _score_row(record, scorers, judge, options)
        row = _row(record, results)
        scored = False
        for name, result in results.items():
            scored = scored or result.status in ("passed", "failed")
            if AGENT_SCORERS[name].judged and not _unjudged(result):
                summary.judged += 1
                summary.judged_errors += result.status == "error" and "missing_fields" not in result.details
        if writer is not None:
            try:
                writer.write(row)
            except OSError as exc:
                raise DatasetError(
                    f"--output {writer.path}: could not write a scored row ({exc}); the rows written before "
                    "are kept: free the space or fix the file, then rerun with --resume"
                ) from None
        aggregates.add(row)
        summary.scored += scored
        if observer is not None:
            observer.row_finished(row)

    try:
        await execute(pending(), work, concurrency=options.concurrency)
    except BaseException:
        _close(writer, quietly=True)  # what went wrong is the error to raise, not a failure to close
        raise
    finally:
        records.close()
        summary.duration_s = time.perf_counter() - started
    _close(writer)
    return summary


def _start_writer(
    output: Path | None, scorers: list[str], kept: list[dict[str, Any]], records: Generator[Record, None, None]
) -> ScoreWriter | None:
    """The output's writer, begun with the rows kept from the resumed run; `None` without an output."""
    if output is None:
        return None
    writer = ScoreWriter(output, scorers)
    try:
        writer.start(kept)
    except OSError as exc:
        records.close()
        raise DatasetError(f"--output {output}: cannot write it: {exc}") from None
    return writer


def _close(writer: ScoreWriter | None, *, quietly: bool = False) -> None:
    """Close the output; a failure (a full disk) is a `DatasetError` unless `quietly`."""
    if writer is None:
        return
    try:
        writer.close()
    except OSError as exc:
        if not quietly:
            raise DatasetError(f"--output {writer.path}: could not finish writing it: {exc}") from None


def _first_record(reader: RecordReader) -> tuple[Record, Generator[Record, None, None]]:
    """The file's first record and every record; a file with none is an error.

    Raises:
        DatasetError: The file holds no record (header only, empty, an empty array).
    """
    first, records = _peek(iter(reader))
    if first is None:
        records.close()
        raise DatasetError(f"{reader.path}: no records to score: {reader.describe_empty()}")
    return first, records


async def _score_row(
    record: Record, scorers: Sequence[str], judge: Judge | None, options: ScoreOptions
) -> dict[str, CheckResult]:
    """Every scorer's result for one record (none for an unreadable record), in scorer order."""
    results: dict[str, CheckResult] = {}
    if record.data is None:
        return results
    if len(scorers) == 1:  # `_score`'s steps awaited here: one coroutine less per row
        name = scorers[0]
        try:
            result = await score_agent_data(name, record.data, judge, name=name, threshold=options.threshold)
        except Exception as exc:  # failures are data: the row gets an error, the run goes on
            result = _could_not_score(name, exc)
        return {name: result}
    async with anyio.create_task_group() as group:
        for name in scorers:
            group.start_soon(_score_into, results, name, record, judge, options)
    return {name: results[name] for name in scorers}


def judge_calls(name: str, record: Record) -> int:
    """How many judge calls scoring `record` with scorer `name` makes (0 when it would not reach the judge)."""
    scorer, data = AGENT_SCORERS[name], record.data
    if data is None or not scorer.judged or (scorer.needs_exit and not data.agent_exit):
        return 0
    if missing_fields(scorer, data) is not None:
        return 0
    if scorer.per_call:
        return 1 if isinstance(data.tool_calls, str) else len(data.tool_calls)
    return 1


def plan_file(path: str | Path, options: ScoreOptions) -> dict[str, Any]:
    """Read a whole file without scoring it: what a run would do (`proctor score --dry-run`).

    Returns:
        `{"rows", "bad_rows", "bad_row_examples", "scorers": {name: {"rows", "judge_calls",
        "missing_fields", "not_exited"}}, "judge_calls"}`.

    Raises:
        DatasetError: As `score_file` (a bad record is fatal unless `bad_rows="skip"`).
    """
    reader = RecordReader(path, options.input_format, options.columns)
    first, records = _first_record(reader)
    present = set(first.data.model_fields_set) if first.data is not None else None
    scorers = resolve_scorers(options.scorers, present)
    plan: dict[str, Any] = {"rows": 0, "bad_rows": 0, "bad_row_examples": [], "judge_calls": 0}
    per = {name: {"rows": 0, "judge_calls": 0, "missing_fields": 0, "not_exited": 0} for name in scorers}
    with closing(records):
        for record in records:
            _plan_record(record, reader, options, plan, per)
    plan["scorers"] = per
    plan["judge_calls"] = sum(counts["judge_calls"] for counts in per.values())
    return plan


def _plan_record(
    record: Record,
    reader: RecordReader,
    options: ScoreOptions,
    plan: dict[str, Any],
    per: dict[str, dict[str, int]],
) -> None:
    """Count one record into a dry run's plan."""
    plan["rows"] += 1
    data = record.data
    if data is None:
        error = RowError(str(reader.path), record.line, record.error or "unreadable record")
        if options.bad_rows == "raise":
            raise DatasetError(f"{error} (skip bad records with --continue-on-error)")
        plan["bad_rows"] += 1
        if len(plan["bad_row_examples"]) < 10:
            plan["bad_row_examples"].append(str(error))
        return
    for name, counts in per.items():
        scorer = AGENT_SCORERS[name]
        counts["rows"] += 1
        if scorer.needs_exit and not data.agent_exit:
            counts["not_exited"] += 1
        elif missing_fields(scorer, data) is not None:
            counts["missing_fields"] += 1
        else:
            counts["judge_calls"] += judge_calls(name, record)


async def _score(name: str, record: Record, judge: Judge | None, options: ScoreOptions) -> CheckResult:
    assert record.data is not None
    try:
        return await score_agent_data(name, record.data, judge, name=name, threshold=options.threshold)
    except Exception as exc:  # failures are data: the row gets an error, the run goes on
        return _could_not_score(name, exc)


def _could_not_score(name: str, exc: Exception) -> CheckResult:
    """The `error` result of scorer `name` when scoring raised `exc`."""
    kind = AGENT_SCORERS[name].check_type
    return CheckResult(name, kind, "error", None, reason=f"could not score: {type(exc).__name__}: {exc}")


async def _score_into(
    results: dict[str, CheckResult], name: str, record: Record, judge: Judge | None, options: ScoreOptions
) -> None:
    results[name] = await _score(name, record, judge, options)
