"""Run one trial: open a session, send the scripted turns, run the checks, score."""

from __future__ import annotations

import inspect
import time

import anyio

from proctor.checks import CheckContext, CheckResult, run_check
from proctor.errors import ProctorError, TargetTimeout
from proctor.results import TrialResult
from proctor.scoring import score_trial
from proctor.suite import AssertionSpec, Case
from proctor.targets import SessionContext, Target
from proctor.transcript import AgentReply, Message, Usage

__all__ = ["case_key", "run_trial"]


def case_key(case: Case) -> str:
    """The key that identifies a case across runs: `<file>::<name>`."""
    return f"{case.file}::{case.name}"


async def _checked(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    result = run_check(spec, context)
    if inspect.isawaitable(result):
        return await result
    return result


async def run_trial(case: Case, trial: int, target: Target, context: SessionContext) -> TrialResult:
    """Run trial number `trial` of `case` against `target`.

    Never raises for agent problems: a target error or timeout ends the conversation, the trial's
    status becomes `error` with the reason, and checks of turns never sent are `skipped`.
    """
    started = time.perf_counter()
    messages: list[Message] = []
    checks: list[CheckResult] = []
    usage = Usage()
    retries = 0
    trace_ids: list[str] = []
    error: str | None = None
    error_type: str | None = None
    sent = 0
    try:
        with anyio.fail_after(case.timeout):
            session = await target.open_session(context)
    except TimeoutError:
        error, error_type = f"could not open a session within {case.timeout:g} s", "TargetTimeout"
    except ProctorError as exc:  # a target error, or a template that cannot render for this trial
        error, error_type = f"could not open a session: {exc}", type(exc).__name__
    else:
        try:
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
                check_context = CheckContext(reply, index, messages, case.name)
                for spec in turn.assert_:
                    checks.append(await _checked(spec, check_context))
        except ProctorError as exc:
            error = f"turn {sent + 1}: {exc}"
            error_type = type(exc).__name__
        finally:
            with anyio.CancelScope(shield=True):
                await session.aclose()
    for index in range(sent, len(case.turns)):
        for spec in case.turns[index].assert_:
            checks.append(
                CheckResult(
                    spec.display_name(),
                    spec.type,
                    "skipped",
                    None,
                    spec.weight,
                    f"not run: the conversation ended before turn {index + 1}",
                    index,
                )
            )
    if case.rubric is not None:
        rubric_spec = AssertionSpec(type="rubric", name=f"rubric: {case.rubric.path.name}")
        if error is None:
            context_all = CheckContext(None, None, messages, case.name, case.rubric)
            checks.append(await _checked(rubric_spec, context_all))
        else:
            checks.append(
                CheckResult(rubric_spec.display_name(), "rubric", "skipped", None, 1.0, "not run: conversation failed")
            )
    scored = score_trial(checks, pass_threshold=case.scoring.pass_threshold, conversation_error=error)
    return TrialResult(
        case_key=case_key(case),
        trial=trial,
        status=scored.status,
        score=scored.score,
        turns=messages,
        checks=checks,
        error=error,
        warnings=list(scored.warnings),
        retries=retries,
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=usage,
        trace_ids=trace_ids,
        error_type=error_type,
    )
