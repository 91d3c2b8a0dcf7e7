"""Timing checks on how fast the agent answered."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from proctor.checks._registry import CheckContext, CheckType, Outcome, registry
from proctor.suite import AssertionSpec

__all__: list[str] = []


def _check_latency(spec: AssertionSpec, context: CheckContext) -> Outcome:
    if context.reply is None:
        raise ValueError("this check needs a turn's reply")
    took = context.reply.latency_ms
    return Outcome(took <= spec.value, f"to take at most {spec.value:g} ms", f"it took {took:.1f} ms")


registry.register(
    CheckType(
        "latency",
        "timing",
        "The turn's reply arrived within the value, in milliseconds.",
        _check_latency,
        value=TypeAdapter(Annotated[float, Field(gt=0)]),
    )
)
