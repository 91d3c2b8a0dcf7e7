"""Run one trial: open a session, send the scripted turns, run the checks, score."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio

from proctor.checks import CheckContext, CheckResult, run_check
from proctor.checks._judging import Judge
from proctor.errors import ProctorError, TargetTimeout
from proctor.results import TrialResult
from proctor.scoring import score_trial
from proctor.suite import AssertionSpec, Case
from proctor.targets import SessionContext, Target
from proctor.transcript import AgentReply, Message, Usage

if TYPE_CHECKING:
    from proctor.state import StateManager

__all__ = ["case_key", "error_trial", "run_trial", "run_trial_in_state"]


def case_key(case: Case) -> str:
    """The key that identifies a case across runs: `<file>::<name>`."""
    return f"{case.file}::{case.name}"


def _skipped(spec: AssertionSpec, turn: int | None, reason: str) -> CheckResult:
    return CheckResult(spec.display_name(), spec.type, "skipped", None, spec.weight, reason, turn)


async def run_trial(
    case: Case,
    trial: int,
    target: Target,
    context: SessionContext,
    judge: Judge | None = None,
    state: Any = None,
) -> TrialResult:
    """Run trial number `trial` of `case` against `target`.

    Never raises for agent problems: a target error or timeout ends the conversation, the trial's
    status becomes `error` with the reason, and checks of turns never sent are `skipped`.
    Deterministic checks run as each reply arrives; judged checks (which call a model) run after the
    conversation, in parallel, within the judge model's limits. The case's own `assert` checks run after
    the last turn over the whole transcript, with the agent's object context when the target offers one
    and the trial's `state` backend.
    """
    started = time.perf_counter()
    messages: list[Message] = []
    checks: list[CheckResult | None] = []
    pending: list[tuple[int, AssertionSpec, Awaitable[CheckResult]]] = []
    usage = Usage()
    retries = 0
    trace_ids: list[str] = []
    error: str | None = None
    error_type: str | None = None
    sent = 0
    object_context: Any = None
    warnings: list[str] = []
    seeding = False
    try:
        with anyio.fail_after(case.timeout):
            session = await target.open_session(context)
    except TimeoutError:
        error, error_type = f"could not open a session within {case.timeout:g} s", "TargetTimeout"
    except ProctorError as exc:  # a target error, or a template that cannot render for this trial
        error, error_type = f"could not open a session: {exc}", type(exc).__name__
    else:
        try:
            if case.seeds:
                from proctor._seeding import deliver_seeds

                seeding = True
                retries += await deliver_seeds(target, context, session, case)
                seeding = False
            for index, turn in enumerate(case.turns):
                messages.append(Message("user", turn.content))
                try:
                    with anyio.fail_after(case.timeout):
                        reply: AgentReply = await session.send(turn.content)
                except TimeoutError:
                    raise TargetTimeout(f"no reply within {case.timeout:g} s") from None
                sent = index + 1
                messages.append(Message("assistant", reply.text, reply.tool_calls, reply.latency_ms))
                retries += reply.retries
                if reply.usage is not None:
                    usage = usage + reply.usage
                if reply.trace_id:
                    trace_ids.append(reply.trace_id)
                if turn.assert_:
                    check_context = CheckContext(reply, index, list(messages), case.name, judge=judge)
                    for spec in turn.assert_:
                        result = run_check(spec, check_context)
                        if inspect.isawaitable(result):
                            pending.append((len(checks), spec, result))
                            checks.append(None)
                        else:
                            checks.append(result)
            fetch = getattr(session, "object_context", None)
            if case.assert_ and fetch is not None:
                try:
                    with anyio.fail_after(case.timeout):
                        object_context = await fetch()
                except (ProctorError, TimeoutError) as exc:
                    warnings.append(f"could not fetch the agent's object context: {exc or 'timed out'}")
        except ProctorError as exc:
            error = f"seeding: {exc}" if seeding else f"turn {sent + 1}: {exc}"
            error_type = type(exc).__name__
        finally:
            with anyio.CancelScope(shield=True):
                await session.aclose()
    for index in range(sent, len(case.turns)):
        for spec in case.turns[index].assert_:
            checks.append(_skipped(spec, index, f"not run: the conversation ended before turn {index + 1}"))
    if case.assert_:
        final = CheckContext(
            None, None, list(messages), case.name, judge=judge, object_context=object_context, state=state
        )
        for spec in case.assert_:
            if error is not None:
                checks.append(_skipped(spec, None, "not run: the conversation failed"))
                continue
            result = run_check(spec, final)
            if inspect.isawaitable(result):
                pending.append((len(checks), spec, result))
                checks.append(None)
            else:
                checks.append(result)
    if case.rubric is not None:
        rubric_spec = AssertionSpec(type="rubric", name=f"rubric: {case.rubric.path.name}")
        if error is None:
            context_all = CheckContext(None, None, list(messages), case.name, case.rubric, judge=judge)
            result = run_check(rubric_spec, context_all)
            if inspect.isawaitable(result):
                pending.append((len(checks), rubric_spec, result))
                checks.append(None)
            else:
                checks.append(result)
        else:
            checks.append(_skipped(rubric_spec, None, "not run: the conversation failed"))
    if pending:
        if error is None:
            await _run_pending(checks, pending)
        else:  # no judging (nor paying for it) when the trial is an error anyway
            for index, spec, awaitable in pending:
                _discard(awaitable)
                checks[index] = _skipped(spec, _checks_turn(spec, case), "not judged: the conversation failed")
    done = [c for c in checks if c is not None]
    scored = score_trial(done, pass_threshold=case.scoring.pass_threshold, conversation_error=error)
    return TrialResult(
        case_key=case_key(case),
        trial=trial,
        status=scored.status,
        score=scored.score,
        turns=messages,
        checks=done,
        error=error,
        warnings=[*warnings, *scored.warnings],
        retries=retries,
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=usage,
        trace_ids=trace_ids,
        error_type=error_type,
    )


async def run_trial_in_state(
    states: StateManager, case: Case, trial: int, target: Target, context: SessionContext, judge: Judge | None = None
) -> TrialResult:
    """Run a trial in its own graph: setups first, the graph's address in the session's variables.

    A graph that cannot be made ready (a setup fails) makes the trial `error`, with every check skipped;
    problems after the trial (a failed teardown) become warnings.
    """
    from proctor.state import StateError

    started = time.perf_counter()
    try:
        async with states.trial(case) as lease:
            context = replace(context, variables={**context.variables, **lease.variables})
            result = await run_trial(case, trial, target, context, judge, state=lease.graph)
    except StateError as exc:
        return error_trial(case, trial, str(exc), type(exc).__name__, (time.perf_counter() - started) * 1000)
    result.warnings.extend(lease.warnings)
    return result


def error_trial(case: Case, trial: int, error: str, error_type: str, duration_ms: float = 0.0) -> TrialResult:
    """A trial that could not start (e.g. its state setup failed): `error`, with every check `skipped`.

    Args:
        case: The case.
        trial: The 1-based trial number.
        error: Why the trial could not run.
        error_type: The error's class name.
        duration_ms: Time spent before it failed.
    """
    reason = f"not run: {error}"
    checks = [_skipped(spec, index, reason) for index, turn in enumerate(case.turns) for spec in turn.assert_]
    checks.extend(_skipped(spec, None, reason) for spec in case.assert_)
    if case.rubric is not None:
        checks.append(_skipped(AssertionSpec(type="rubric", name=f"rubric: {case.rubric.path.name}"), None, reason))
    scored = score_trial(checks, pass_threshold=case.scoring.pass_threshold, conversation_error=error)
    return TrialResult(
        case_key=case_key(case),
        trial=trial,
        status=scored.status,
        score=scored.score,
        checks=checks,
        error=error,
        warnings=list(scored.warnings),
        duration_ms=duration_ms,
        error_type=error_type,
    )


async def _run_pending(
    checks: list[CheckResult | None], pending: list[tuple[int, AssertionSpec, Awaitable[CheckResult]]]
) -> None:
    async def fill(index: int, awaitable: Awaitable[CheckResult]) -> None:
        checks[index] = await awaitable

    async with anyio.create_task_group() as group:
        for index, _, awaitable in pending:
            group.start_soon(fill, index, awaitable)


def _discard(awaitable: Awaitable[CheckResult]) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()  # a coroutine that will never run: close it so it is not reported as never awaited


def _checks_turn(spec: AssertionSpec, case: Case) -> int | None:
    """The turn an assertion belongs to (`None` for the rubric)."""
    for index, turn in enumerate(case.turns):
        if any(candidate is spec for candidate in turn.assert_):
            return index
    return None
