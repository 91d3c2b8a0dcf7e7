"""One trial of a simulated-user case: its arms, the checks of each, Embabel's composite score.

Each arm (`withheld`, `supplied`, or those the case lists) runs in a fresh agent session (and, when the
case uses state, in its own clean graph). Per arm: the scripted `turns` (if any) are played first
(`proctor.drivers.script`), then the simulator plays the user on the same conversation; the one check
phase checks the arm's transcript (scripted turns' checks, the case's `assert` and rubric), the
transcript judge scores each task, and the arm's composite is computed (`proctor.scoring`).

The trial's score and status are those of its primary arm (`supplied` when it ran, the one with all the
information, else the first arm); every arm is in `TrialResult.simulation` with its transcript, checks
and composite components, and the difference `supplied - withheld` of each component. A trial is
`error` when any arm's conversation failed on the agent's side (this wins over a simulator fault);
`inconclusive` when the simulator misbehaved (then it is re-run with a new seed, `reruns` times),
never counted as the agent's failure; `skipped` when no simulator model is configured.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.checks import CheckResult, PhaseContext, check_transcript
from proctor.checks._transcript import judge_transcript
from proctor.drivers.conversation import Conversation
from proctor.drivers.simulator import NO_SIMULATOR_HINT, Simulator, judge_requests, simulator_checks
from proctor.errors import ModelError, ProctorError
from proctor.results import TrialResult
from proctor.run.prepare import prepare
from proctor.run.trial import case_key, converse, run_scenario_trial
from proctor.scoring import Composite, arm_status, composite_score, timing_score, weighted_score
from proctor.suite import Arm, Case, SimulateSpec
from proctor.targets import SessionContext, Target
from proctor.transcript import Usage

if TYPE_CHECKING:
    from proctor.checks._judging import Judge
    from proctor.state import StateManager

__all__ = ["ArmResult", "run_simulated_trial"]


@dataclass(slots=True)
class ArmResult:
    """One arm's conversation, checks and composite score."""

    conversation: Conversation
    """What was said, and why it ended."""
    status: str
    """`passed`, `failed`, `error` or `inconclusive` (the simulator misbehaved)."""
    composite: Composite
    """Embabel's composite score with its components."""
    checks: list[CheckResult] = field(default_factory=list)
    """The arm's check results, the transcript judge's last."""
    faults: list[str] = field(default_factory=list)
    """The simulator's own faults."""
    reason: str | None = None
    """Why the arm is `skipped` (nothing was scored)."""
    warnings: list[str] = field(default_factory=list)
    """Things a reader should know."""

    def to_dict(self) -> dict[str, Any]:
        """The arm's JSON form (in `TrialResult.simulation`)."""
        conv = self.conversation
        return {
            "status": self.status,
            "score": self.composite.overall,
            "stop": conv.stop,
            "aborted": conv.stop == "max_turns",
            "seed": conv.seed,
            "error": conv.error,
            "composite": self.composite.to_dict(),
            "simulator_faults": self.faults,
            "simulator_usage": conv.simulator_usage.to_dict(),
            "simulator_calls": conv.simulator_calls,
            "simulator_cost_usd": conv.simulator_cost_usd,
            "retries": conv.retries,
            "turns": [m.to_dict() for m in conv.messages],
            "checks": [c.to_dict() for c in self.checks],
        }


