"""Re-score a stored run: re-run checks over its transcripts without contacting the agent.

The suite files named in the results are loaded again and cases are matched by `<file>::<name>`; each
stored trial's transcript becomes the replies the checks see. The outcome is a new run, linked to the
original by `rescored_from`, written beside it and indexed in the history.

What cannot be re-checked: trials whose conversation failed (kept as they were), and checks that need
what only the live agent had (its object context, its state backend): those keep their stored result.

A run stopped before all its planned trials ran (interrupted, aborted) stays so: re-scoring runs no
trial, so its incomplete cases stay `incomplete` (never `error`, never `passed` on the trials that ran)
and the rescored run ends with the stored run's status and reason; a re-judging budget reached as well
is added to that reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from proctor.checks import CheckResult, PhaseContext, check_transcript, registry
from proctor.checks._judging import Judge
from proctor.checks._phase import skipped
from proctor.errors import ConfigError
from proctor.results import (
    CaseResult,
    RunResult,
    TrialResult,
    default_history_path,
    index_run,
    load_run,
    write_json,
)
from proctor.run.execute import execute
from proctor.run.options import RunOptions
from proctor.run.plan import needs_judge, unique_run_id
from proctor.run.record import RunOutcome
from proctor.run.services import ModelServices
from proctor.scoring import score_trial
from proctor.suite import AssertionSpec, Case, Trust, load_suite_file

__all__ = ["rescore", "rescore_sync"]

LIVE_ONLY_FAMILIES = frozenset({"state"})
"""Check families that read the agent's live state: never re-run from a transcript."""

_SCORING_WARNINGS = ("no check was scored", "the case has no checks")
"""Warnings of earlier releases' scoring, dropped when a stored trial is scored again."""


def _find_suite_file(name: str, results_file: Path) -> Path:
    """A suite file as named in the results: relative to the current directory, else to the suites'."""
    given = Path(name)
    if given.exists():
        return given
    beside = results_file.resolve().parent.parent / given.name
    if not given.is_absolute() and beside.exists():
        return beside
    raise ConfigError(
        f"suite file {name!r} named in {results_file} was not found (looked here and in {beside.parent}); "
        "run rescore from where the run was made"
    )


def _load_cases(data: dict[str, Any], results_file: Path) -> dict[str, Case]:
    """The suites' cases by the key the results use (`<file as stored>::<name>`)."""
    cases: dict[str, Case] = {}
    for name in dict.fromkeys(str(c.get("file", "")) for c in data["cases"]):
        # rescoring runs no code a suite names (no target is called), but what files it reads stay confined
        suite = load_suite_file(_find_suite_file(name, results_file), registry, trust=Trust(trusted=True))
        for case in suite.cases:
            cases[f"{name}::{case.name}"] = case
    return cases


def _selector(checks: Sequence[str], data: dict[str, Any], cases: Iterable[Case]) -> Callable[[AssertionSpec], bool]:
    """A predicate telling whether an assertion is to be re-run (`--checks` by type or display name)."""
    if not checks:
        return lambda spec: True
    names = {c["name"] for case in data["cases"] for t in case.get("trials") or [] for c in t.get("checks") or []}
    for case in cases:
        names.update(spec.display_name() for turn in case.turns for spec in turn.assert_)
        names.update(spec.display_name() for spec in case.assert_)
    for name in checks:
        if name in names:
            continue
        try:
            registry.resolve(name)
        except ValueError as exc:
            raise ConfigError(f"--checks: {name!r} is neither a check type nor a check of this run ({exc})") from None
    wanted = set(checks)

    def selected(spec: AssertionSpec) -> bool:
        return spec.type in wanted or spec.display_name() in wanted or spec.type.removeprefix("not-") in wanted

    return selected


def _live_only(spec: AssertionSpec) -> bool:
    try:
        check, _ = registry.resolve(spec.type)
    except ValueError:
        return False
    return check.family in LIVE_ONLY_FAMILIES


