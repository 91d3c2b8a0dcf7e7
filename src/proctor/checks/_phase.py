"""The one check phase: every assertion of a conversation, checked over its transcript.

Trials, simulated arms, `proctor rescore`, recorded data and the online service all call
`check_transcript` (the service's prechecks its synchronous twin, `check_transcript_now`). What it does:

* each turn's assertions run on that turn's reply, seeing the conversation up to that reply;
* the case's own assertions and its `rubric:` file run over the whole conversation, with the agent's
  object context and the trial's state backend;
* checks that call a model run concurrently (within the judge model's own limits), each within
  `judge_timeout` when one is given; deterministic checks finish without suspending.

When the conversation failed (`PhaseContext.failure`), what can still be checked is: deterministic
checks of the turns that were answered. Everything else is `skipped` with the reason, and no judge is
called (nor paid for).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from proctor._redact import redact
from proctor._slots import slot_init
from proctor.checks._registry import CheckContext
from proctor.checks._result import CheckResult
from proctor.checks._run import _error, _start
from proctor.suite import AssertionSpec, Case, Rubric
from proctor.transcript import AgentReply, Message

if TYPE_CHECKING:
    from proctor.checks._judging import Judge

__all__ = ["Checklist", "PhaseContext", "check_transcript", "check_transcript_now", "rubric_spec", "skipped"]

Reuse = Callable[[AssertionSpec, "int | None"], "CheckResult | None"]
"""Given an assertion and its turn (`None`: the whole conversation), a result to keep instead of
running it (`proctor rescore` keeps stored results this way), or `None` to run it."""


def rubric_spec(rubric: Rubric) -> AssertionSpec:
    """The assertion standing for a case's `rubric:` file."""
    return AssertionSpec(type="rubric", name=f"rubric: {rubric.path.name}")


def skipped(spec: AssertionSpec, turn: int | None, reason: str) -> CheckResult:
    """The `skipped` result of an assertion that was not run, with the reason."""
    return CheckResult(spec.display_name(), spec.type, "skipped", None, spec.weight, reason, turn)


@slot_init  # one per case of a run (`proctor.run.plan`): built ~3x sooner than by the frozen dataclass's own
@dataclass(frozen=True, slots=True)
class Checklist:
    """The assertions of one conversation."""

    name: str
    """The case (or event) name the checks see."""
    turns: tuple[tuple[AssertionSpec, ...], ...] = ()
    """Each turn's assertions, in turn order."""
    conversation: tuple[AssertionSpec, ...] = ()
    """Assertions over the whole conversation (a case's own `assert`)."""
    rubric: Rubric | None = None
    """A rubric file graded over the whole conversation."""

    @classmethod
    def of(cls, case: Case) -> Checklist:
        """A case's assertions: its turns', its own and its rubric file."""
        turns = tuple([tuple(turn.assert_) for turn in case.turns])  # a list made, not a generator run
        return cls(case.name, turns, tuple(case.assert_), case.rubric)

    def all_skipped(self, reason: str) -> list[CheckResult]:
        """Every assertion `skipped` with `reason` (a trial that could not start)."""
        out = [skipped(spec, index, reason) for index, specs in enumerate(self.turns) for spec in specs]
        out.extend(skipped(spec, None, reason) for spec in self.conversation)
        if self.rubric is not None:
            out.append(skipped(rubric_spec(self.rubric), None, reason))
        return out


@dataclass(frozen=True, slots=True)
class PhaseContext:
    """What the checks may use besides the transcript."""

    judge: Judge | None = None
    """The judge model; `None`: judged checks are `skipped` with a hint."""
    object_context: Any = None
    """The agent's object context, for the conversation's assertions."""
    state: Any = None
    """The trial's state backend (its graph), for state assertions."""
    failure: str | None = None
    """Why the conversation failed, when it did."""
    judge_timeout: float | None = None
    """Seconds a check that calls a model may take; past it the check is an `error`."""
    reuse: Reuse | None = None
    """Results to keep instead of running (see `Reuse`)."""


_NO_CONTEXT = PhaseContext()
"""The context of a conversation checked with nothing besides its transcript (no judge, state, failure)."""

_Item = tuple[AssertionSpec, "CheckContext | None", str]
"""An assertion, the context it runs in (`None`: not run) and the reason it is skipped if not run."""


def _plan(checks: Checklist, transcript: Sequence[Message], context: PhaseContext) -> list[_Item]:
    judge, failure = context.judge, context.failure
    items: list[_Item] = []
    if checks.turns:  # plain loops, positional arguments: this runs once per trial of every case with checks
        replies: list[int] = []
        for index, message in enumerate(transcript):
            if message.role == "assistant":
                replies.append(index)
        for turn, specs in enumerate(checks.turns):
            if not specs:
                continue
            if turn < len(replies):
                at = replies[turn]
                message = transcript[at]
                reply = AgentReply(message.content, list(message.tool_calls), message.latency_ms or 0.0)
                upto = transcript[: at + 1]  # a copy up to the reply (a slice of a list is already one)
                if not isinstance(upto, list):
                    upto = list(upto)
                turn_context = CheckContext(reply, turn, upto, checks.name, None, judge)
                for spec in specs:
                    items.append((spec, turn_context, ""))
                continue
            why = (
                f"not run: the conversation ended before turn {turn + 1}"
                if failure is not None
                else f"not run: the transcript has no reply to turn {turn + 1}"
            )
            items.extend((spec, None, why) for spec in specs)
    if not checks.conversation and checks.rubric is None:
        return items
    whole: CheckContext | None = None
    if failure is None:
        whole = CheckContext(
            None, None, list(transcript), checks.name, judge=judge, object_context=context.object_context,
            state=context.state,
        )  # fmt: skip
    items.extend((spec, whole, "not run: the conversation failed") for spec in checks.conversation)
    if checks.rubric is not None:
        rubric = (
            None if whole is None else CheckContext(None, None, list(transcript), checks.name, checks.rubric, judge)
        )
        items.append((rubric_spec(checks.rubric), rubric, "not run: the conversation failed"))
    return items