def _base_seed(context: SessionContext, key: str) -> int:
    seed = context.variables.get("seed")
    if isinstance(seed, int):
        return seed
    digest = hashlib.sha256(f"{key}:{context.trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _primary(arms: Sequence[Arm]) -> Arm:
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
    spec = case.simulate
    assert spec is not None
    if case.script:  # a scenario script: one conversation, its stretches played by the simulator
        seed = _base_seed(context, case_key(case))
        return await run_scenario_trial(case, trial, target, context, judge, simulator, states, seed=seed)
    started = time.perf_counter()
    if simulator is None:
        return TrialResult(case_key=case_key(case), trial=trial, status="skipped", score=None, reason=NO_SIMULATOR_HINT)
    seed = _base_seed(context, case_key(case))
    warnings: list[str] = []
    arms: dict[str, ArmResult] = {}
    for attempt in range(spec.reruns + 1):
        arms = {}
        for arm in spec.arms:
            arms[arm] = await _run_arm(case, spec, arm, target, context, judge, simulator, seed + attempt, states)
        faults = _faults(arms)
        if not faults or attempt == spec.reruns:
            break
        warnings.append(f"attempt {attempt + 1} was inconclusive ({'; '.join(faults)}); re-run with a new seed")
    return _trial_result(case, trial, spec, simulator, arms, warnings, started)


def _faults(arms: dict[str, ArmResult]) -> list[str]:
    return [f"{name}: {problem}" for name, arm in arms.items() for problem in arm.faults]


def _trial_result(
    case: Case,
    trial: int,
    spec: SimulateSpec,
    simulator: Simulator,
    arms: dict[str, ArmResult],
    warnings: list[str],
    started: float,
) -> TrialResult:
    primary = arms[_primary(spec.arms)]
    statuses = [arm.status for arm in arms.values()]
    reason = primary.reason
    status, score = primary.status, primary.composite.overall
    if "error" in statuses:  # the agent (or a check) failed: that is the finding, whatever the simulator did
        status = "error"
    elif "inconclusive" in statuses:
        status, score = "inconclusive", None
        reason = "; ".join(_faults(arms)) or next(
            str(arm.conversation.error) for arm in arms.values() if arm.status == "inconclusive"
        )
    failed = [arm for arm in arms.values() if arm.status == "error" and arm.conversation.error]
    simulation = {
        "primary": _primary(spec.arms),
        "simulator": simulator.name,
        "attempts": len(warnings) + 1,
        "arms": {name: arm.to_dict() for name, arm in arms.items()},
        "difference": _difference(arms),
    }
    for name, arm in arms.items():
        warnings.extend(f"{name}: {w}" for w in arm.warnings)
    conversations = [arm.conversation for arm in arms.values()]
    return TrialResult(
        case_key=case_key(case),
        trial=trial,
        status=status,
        score=score,
        turns=primary.conversation.messages,
        checks=primary.checks,
        error="; ".join(f"{arm.conversation.arm}: {arm.conversation.error}" for arm in failed) or None,
        warnings=warnings,
        retries=sum(c.retries for c in conversations),
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=sum((c.usage for c in conversations), Usage()),
        trace_ids=[t for c in conversations for t in c.trace_ids],
        error_type=next((arm.conversation.error_type for arm in failed if arm.conversation.error_type), None),
        reason=reason,
        simulation=simulation,
    )


def _difference(arms: dict[str, ArmResult]) -> dict[str, float | None] | None:
    """`supplied - withheld` of each composite component (`None` where either is missing)."""
    if "supplied" not in arms or "withheld" not in arms:
        return None
    out: dict[str, float | None] = {}
    for key in ("overall", "timing", "tasks", "assertions"):
        a, b = getattr(arms["supplied"].composite, key), getattr(arms["withheld"].composite, key)
        out[key] = None if a is None or b is None else round(a - b, 6)
    return out


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
) -> ArmResult:
    try:
        async with prepare(case, target, context, states) as prepared:
            conv = await converse(case, prepared, Conversation(arm=arm, seed=seed))
            if conv.error is None and prepared.session is not None:
                conv = await simulator.converse(
                    prepared.session, spec, arm, seed=seed, reply_timeout=case.timeout, conversation=conv
                )
            failure = conv.error if conv.stop == "error" else None
            object_context = None if failure else await prepared.object_context(case)
            await prepared.close_session()
            phase = PhaseContext(judge, object_context, prepared.graph, failure=failure)
            checks = await check_transcript(case, conv.messages, phase)
    except ProctorError as exc:  # the arm's graph could not be made ready
        conv = Conversation(arm=arm, seed=seed).fail("error", str(exc), type(exc).__name__)
        return _arm_result(conv, [], None, [], [str(exc)], spec, case)
    transcript = None if failure else await judge_transcript(judge, conv.messages, spec.tasks, facts=spec.facts)
    warnings = list(prepared.warnings)
    faults = [] if failure else simulator_checks(conv, spec, asked=await _asked(judge, conv, spec, warnings))
    if conv.stop == "simulator_error" and conv.error:
        faults.append(conv.error)
    return _arm_result(conv, checks, transcript, faults, warnings, spec, case)


async def _asked(
    judge: Judge | None, conv: Conversation, spec: SimulateSpec, warnings: list[str]
) -> dict[tuple[int, str], bool] | None:
    """The judge's decisions on which revealed facts the agent asked for (`None`: the keyword rule decides)."""
    if judge is None or conv.arm != "supplied":
        return None
    try:
        return await judge_requests(judge.model, conv, spec)
    except ModelError as exc:
        warnings.append(f"the judge could not decide which facts were asked for ({exc}): the keyword rule decided")
        return None


def _arm_result(
    conv: Conversation,
    checks: list[CheckResult],
    transcript: CheckResult | None,
    faults: list[str],
    warnings: list[str],
    spec: SimulateSpec,
    case: Case,
) -> ArmResult:
    latencies = [m.latency_ms for m in conv.messages if m.role == "assistant" and m.latency_ms is not None]
    composite = composite_score(
        timing=timing_score(spec.aspirational_average, latencies),
        tasks=transcript.score if transcript is not None else None,
        assertions=weighted_score(checks),
        failures=conv.retries,
        weights=spec.scoring.weights.model_dump(),
        penalty_per_failure=spec.scoring.penalty_per_failure,
        max_penalty=spec.scoring.max_penalty,
    )
    all_checks = [*checks, *([transcript] if transcript is not None else [])]
    status, reason = arm_status(conv.stop, composite, all_checks, faults, pass_threshold=case.scoring.pass_threshold)
    warnings = list(warnings)
    if conv.stop == "max_turns":
        warnings.append(f"aborted: no sign-off within {spec.max_turns} messages")
    return ArmResult(conv, status, composite, all_checks, faults, reason, warnings)