def _reuse(
    stored: TrialResult, selected: Callable[[AssertionSpec], bool], warnings: list[str]
) -> Callable[[AssertionSpec, int | None], CheckResult | None]:
    """What the check phase keeps from the stored trial instead of re-running it."""
    old: dict[tuple[int | None, str, str], list[CheckResult]] = {}
    for check in stored.checks:
        old.setdefault((check.turn, check.name, check.type), []).append(check)
    replies = sum(1 for m in stored.turns if m.role == "assistant")

    def reuse(spec: AssertionSpec, turn: int | None) -> CheckResult | None:
        kept = old.get((turn, spec.display_name(), spec.type))
        live_only = _live_only(spec)
        unanswered = turn is not None and turn >= replies
        if kept and (live_only or not selected(spec) or unanswered):
            if live_only and selected(spec):
                warnings.append(f"{spec.display_name()}: kept from the original run (it needs the live agent's state)")
            return kept.pop(0)
        if live_only and not unanswered:
            return skipped(spec, turn, "not re-run: it needs the live agent's state")
        return None

    return reuse


async def _rescore_trial(
    case: Case,
    stored: TrialResult,
    judge: Judge | None,
    selected: Callable[[AssertionSpec], bool],
    *,
    strict: bool = False,
) -> TrialResult:
    """Re-run the selected checks of one stored trial and score it again."""
    if stored.error is not None:
        return stored  # the conversation failed: there is nothing more to check
    if stored.simulation is not None or case.simulate is not None or stored.status == "inconclusive" or case.script:
        note = (
            "scenario-script trials are kept as recorded: rescoring their checkpoints is not supported yet"
            if case.script and case.simulate is None
            else "simulated-user trials are kept as recorded: rescoring their arms is not supported yet"
        )
        if note not in stored.warnings:
            stored.warnings.append(note)
            stored._json = None  # the JSON form is cached: rebuild it with the note
        return stored
    messages = stored.turns
    users = [m for m in messages if m.role == "user"]
    warnings = [w for w in stored.warnings if not w.startswith(_SCORING_WARNINGS)]
    for index, turn in enumerate(case.turns):
        if index < len(users) and users[index].content != turn.content:
            warnings.append(f"turn {index + 1}'s message in the suite differs from the stored transcript")
    phase = PhaseContext(judge, reuse=_reuse(stored, selected, warnings))
    done = await check_transcript(case, messages, phase)
    scored = score_trial(done, pass_threshold=case.scoring.pass_threshold, strict=strict)
    return TrialResult(
        case_key=stored.case_key,
        trial=stored.trial,
        status=scored.status,
        score=scored.score,
        turns=messages,
        checks=done,
        warnings=[*warnings, *scored.warnings],
        retries=stored.retries,
        duration_ms=stored.duration_ms,
        usage=stored.usage,
        trace_ids=stored.trace_ids,
        agent_cost_usd=stored.agent_cost_usd,
        reason=scored.reason,
    )


def _now() -> datetime:
    return datetime.now(UTC)


async def rescore(results_file: Path, options: RunOptions | None = None, *, checks: Sequence[str] = ()) -> RunOutcome:
    """Re-run checks over a stored run's transcripts and record the result as a new run.

    Args:
        results_file: The run's results JSON.
        options: The judge settings (`judge`, `judge_concurrency`, `judge_rpm`, `cache`, `cache_dir`,
            `budget`, `prices`), `concurrency` (trials re-checked at once), `results_dir` (default: the
            original's), `history` and `write_results`; the agent settings are not used.
        checks: Re-run only these checks (by type, e.g. `llm-rubric` or `rubric`, or by display name);
            the others keep their stored result. Default: every check.

    Raises:
        ConfigError: The results file or a suite file it names cannot be read, or `checks` names nothing.
        SuiteError: A suite file no longer loads.
    """
    options = options or RunOptions()
    data = load_run(results_file)
    suite_cases = _load_cases(data, results_file)
    selected = _selector(checks, data, suite_cases.values())
    planned = [
        suite_cases[key] for key in (f"{c.get('file', '')}::{c['name']}" for c in data["cases"]) if key in suite_cases
    ]
    models = ModelServices(options) if any(needs_judge(c) for c in planned) or options.budget else None
    started = _now()
    results, work = _stored_work(data, suite_cases)
    done: dict[int, TrialResult] = {}

    async def one(number: int) -> None:
        case, _, stored = work[number]
        if case is None:
            stored.warnings.append("the case is no longer in its suite file: kept as it was")
            done[number] = stored
            return
        judge = models.judge_for(case) if models is not None else None
        done[number] = await _rescore_trial(case, stored, judge, selected, strict=options.strict)

    try:
        await execute(range(len(work)), one, concurrency=options.concurrency)
    finally:
        if models is not None:
            with anyio.CancelScope(shield=True):
                await models.aclose()
    for number, (_, result, _) in enumerate(work):
        result.trials.append(done[number])
    results_dir = options.results_dir or results_file.parent
    run = _rescored_run(data, results, started, options, results_dir, planned_trials=len(work))
    if models is not None and models.budget is not None and models.budget.exhausted:
        note = f"budget of ${models.budget.limit_usd:g} reached while re-judging: later judge checks are errors"
        if run.status == "complete":
            run.end("aborted", note)
        else:  # the stored run's stop stays (its incomplete cases' reasons say it); the re-judging's is added
            run.end(run.status, f"{run.reason or f'the rescored run was {run.status}'}; {note}")
    return _write(run, results_dir, options, planned)


