"""Run one assertion against a context and return its `CheckResult`, whatever happens."""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Awaitable

from proctor.checks._registry import CheckContext, CheckType, Outcome, registry
from proctor.checks._result import CheckResult
from proctor.suite import AssertionSpec

__all__ = ["run_check", "run_check_now"]

_RESULTS = (Outcome, CheckResult)
"""What a check returns when it is done (a tuple: `Outcome | CheckResult` would build the union on each call)."""


async def run_check(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    """Run `spec` on `context`.

    Deterministic checks finish without suspending (no event-loop hop on the hot path); checks that
    call a model are awaited. An exception inside a check becomes an `error` result with the exception's
    message (its traceback in `details`): a check that could not run is never scored.
    """
    started = _start(spec, context)
    if isinstance(started, CheckResult):
        return started
    try:
        return await started
    except Exception as exc:
        return _error(spec, context, exc)


def run_check_now(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    """Run a deterministic check synchronously (e.g. the service's prechecks, in a dry run).

    A check that would call a model is an `error` here: it needs `run_check`.
    """
    started = _start(spec, context)
    if isinstance(started, CheckResult):
        return started
    close = getattr(started, "close", None)
    if close is not None:
        close()  # never awaited: close it so it is not reported as such
    return _error(spec, context, TypeError(f"{spec.type!r} calls a model: run it with run_check"))


def _start(spec: AssertionSpec, context: CheckContext) -> CheckResult | Awaitable[CheckResult]:
    try:
        check, negated = registry.resolve(spec.type)
        produced = check.function(spec, context)
    except Exception as exc:  # failures are data: the run goes on
        return _error(spec, context, exc)
    if not isinstance(produced, _RESULTS) and inspect.isawaitable(produced):
        return produced
    return _finish(spec, context, check, negated, produced)


def _finish(
    spec: AssertionSpec,
    context: CheckContext,
    check: CheckType,
    negated: bool,
    produced: Outcome | CheckResult,
) -> CheckResult:
    if isinstance(produced, CheckResult):
        return produced
    ok = produced.ok != negated
    score = produced.score if produced.score is not None else (1.0 if produced.ok else 0.0)
    if negated:
        score = 1.0 - score
    reason = f"expected reply {'not ' if negated else ''}{produced.expectation}; {produced.observation}"
    # positional (name, type, status, score, weight, reason, turn, details): every deterministic check ends here
    return CheckResult(
        spec.display_name(), spec.type, "passed" if ok else "failed", score, spec.weight, reason, context.turn,
        produced.details,
    )  # fmt: skip


def _error(spec: AssertionSpec, context: CheckContext, exc: Exception) -> CheckResult:
    return CheckResult(
        name=spec.display_name(),
        type=spec.type,
        status="error",
        score=None,
        weight=spec.weight,
        reason=f"check could not run: {type(exc).__name__}: {exc}",
        turn=context.turn,
        details={"traceback": "".join(traceback.format_exception(exc)).rstrip()},
    )
