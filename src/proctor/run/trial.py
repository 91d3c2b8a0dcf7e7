"""One trial of a scripted case or a scenario script: prepare -> converse -> observe -> check -> score.

Never raises for agent problems: a target error or timeout ends the conversation, the trial's status
becomes `error` with the reason, and what could not be checked is `skipped` (`proctor.checks.check_transcript`).
The session is closed before judging; state assertions run while the trial's graph is still held.

A scenario script (`script:`, `proctor.drivers.scenario`) is played by its driver; its judge checkpoints
are `llm-rubric` checks run live on the conversation so far (their verdicts are among the trial's checks),
its other checkpoints run in the one check phase on the transcript as it was at their point, and the
steps it never reached (a checkpoint ended the conversation, or the agent failed) have their checks
`skipped` with the reason.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from proctor.checks import CheckContext, Checklist, CheckResult, PhaseContext, check_transcript, run_check
from proctor.checks._phase import skipped
from proctor.drivers.conversation import Conversation
from proctor.drivers.script import play_script
from proctor.results import TrialResult
from proctor.run.prepare import Prepared, prepare
from proctor.scoring import score_trial
from proctor.state import StateError
from proctor.suite import AssertionSpec, Case
from proctor.targets import SessionContext, Target
from proctor.transcript import AgentReply, Message

if TYPE_CHECKING:
    from proctor.checks._judging import Judge
    from proctor.drivers.scenario import ScenarioRun
    from proctor.drivers.simulator import Simulator
    from proctor.state import StateManager

__all__ = ["case_key", "converse", "error_trial", "run_scenario_trial", "run_trial"]


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
    checklist: Checklist | None = None,
    key: str | None = None,
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
        checklist: The case's assertions (`Checklist.of(case)`), when the caller made it once for all trials.
        key: The case's `case_key`, when the caller has it (~2,000 instructions a trial to make again).
    """
    if case.script:
        return await run_scenario_trial(case, trial, target, context, judge, None, states, strict=strict)
    started = time.perf_counter()
    try:
        async with prepare(case, target, context, states) as prepared:
            conversation = await converse(case, prepared)
            object_context = None  # only the case's own assertions read it (`Prepared.object_context`)
            if conversation.error is None and case.assert_:
                object_context = await prepared.object_context(case)
            await prepared.close_session()
            phase = _phase(judge, object_context, prepared.graph, conversation.error)
            checks = await check_transcript(checklist if checklist is not None else case, conversation.messages, phase)
    except StateError as exc:
        return error_trial(case, trial, str(exc), type(exc).__name__, (time.perf_counter() - started) * 1000)
    return _scored(case, trial, conversation, checks, prepared.warnings, started, strict=strict, key=key)


def _phase(judge: Judge | None, object_context: Any, graph: Any, failure: str | None) -> PhaseContext | None:
    """The check phase's context; `None` (the phase's own default) when there is nothing besides the transcript."""
    if judge is None and object_context is None and graph is None and failure is None:
        return None
    return PhaseContext(judge, object_context, graph, failure=failure)


def _scored(
    case: Case,
    trial: int,
    conversation: Conversation,
    checks: list[CheckResult],
    warnings: list[str],
    started: float,
    *,
    strict: bool,
    key: str | None = None,
) -> TrialResult:
    scored = score_trial(
        checks, pass_threshold=case.scoring.pass_threshold, conversation_error=conversation.error, strict=strict
    )
    # positional, in TrialResult's field order (case_key, trial, status, score, turns, checks, error, warnings,
    # retries, duration_ms, usage, trace_ids, error_type, agent_cost_usd, reason): every trial is built here
    return TrialResult(
        case_key(case) if key is None else key, trial, scored.status, scored.score, conversation.messages, checks,
        conversation.error, [*warnings, *scored.warnings], conversation.retries, (time.perf_counter() - started) * 1000,
        conversation.usage, conversation.trace_ids, conversation.error_type, None, scored.reason,
    )  # fmt: skip


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
    for index, step in enumerate(case.script):  # a scenario script's checks and checkpoints
        checks.extend(skipped(spec, None, f"not run: {error}") for spec in step.assertions())
        if step.judge is not None:
            checks.append(skipped(_checkpoint_spec(index, step.judge), None, f"not run: {error}"))
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