_Work = tuple["Case | None", CaseResult, TrialResult]
"""A stored trial to re-check: its case in the suite (`None` when it is gone), its case result, the trial."""


def _stored_work(data: dict[str, Any], suite_cases: dict[str, Case]) -> tuple[list[CaseResult], list[_Work]]:
    """The new run's case results (empty) and every stored trial to re-check.

    Each case result keeps the trials the stored run planned for it (`planned_trials`, recorded for an
    incomplete case): a trial that never ran is not re-scored into anything, so the case stays incomplete.
    """
    results: list[CaseResult] = []
    work: list[_Work] = []
    for raw in data["cases"]:
        key = f"{raw.get('file', '')}::{raw['name']}"
        case = suite_cases.get(key)
        result = CaseResult(
            raw["name"],
            case.suite if case else raw.get("suite", ""),
            raw.get("file", ""),
            list(case.tags) if case else list(raw.get("tags") or []),
            case.scoring.min_pass_rate if case else raw.get("min_pass_rate", 1.0),
            [],
            case.description if case else raw.get("description"),
            planned=raw.get("planned_trials"),  # an incomplete case's: its unrun trials stay unrun, not errors
        )
        results.append(result)
        work.extend((case, result, TrialResult.from_dict(key, trial)) for trial in raw.get("trials") or [])
    return results, work


def _rescored_run(
    data: dict[str, Any],
    results: list[CaseResult],
    started: datetime,
    options: RunOptions,
    results_dir: Path,
    *,
    planned_trials: int,
) -> RunResult:
    run_id = f"{data['run_id']}-rescored-{started.strftime('%Y%m%dT%H%M%SZ')}"
    if options.write_results:
        run_id = unique_run_id(results_dir, run_id)
    run = RunResult(
        run_id=run_id,
        started_at=started.isoformat(timespec="seconds"),
        model=data.get("model"),
        target=data.get("target") or "",
        cases=results,
        finished_at=_now().isoformat(timespec="seconds"),
        seed=data.get("seed"),
        planned_trials=((data.get("summary") or {}).get("trials") or {}).get("planned", planned_trials),
        rescored_from=data["run_id"],
        k=options.k or (data.get("summary") or {}).get("k"),
    )
    if any(case.missing_trials for case in results):
        # the stored run stopped before these trials ran: so does its rescore (re-checking runs no trial)
        run.end(data.get("status") or "complete", data.get("reason"))
    return run


def _write(run: RunResult, results_dir: Path, options: RunOptions, planned: list[Case]) -> RunOutcome:
    out = run.to_dict()
    path: Path | None = None
    if options.write_results:
        path = results_dir / f"{run.run_id}.json"
        write_json(path, out)
        index_run(options.history or default_history_path(results_dir), path, out)
    return RunOutcome(run, out, path, planned)


def rescore_sync(results_file: Path, options: RunOptions | None = None, *, checks: Sequence[str] = ()) -> RunOutcome:
    """`rescore`, synchronously."""
    box: list[RunOutcome] = []

    async def main() -> None:
        box.append(await rescore(results_file, options, checks=checks))

    anyio.run(main)
    return box[0]