def _turn(spec: AssertionSpec, check_context: CheckContext | None, checks: Checklist) -> int | None:
    if check_context is not None:
        return check_context.turn
    for index, specs in enumerate(checks.turns):
        if any(candidate is spec for candidate in specs):
            return index
    return None


async def check_transcript(
    checks: Checklist | Case, transcript: Sequence[Message], context: PhaseContext | None = None
) -> list[CheckResult]:
    """Check one conversation: every assertion's result, in order (turns, the conversation's, the rubric).

    Never raises for a check's failure: a check that could not run is an `error` result.
    """
    checklist = checks if isinstance(checks, Checklist) else Checklist.of(checks)
    context = context or _NO_CONTEXT
    results: list[CheckResult | None] = []
    pending: list[tuple[int, AssertionSpec, CheckContext, Awaitable[CheckResult]]] = []
    for spec, check_context, why in _plan(checklist, transcript, context):
        kept = context.reuse(spec, _turn(spec, check_context, checklist)) if context.reuse is not None else None
        if kept is not None:
            results.append(kept)
        elif check_context is None:
            results.append(skipped(spec, _turn(spec, None, checklist), why))
        else:
            started = time.perf_counter_ns()
            outcome = _start(spec, check_context)
            if isinstance(outcome, CheckResult):
                outcome.duration_ns = time.perf_counter_ns() - started
                results.append(outcome)
            elif context.failure is not None:  # no judging (nor paying for it) when the trial is an error
                _close(outcome)
                results.append(skipped(spec, check_context.turn, "not judged: the conversation failed"))
            else:
                pending.append((len(results), spec, check_context, outcome))
                results.append(None)
    if pending:
        await _finish_pending(results, pending, context.judge_timeout)
    done: list[CheckResult] = []
    for result in results:
        if result is not None:
            done.append(_redacted(result) if result.status == "error" else result)
    return done


def _redacted(result: CheckResult) -> CheckResult:
    """A check that could not run may quote what failed (a judge endpoint with its key): never a secret."""
    if result.status == "error":
        result.reason = redact(result.reason)
        if "traceback" in result.details:
            result.details["traceback"] = redact(result.details["traceback"])
    return result


def check_transcript_now(
    checks: Checklist, transcript: Sequence[Message], context: PhaseContext | None = None
) -> list[CheckResult]:
    """`check_transcript` for deterministic checks only, without an event loop (the service's prechecks).

    A check that would call a model is an `error` here.
    """
    context = context or _NO_CONTEXT
    results: list[CheckResult] = []
    for spec, check_context, why in _plan(checks, transcript, context):
        if check_context is None:
            results.append(skipped(spec, _turn(spec, None, checks), why))
            continue
        started = time.perf_counter_ns()
        outcome = _start(spec, check_context)
        if not isinstance(outcome, CheckResult):
            _close(outcome)
            outcome = _error(spec, check_context, TypeError(f"{spec.type!r} calls a model: use check_transcript"))
        outcome.duration_ns = time.perf_counter_ns() - started
        results.append(_redacted(outcome))
    return results


async def _finish_pending(
    results: list[CheckResult | None],
    pending: list[tuple[int, AssertionSpec, CheckContext, Awaitable[CheckResult]]],
    limit_s: float | None,
) -> None:
    async def finish(
        index: int, spec: AssertionSpec, check_context: CheckContext, awaitable: Awaitable[CheckResult]
    ) -> None:
        started = time.perf_counter_ns()
        result: CheckResult | None = None
        if limit_s is None:  # no time limit: no cancel scope either
            result = await _outcome(spec, check_context, awaitable)
        else:
            with anyio.move_on_after(limit_s):
                result = await _outcome(spec, check_context, awaitable)
        if result is None:
            reason = f"check could not run: no result within {limit_s:g} s"
            result = CheckResult(spec.display_name(), spec.type, "error", None, spec.weight, reason, check_context.turn)
        result.duration_ns = time.perf_counter_ns() - started
        results[index] = result

    if len(pending) == 1:  # one judged check (the common case): awaited here, without a task and its loop hops
        await finish(*pending[0])
        return
    async with anyio.create_task_group() as group:
        for index, spec, check_context, awaitable in pending:
            group.start_soon(finish, index, spec, check_context, awaitable)


async def _outcome(spec: AssertionSpec, check_context: CheckContext, awaitable: Awaitable[CheckResult]) -> CheckResult:
    """The check's result, or its `error` result when it raised."""
    try:
        return await awaitable
    except Exception as exc:
        return _error(spec, check_context, exc)


def _close(awaitable: Awaitable[CheckResult]) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()  # a coroutine that will never run: close it so it is not reported as never awaited
