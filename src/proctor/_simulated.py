"""Run one trial of a simulated-user case: its arms, the checks of each, Embabel's composite score.

Each arm (`withheld`, `supplied`, or those the case lists) runs in a fresh agent session (and, when the
case uses state, in its own clean graph). Per arm: the scripted `turns` (if any) are sent first with
their checks, then the simulator plays the user; the case's `assert` checks run over the arm's
transcript, the transcript judge scores each task, and the arm's composite is computed
(`proctor.scoring.composite_score`).

The trial's score and status are those of its primary arm (`supplied` when it ran, the one with all the
information, else the first arm); every arm is in `TrialResult.simulation` with its transcript, checks
and composite components, and the difference `supplied - withheld` of each component. A trial is
`error` when any arm's conversation failed on the agent's side (this wins over a simulator fault);
`inconclusive` when the simulator misbehaved (then it is re-run with a new seed, `reruns` times),
never counted as the agent's failure;
`skipped` when no simulator model is configured.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio

from proctor.checks import CheckContext, CheckResult, run_check
from proctor.errors import ProctorError, TargetTimeout
from proctor.results import TrialResult
from proctor.scoring import composite_score, timing_score
from proctor.suite import Arm, AssertionSpec, Case, SimulateSpec
from proctor.targets import SessionContext, Target
from proctor.transcript import Message, Usage

if TYPE_CHECKING:
    from proctor.checks._judging import Judge
    from proctor.drivers.simulator import Conversation, Simulator
    from proctor.state import StateManager

__all__ = ["run_simulated_trial"]


def _base_seed(context: SessionContext, key: str) -> int:
    seed = context.variables.get("seed")
    if isinstance(seed, int):
        return seed
    digest = hashlib.sha256(f"{key}:{context.trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _primary(arms: list[Arm]) -> Arm:
    return "supplied" if "supplied" in arms else arms[0]


async def run_simulated_trial(
    case: Case,
    trial: int,
    target: Target,
    context: SessionContext,
    judge: Judge | None,
    simulator: Simulator | None,
    states: StateManager | None = None,
) -> TrialResult:
    """Run trial `trial` of the simulated case `case` (see the module's docstring).

    Never raises for agent or simulator problems.
    """
    from proctor._trial import case_key

    spec = case.simulate
    assert spec is not None
    started = time.perf_counter()
    if simulator is None:
        from proctor.drivers.simulator import NO_SIMULATOR_HINT

        return TrialResult(case_key=case_key(case), trial=trial, status="skipped", score=None, reason=NO_SIMULATOR_HINT)
    seed = _base_seed(context, case_key(case))
    warnings: list[str] = []
    arms: dict[str, dict[str, Any]] = {}
    for attempt in range(spec.reruns + 1):
        arms = {}
        for arm in spec.arms:
            arms[arm] = await _run_arm(case, spec, arm, target, context, judge, simulator, seed + attempt, states)
        faults = [f"{name}: {problem}" for name, data in arms.items() for problem in data["simulator_faults"]]
        if not faults or attempt == spec.reruns:
            break
        warnings.append(f"attempt {attempt + 1} was inconclusive ({'; '.join(faults)}); re-run with a new seed")
    primary = arms[_primary(list(spec.arms))]
    statuses = [data["status"] for data in arms.values()]
    reason: str | None = None
    if "error" in statuses:  # the agent (or a check) failed: that is the finding, whatever the simulator did
        status, score = "error", primary["composite"]["overall"]
    elif "inconclusive" in statuses:
        status, score = "inconclusive", None
        reason = "; ".join(
            f"{name}: {problem}" for name, data in arms.items() for problem in data["simulator_faults"]
        ) or next(data["error"] for data in arms.values() if data["status"] == "inconclusive")
    else:
        status, score = primary["status"], primary["composite"]["overall"]
    errors = [f"{name}: {data['error']}" for name, data in arms.items() if data["error"] and data["status"] == "error"]
    error_types = [data["error_type"] for data in arms.values() if data["error_type"] and data["status"] == "error"]
    simulation = {
        "primary": _primary(list(spec.arms)),
        "simulator": simulator.name,
        "attempts": len(warnings) + 1,
        "arms": {name: _public(data) for name, data in arms.items()},
        "difference": _difference(arms),
    }
    for data in arms.values():
        warnings.extend(f"{data['arm']}: {w}" for w in data["warnings"])
    return TrialResult(
        case_key=case_key(case),
        trial=trial,
        status=status,
        score=score,
        turns=primary["messages"],
        checks=primary["checks"],
        error="; ".join(errors) or None,
        warnings=warnings,
        retries=sum(data["retries"] for data in arms.values()),
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=sum((data["usage"] for data in arms.values()), Usage()),
        trace_ids=[t for data in arms.values() for t in data["trace_ids"]],
        error_type=error_types[0] if error_types else None,
        reason=reason,
        simulation=simulation,
    )


def _public(data: dict[str, Any]) -> dict[str, Any]:
    """An arm's JSON form."""
    return {
        "status": data["status"],
        "score": data["composite"]["overall"],
        "stop": data["stop"],
        "aborted": data["stop"] == "max_turns",
        "seed": data["seed"],
        "error": data["error"],
        "composite": data["composite"],
        "simulator_faults": data["simulator_faults"],
        "simulator_usage": data["simulator_usage"].to_dict(),
        "retries": data["retries"],
        "turns": [m.to_dict() for m in data["messages"]],
        "checks": [c.to_dict() for c in data["checks"]],
    }


def _difference(arms: dict[str, dict[str, Any]]) -> dict[str, float | None] | None:
    """`supplied - withheld` of each composite component (`None` where either is missing)."""
    if "supplied" not in arms or "withheld" not in arms:
        return None
    out: dict[str, float | None] = {}
    for key in ("overall", "timing", "tasks", "assertions"):
        a, b = arms["supplied"]["composite"][key], arms["withheld"]["composite"][key]
        out[key] = None if a is None or b is None else round(a - b, 6)
    return out


def _lease(states: StateManager | None, case: Case) -> AbstractAsyncContextManager[Any]:
    return states.trial(case) if states is not None else nullcontext(None)


async def _run_arm(
    case: Case,
    spec: SimulateSpec,
    arm: Arm,
    target: Target,
    context: SessionContext,
    judge: Judge | None,
    simulator: Simulator,
    seed: int,
    states: StateManager | None,
) -> dict[str, Any]:
    from proctor.drivers.simulator import Conversation, simulator_checks

    warnings: list[str] = []
    checks: list[CheckResult | None] = []
    pending: list[tuple[int, Awaitable[CheckResult]]] = []
    object_context: Any = None
    graph: Any = None
    try:
        async with _lease(states, case) as lease:
            arm_context = context
            if lease is not None:
                arm_context = replace(context, variables={**context.variables, **lease.variables})
                graph = lease.graph
            conversation = await _converse(case, spec, arm, target, arm_context, simulator, seed, checks, pending)
            fetch = conversation.session_fetch
            if case.assert_ and fetch is not None and conversation.value.stop != "error":
                try:
                    with anyio.fail_after(case.timeout):
                        object_context = await fetch()
                except (ProctorError, TimeoutError) as exc:
                    warnings.append(f"could not fetch the agent's object context: {exc or 'timed out'}")
            await conversation.close()
            if conversation.value.stop != "error":
                final = CheckContext(
                    None, None, list(conversation.value.messages), case.name, judge=judge,
                    object_context=object_context, state=graph,
                )  # fmt: skip
                for spec_ in case.assert_:
                    _add(checks, pending, spec_, final)
                await _gather(checks, pending)
        if lease is not None:
            warnings.extend(lease.warnings)
    except ProctorError as exc:  # the arm's graph could not be made ready
        conv = Conversation(arm=arm, stop="error", error=str(exc), error_type=type(exc).__name__, seed=seed)
        return _arm_data(conv, [], None, [], [str(exc)], spec, case)
    conv = conversation.value
    if conv.stop == "error":
        _discard_all(pending)
        done = [c for c in checks if c is not None]
        done.extend(CheckResult(s.display_name(), s.type, "skipped", None, s.weight, "not run: the conversation failed")
                    for s in case.assert_)  # fmt: skip
        return _arm_data(conv, done, None, [], warnings, spec, case)
    from proctor.checks._transcript import judge_transcript

    transcript = await judge_transcript(judge, conv.messages, spec.tasks)
    done = [c for c in checks if c is not None]
    faults = simulator_checks(conv, spec)
    if conv.stop == "simulator_error" and conv.error:
        faults.append(conv.error)
    return _arm_data(conv, done, transcript, faults, warnings, spec, case)


def _arm_data(
    conv: Conversation,
    checks: list[CheckResult],
    transcript: CheckResult | None,
    faults: list[str],
    warnings: list[str],
    spec: SimulateSpec,
    case: Case,
) -> dict[str, Any]:
    latencies = [m.latency_ms for m in conv.messages if m.role == "assistant" and m.latency_ms is not None]
    assertion_checks = [c for c in checks if c.score is not None]
    weight = sum(c.weight for c in assertion_checks)
    assertions = sum(c.score * c.weight for c in assertion_checks if c.score is not None) / weight if weight else None
    composite = composite_score(
        timing=timing_score(spec.aspirational_average, latencies),
        tasks=transcript.score if transcript is not None else None,
        assertions=assertions,
        failures=conv.retries,
        weights=spec.scoring.weights.model_dump(),
        penalty_per_failure=spec.scoring.penalty_per_failure,
        max_penalty=spec.scoring.max_penalty,
    )
    all_checks = [*checks, *([transcript] if transcript is not None else [])]
    if conv.stop == "error":
        status = "error"
    elif faults or conv.stop == "simulator_error":
        status = "inconclusive"
    elif any(c.status == "error" for c in all_checks):
        status = "error"
    elif composite.overall is None:
        status = "passed"
        warnings.append("nothing was scored (no timing target, tasks judged or assertions): passes unverified")
    else:
        status = "passed" if composite.overall >= case.scoring.pass_threshold else "failed"
    if conv.stop == "max_turns":
        warnings.append(f"aborted: no sign-off within {spec.max_turns} messages")
    return {
        "arm": conv.arm,
        "status": status,
        "stop": conv.stop,
        "seed": conv.seed,
        "error": conv.error,
        "error_type": conv.error_type,
        "composite": composite.to_dict(),
        "simulator_faults": faults,
        "simulator_usage": conv.simulator_usage,
        "retries": conv.retries,
        "usage": conv.usage,
        "trace_ids": conv.trace_ids,
        "messages": conv.messages,
        "checks": all_checks,
        "warnings": warnings,
    }


class _Opened:
    """A finished conversation with its still-open session (closed after the object context is read)."""

    def __init__(self, value: Conversation, session: Any) -> None:
        self.value = value
        self.session = session
        self.session_fetch = getattr(session, "object_context", None) if session is not None else None

    async def close(self) -> None:
        if self.session is not None:
            with anyio.CancelScope(shield=True):
                await self.session.aclose()


async def _converse(
    case: Case,
    spec: SimulateSpec,
    arm: Arm,
    target: Target,
    context: SessionContext,
    simulator: Simulator,
    seed: int,
    checks: list[CheckResult | None],
    pending: list[tuple[int, Awaitable[CheckResult]]],
) -> _Opened:
    from proctor.drivers.simulator import Conversation

    try:
        with anyio.fail_after(case.timeout):
            session = await target.open_session(context)
    except (TimeoutError, ProctorError) as exc:
        message = f"could not open a session: {exc or 'timed out'}"
        kind = "TargetTimeout" if isinstance(exc, TimeoutError) else type(exc).__name__
        return _Opened(Conversation(arm=arm, stop="error", error=message, error_type=kind, seed=seed), None)
    prefix: list[Message] = []
    retries = 0
    try:
        if case.seeds:
            from proctor._seeding import deliver_seeds

            retries += await deliver_seeds(target, context, session, case)
        for index, turn in enumerate(case.turns):  # scripted turns first, with their checks
            prefix.append(Message("user", turn.content))
            try:
                with anyio.fail_after(case.timeout):
                    reply = await session.send(turn.content)
            except TimeoutError:
                raise TargetTimeout(f"no reply within {case.timeout:g} s") from None
            retries += reply.retries
            prefix.append(Message("assistant", reply.text, reply.tool_calls, reply.latency_ms))
            turn_context = CheckContext(reply, index, list(prefix), case.name)
            for assertion in turn.assert_:
                _add(checks, pending, assertion, turn_context)
    except ProctorError as exc:
        conv = Conversation(arm=arm, messages=prefix, stop="error", error=str(exc), seed=seed)
        conv.error_type = type(exc).__name__
        return _Opened(conv, session)
    conv = await simulator.converse(session, spec, arm, seed=seed, reply_timeout=case.timeout, prefix=prefix)
    conv.retries += retries
    return _Opened(conv, session)


def _add(
    checks: list[CheckResult | None],
    pending: list[tuple[int, Awaitable[CheckResult]]],
    spec: AssertionSpec,
    context: CheckContext,
) -> None:
    result = run_check(spec, context)
    if inspect.isawaitable(result):
        pending.append((len(checks), result))
        checks.append(None)
    else:
        checks.append(result)


async def _gather(checks: list[CheckResult | None], pending: list[tuple[int, Awaitable[CheckResult]]]) -> None:
    async def fill(index: int, awaitable: Awaitable[CheckResult]) -> None:
        checks[index] = await awaitable

    async with anyio.create_task_group() as group:
        for index, awaitable in pending:
            group.start_soon(fill, index, awaitable)
    pending.clear()


def _discard_all(pending: list[tuple[int, Awaitable[CheckResult]]]) -> None:
    for _, awaitable in pending:
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()
    pending.clear()
