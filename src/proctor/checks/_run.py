"""Run one assertion against a context and return its `CheckResult`, whatever happens."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable

from proctor.checks._registry import CheckContext, CheckType, Outcome, registry
from proctor.checks._result import CheckResult
from proctor.suite import AssertionSpec

__all__ = ["run_check"]


def run_check(spec: AssertionSpec, context: CheckContext) -> CheckResult | Awaitable[CheckResult]:
    """Run `spec` on `context`.

    Deterministic checks return a `CheckResult` directly (no event-loop hop on the hot path); checks
    that call a model return an awaitable. An exception inside a check becomes an `error` result with
    the exception's message: a check that could not run is never scored.
    """
    try:
        check, negated = registry.resolve(spec.type)
        produced = check.function(spec, context)
    except Exception as exc:  # failures are data: the run goes on
        return _error(spec, context, exc)
    if inspect.isawaitable(produced):
        return _await(spec, context, produced)
    return _finish(spec, context, check, negated, produced)


async def _await(spec: AssertionSpec, context: CheckContext, pending: Awaitable[CheckResult]) -> CheckResult:
    try:
        return await pending
    except Exception as exc:
        return _error(spec, context, exc)


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
    return CheckResult(
        name=spec.display_name(),
        type=spec.type,
        status="passed" if ok else "failed",
        score=score,
        weight=spec.weight,
        reason=f"expected reply {'not ' if negated else ''}{produced.expectation}; {produced.observation}",
        turn=context.turn,
        details=produced.details,
    )


def _error(spec: AssertionSpec, context: CheckContext, exc: Exception) -> CheckResult:
    return CheckResult(
        name=spec.display_name(),
        type=spec.type,
        status="error",
        score=None,
        weight=spec.weight,
        reason=f"check could not run: {type(exc).__name__}: {exc}",
        turn=context.turn,
    )
