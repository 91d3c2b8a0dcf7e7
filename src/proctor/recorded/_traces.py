"""Score conversations read from traces with a suite's checks (`proctor score TRACES --suite SUITE`).

The check and score stages of a run, on interactions that already happened.

Each conversation is matched to a case: by the case its spans name (`proctor.case`, or the mapping's
`case` attributes), else by its first user message (equal to a case's first turn), else the one case
`case` names (or the suite's only case). Each match is one trial of that case; its checks run through
`proctor.checks.check_transcript` and are scored by `proctor.scoring.score_trial`, as in `proctor run`
and `proctor rescore`, with the executor every batch uses (`proctor.run.execute`). Checks that need the
live agent (its state) are skipped with a reason. The outcome is a run (results JSON, history) whose
trials carry their trace ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from proctor.checks import PhaseContext, check_transcript
from proctor.errors import ConfigError
from proctor.results import CaseResult, RunResult, TrialResult, default_history_path, index_run, write_json
from proctor.run.execute import execute
from proctor.run.options import RunOptions
from proctor.run.plan import needs_judge, unique_run_id
from proctor.run.record import RunOutcome
from proctor.run.services import ModelServices
from proctor.scoring import score_trial
from proctor.suite import Case, Suite
from proctor.traces import TraceConversation, TraceMapping, conversations, read_spans

if TYPE_CHECKING:
    from proctor.checks._judging import Judge

__all__ = ["TraceScore", "match_cases", "score_traces", "score_traces_sync"]


@dataclass(slots=True)
class TraceScore:
    """What scoring traces produced: the run, and the conversations no case matched."""

    outcome: RunOutcome
    """The run made of the matched conversations."""
    unmatched: list[str] = field(default_factory=list)
    """One line per conversation left out: where it is and why."""
    conversations: int = 0
    """Conversations found in the traces."""


def match_cases(
    found: Sequence[TraceConversation], cases: Sequence[Case], only: str | None = None
) -> tuple[list[tuple[Case, TraceConversation]], list[str]]:
    """Pair each conversation with its case (see the module docstring); the rest, each with why.

    Raises:
        ConfigError: `only` names no case.
    """
    by_name = {case.name: case for case in cases}
    if only is not None and only not in by_name:
        raise ConfigError(f"--case {only!r} is not a case of the suite; cases: {', '.join(by_name)}")
    by_first = {case.turns[0].content: case for case in cases if case.turns}
    fallback = by_name[only] if only is not None else (cases[0] if len(cases) == 1 else None)
    pairs: list[tuple[Case, TraceConversation]] = []
    unmatched: list[str] = []
    for conversation in found:
        if conversation.case is not None and only is None:
            case = by_name.get(conversation.case)
            if case is None:
                unmatched.append(f"{conversation.where}: names case {conversation.case!r}, which the suite has not")
                continue
        else:
            case = (by_first.get(conversation.first_user_message or "") if only is None else None) or fallback
        if case is None:
            first = (conversation.first_user_message or "")[:60]
            unmatched.append(
                f"{conversation.where}: no case starts with {first!r} and no span names a case; "
                "name one with --case or a proctor.case attribute"
            )
            continue
        pairs.append((case, conversation))
    return pairs, unmatched


async def _trial(
    case: Case, number: int, conversation: TraceConversation, judge: Judge | None, *, strict: bool
) -> TrialResult:
    warnings = []
    users = [m.content for m in conversation.messages if m.role == "user"]
    for index, turn in enumerate(case.turns):
        if index >= len(users):
            warnings.append(f"the trace has {len(users)} turn(s), the case {len(case.turns)}: later checks are skipped")
            break
        if users[index] != turn.content:
            warnings.append(f"turn {index + 1}'s message in the suite differs from the trace's")
    phase = PhaseContext(judge)
    checks = await check_transcript(case, conversation.messages, phase)
    scored = score_trial(checks, pass_threshold=case.scoring.pass_threshold, strict=strict)
    return TrialResult(
        case_key=f"{case.file}::{case.name}",
        trial=number,
        status=scored.status,
        score=scored.score,
        turns=conversation.messages,
        checks=checks,
        warnings=[*warnings, *scored.warnings],
        duration_ms=conversation.duration_ms,
        usage=conversation.usage,
        trace_ids=conversation.trace_ids,
        reason=scored.reason,
        trace_id=conversation.trace_ids[0] if len(conversation.trace_ids) == 1 else None,
    )


async def score_traces(
    paths: Sequence[Path],
    suites: Sequence[Suite],
    mapping: TraceMapping,
    options: RunOptions | None = None,
    *,
    case: str | None = None,
) -> TraceScore:
    """Read the trace files, rebuild their conversations, and check each against its case.

    Args:
        paths: Trace files (OTLP JSON, OTLP protobuf, JSON Lines of spans).
        suites: The suites whose cases the conversations are checked against.
        mapping: Where the conversation's parts are in the spans (`proctor.traces.load_mapping`).
        options: The judge settings (as for `proctor rescore`), `concurrency`, `strict`, `results_dir`
            (default `.results/` beside the first trace file), `write_results` and `history`.
        case: Check every conversation against this case.

    Raises:
        proctor.traces.TraceError: A file cannot be read.
        ConfigError: `case` names no case, or the suites have no case.
    """
    options = options or RunOptions()
    cases = [c for suite in suites for c in suite.cases]
    if not cases:
        raise ConfigError("the suites have no case to check the traces against")
    found = conversations([span for path in paths for span in read_spans(path)], mapping)
    pairs, unmatched = match_cases(found, cases, case)
    started = datetime.now(UTC)
    matched_ids = {id(c) for c, _ in pairs}
    planned = [c for c in cases if id(c) in matched_ids]  # in the suites' order
    models = ModelServices(options) if any(needs_judge(c) for c in planned) or options.budget else None
    numbers: dict[str, int] = {}
    work: list[tuple[Case, int, TraceConversation]] = []
    for matched, conversation in pairs:
        numbers[matched.name] = numbers.get(matched.name, 0) + 1
        work.append((matched, numbers[matched.name], conversation))
    done: dict[int, TrialResult] = {}

    async def one(index: int) -> None:
        matched, number, conversation = work[index]
        judge = models.judge_for(matched) if models is not None else None
        done[index] = await _trial(matched, number, conversation, judge, strict=options.strict)

    try:
        await execute(range(len(work)), one, concurrency=options.concurrency)
    finally:
        if models is not None:
            with anyio.CancelScope(shield=True):
                await models.aclose()
    run = _run(planned, work, done, started, paths, options)
    results_dir = options.results_dir or (paths[0].resolve().parent / ".results" if paths else Path(".results"))
    return TraceScore(_write(run, results_dir, options, planned), unmatched, len(found))


def _run(
    planned: Sequence[Case],
    work: Sequence[tuple[Case, int, TraceConversation]],
    done: dict[int, TrialResult],
    started: datetime,
    paths: Sequence[Path],
    options: RunOptions,
) -> RunResult:
    results = {
        id(c): CaseResult(c.name, c.suite, str(c.file), list(c.tags), c.scoring.min_pass_rate, [], c.description)
        for c in planned
    }
    for index, (matched, _, _) in enumerate(work):
        results[id(matched)].trials.append(done[index])
    return RunResult(
        run_id=f"traces_{started.strftime('%Y%m%dT%H%M%SZ')}",
        started_at=started.isoformat(timespec="seconds"),
        model=None,
        target="traces: " + ", ".join(p.name for p in paths),
        cases=list(results.values()),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        planned_trials=len(work),
        k=options.k,
    )


def _write(run: RunResult, results_dir: Path, options: RunOptions, planned: list[Case]) -> RunOutcome:
    path: Path | None = None
    if options.write_results:
        run.run_id = unique_run_id(results_dir, run.run_id)
        out = run.to_dict()
        path = results_dir / f"{run.run_id}.json"
        write_json(path, out)
        index_run(options.history or default_history_path(results_dir), path, out)
    else:
        out = run.to_dict()
    return RunOutcome(run, out, path, planned)


def score_traces_sync(
    paths: Sequence[Path],
    suites: Sequence[Suite],
    mapping: TraceMapping,
    options: RunOptions | None = None,
    *,
    case: str | None = None,
) -> TraceScore:
    """`score_traces`, synchronously."""
    box: list[TraceScore] = []

    async def main() -> None:
        box.append(await score_traces(paths, suites, mapping, options, case=case))

    anyio.run(main)
    return box[0]
