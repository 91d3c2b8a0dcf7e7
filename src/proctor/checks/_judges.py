"""LLM-judged checks: `llm-rubric` on a reply and `rubric` over the whole conversation.

They are recognised and validated now; until a judge model is configured they report `skipped` with
the reason, never a guessed score.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult
from proctor.suite import AssertionSpec

__all__ = ["NO_JUDGE_REASON"]

NO_JUDGE_REASON = "no judge model configured"


def _skipped(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    return CheckResult(
        name=spec.display_name(),
        type=spec.type,
        status="skipped",
        score=None,
        weight=spec.weight,
        reason=NO_JUDGE_REASON,
        turn=context.turn,
    )


registry.register(
    CheckType(
        "llm-rubric",
        "judges",
        "An LLM judge grades the reply against the criteria given as the value.",
        _skipped,
        value=TypeAdapter(Annotated[str, Field(min_length=1)]),
        negatable=False,
        needs_model=True,
    )
)
registry.register(
    CheckType(
        "rubric",
        "judges",
        "An LLM judge grades the whole conversation against the case's rubric file (`rubric:`).",
        _skipped,
        negatable=False,
        needs_model=True,
        scope="conversation",
    )
)