async def run_scenario_trial(
    case: Case,
    trial: int,
    target: Target,
    context: SessionContext,
    judge: Judge | None,
    simulator: Simulator | None,
    states: StateManager | None = None,
    *,
    seed: int = 0,
    strict: bool = False,
) -> TrialResult:
    """Run trial `trial` of a case with a scenario script (see the module's docstring).

    Args:
        case: The case; `case.script` is played.
        trial: The 1-based trial number.
        target: The agent.
        context: The session's context.
        judge: Decides judge checkpoints and runs judged checks; without one the checkpoints are `skipped`
            and never end the conversation.
        simulator: Plays the simulated stretches; without one a script that has any is `skipped`.
        states: The run's state backends, when the case uses a graph.
        seed: Seeds the simulator's sampling.
        strict: Any failed check fails the trial, whatever its score.
    """
    # loaded here, not at import: a run without scenario scripts never needs the scenario driver (~7 M
    # instructions of start-up: its dataclasses), nor the simulator's module for its hint
    from proctor.drivers.scenario import ScenarioRun, play_scenario
    from proctor.drivers.simulator import NO_SIMULATOR_HINT

    started = time.perf_counter()
    if simulator is None and any(step.simulate is not None for step in case.script):
        return TrialResult(case_key=case_key(case), trial=trial, status="skipped", score=None, reason=NO_SIMULATOR_HINT)
    verdicts: list[CheckResult] = []

    async def checkpoint(step: int, criterion: str, messages: list[Message]) -> bool:
        verdict = await _judge_checkpoint(case, step, criterion, messages, judge)
        verdicts.append(verdict)
        return verdict.status == "passed"

    try:
        async with prepare(case, target, context, states) as prepared:
            if prepared.session is None or prepared.error is not None:
                played = ScenarioRun(
                    Conversation().fail("error", prepared.error or "no session", prepared.error_type or "TargetError")
                )
                played.unreached = list(range(len(case.script)))
            else:
                played = await play_scenario(
                    prepared.session, case.script, reply_timeout=case.timeout, simulator=simulator,
                    simulate=case.simulate, judge=checkpoint, seed=seed,
                )  # fmt: skip
            conversation = played.conversation
            conversation.retries += prepared.retries
            object_context = await prepared.object_context(case) if conversation.error is None else None
            await prepared.close_session()
            phase = PhaseContext(judge, object_context, prepared.graph, failure=conversation.error)
            checks = await _scenario_checks(case, played, phase, verdicts)
    except StateError as exc:
        return error_trial(case, trial, str(exc), type(exc).__name__, (time.perf_counter() - started) * 1000)
    warnings = list(prepared.warnings)
    if played.ended_by is not None:
        rest = f"; steps {played.unreached[0] + 1}-{len(case.script)} not played" if played.unreached else ""
        warnings.append(
            f"the judge checkpoint of step {played.ended_by + 1} found its criterion met: ended there{rest}"
        )
    return _scored(case, trial, conversation, checks, warnings, started, strict=strict)


async def _judge_checkpoint(
    case: Case, step: int, criterion: str, messages: list[Message], judge: Judge | None
) -> CheckResult:
    """A judge checkpoint's verdict: `llm-rubric` on the last reply, with the conversation so far."""
    spec = _checkpoint_spec(step, criterion)
    replies = [index for index, message in enumerate(messages) if message.role == "assistant"]
    if not replies:
        return skipped(spec, None, "not judged: the agent has not replied yet at this point")
    last = messages[replies[-1]]
    reply = AgentReply(last.content, list(last.tool_calls), last.latency_ms or 0.0)
    result = await run_check(spec, CheckContext(reply, len(replies) - 1, messages, case.name, judge=judge))
    result.details["checkpoint"] = {"step": step + 1, "messages": len(messages)}
    return result


async def _scenario_checks(
    case: Case, played: ScenarioRun, phase: PhaseContext, verdicts: list[CheckResult]
) -> list[CheckResult]:
    """Every check of a played script: at its point, the case's own, judge verdicts, unreached steps'."""
    messages = played.conversation.messages
    by_reply: dict[int, list[AssertionSpec]] = {}
    unchecked: list[CheckResult] = []
    so_far = []
    for point in played.checkpoints:
        if point.on == "conversation":
            so_far.append(point)
        elif point.reply is None:
            reason = f"not run: step {point.step + 1} comes before any reply"
            unchecked.extend(skipped(spec, None, reason) for spec in point.specs)
        else:
            by_reply.setdefault(point.reply, []).extend(point.specs)
    turns = tuple(tuple(by_reply.get(index, ())) for index in range(max(by_reply, default=-1) + 1))
    checks = await check_transcript(Checklist(case.name, turns, tuple(case.assert_), case.rubric), messages, phase)
    for point in so_far:
        checks.extend(await check_transcript(Checklist(case.name, (), point.specs), messages[: point.upto], phase))
    why = (
        f"not run: the conversation ended at step {played.ended_by + 1} (its judge checkpoint was met)"
        if played.ended_by is not None
        else f"not run: the conversation ended without a reply to this step ({played.conversation.error})"
    )
    for index in played.unreached:
        step = case.script[index]
        unchecked.extend(skipped(spec, None, why) for spec in step.assertions())
        if step.judge is not None:
            unchecked.append(skipped(_checkpoint_spec(index, step.judge), None, why))
    return [*checks, *verdicts, *unchecked]


def _checkpoint_spec(step: int, criterion: str) -> AssertionSpec:
    """The check standing for a judge checkpoint (0-based `step`): `llm-rubric` on its criterion."""
    return AssertionSpec(type="llm-rubric", value=criterion, name=f"step {step + 1} judge checkpoint: {criterion}")
