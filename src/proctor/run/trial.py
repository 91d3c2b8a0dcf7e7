"""One trial of a scripted case: prepare -> converse -> observe -> check -> score.

Never raises for agent problems: a target error or timeout ends the conversation, the trial's status
becomes `error` with the reason, and what could not be checked is `skipped` (`proctor.checks.check_transcript`).
The session is closed before judging; state assertions run while the trial's graph is still held.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from proctor.checks import Checklist, CheckResult, PhaseContext, check_transcript
from proctor.drivers.conversation import Conversation
from proctor.drivers.script import play_script
from proctor.results import TrialResult
from proctor.run.prepare import Prepared, prepare
from proctor.scoring import score_trial
from proctor.state import StateError
from proctor.suite import Case
from proctor.targets import SessionContext, Target

if TYPE_CHECKING:
    from proctor.checks._judging import Judge
    from proctor.state import StateManager

__all__ = ["case_key", "converse", "error_trial", "run_trial"]


def case_key(case: Case) -> str:
    """The key that identifies a case across runs: `<file>::<name>`."""
    return f"{case.file}::{case.name}"


async def converse(case: Case, prepared: Prepared, conversation: Conversation | None = None) -> Conversation:
    """The case's scripted turns on the prepared session (or the reason there was no conversation)."""
    conversation = conversation if conversation is not None else Conversation()
    conversation.retries += prepared.retries
    if prepared.session is None or prepared.error is not None:
        return conversation.fail("error", prepared.error or "no session", prepared.error_type or "TargetError")
    return await play_script(prepared.session, case.turns, reply_timeout=case.timeout, conversation=conversation)


async def run_trial(
    case: Case,
    trial: int,
    target: Target,
    context: SessionContext,
    judge: Judge | None = None,
    states: StateManager | None = None,
    *,
    strict: bool = False,
) -> TrialResult:
    """Run trial number `trial` of `case` against `target` (see the module's docstring).

    Args:
        case: The case.
        trial: The 1-based trial number.
        target: The agent.
        context: The session's context (case, trial, model, variables).
        judge: The judge for LLM-judged checks; `None` skips them with a hint.
        states: The run's state backends, when the case uses a graph.
        strict: Any failed check fails the trial, whatever its score.
    """
    started = time.perf_counter()
    try:
        async with prepare(case, target, context, states) as prepared:
            conversation = await converse(case, prepared)
            object_context = await prepared.object_context(case) if conversation.error is None else None
            await prepared.close_session()
            phase = PhaseContext(judge, object_context, prepared.graph, failure=conversation.error)
            checks = await check_transcript(case, conversation.messages, phase)
    except StateError as exc:
        return error_trial(case, trial, str(exc), type(exc).__name__, (time.perf_counter() - started) * 1000)
    return _scored(case, trial, conversation, checks, prepared.warnings, started, strict=strict)


def _scored(
    case: Case,
    trial: int,
    conversation: Conversation,
    checks: list[CheckResult],
    warnings: list[str],
    started: float,
    *,
    strict: bool,
) -> TrialResult:
    scored = score_trial(
        checks, pass_threshold=case.scoring.pass_threshold, conversation_error=conversation.error, strict=strict
    )
    return TrialResult(
        case_key=case_key(case),
        trial=trial,
        status=scored.status,
        score=scored.score,
        turns=conversation.messages,
        checks=checks,
        error=conversation.error,
        warnings=[*warnings, *scored.warnings],
        retries=conversation.retries,
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=conversation.usage,
        trace_ids=conversation.trace_ids,
        error_type=conversation.error_type,
        reason=scored.reason,
    )


def error_trial(case: Case, trial: int, error: str, error_type: str, duration_ms: float = 0.0) -> TrialResult:
    """A trial that could not start (e.g. its state setup failed): `error`, with every check `skipped`.

    Args:
        case: The case.
        trial: The 1-based trial number.
        error: Why the trial could not run.
        error_type: The error's class name.
        duration_ms: Time spent before it failed.
    """
    checks = Checklist.of(case).all_skipped(f"not run: {error}")
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
