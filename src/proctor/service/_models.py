"""The service's request and response models: the Go Eval Agent's JSON, plus an `errors` list.

The same pydantic types validate HTTP bodies and stream payloads, serialise the results and generate
the committed OpenAPI schema. Unknown request fields are ignored, so producers may add their own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Agent",
    "EvaluationRequest",
    "EvaluationResult",
    "HealthResponse",
    "Interaction",
    "Stage",
    "StageError",
    "Verdict",
]

Verdict = Literal["pass", "review", "fail", "error"]
"""`pass`, `review`, `fail` by confidence band; `error` when no judge could run, so nothing was decided."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)


class _Output(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)


class Agent(_Lenient):
    """The agent that produced the answer (recorded, not used in scoring)."""

    name: str = ""
    """The agent's name."""
    type: str = ""
    """Its kind, e.g. `rag`."""
    version: str = ""
    """Its version."""


class Interaction(_Lenient):
    """What was asked and answered."""

    user_query: str = Field(min_length=1)
    """The user's query."""
    context: str = ""
    """Retrieved documents or other grounding; the faithfulness judge needs it."""
    answer: str
    """The agent's answer; an empty answer is evaluated (and fails), not rejected."""


class EvaluationRequest(_Lenient):
    """One agent response to evaluate: an HTTP body, or a stream entry's `payload`."""

    event_id: str = Field(min_length=1)
    """The caller's id for the event; the result's `id`."""
    event_type: str = "agent_response"
    """The event's kind."""
    agent: Agent = Field(default_factory=Agent)
    """The agent that answered."""
    interaction: Interaction
    """The query, context and answer."""


class Stage(_Output):
    """One check that ran and produced a score."""

    name: str
    """`length-checker`, `overlap-checker`, `format-checker`, or `<judge>-judge`."""
    score: float
    """0..1."""
    reason: str
    """Why this score."""
    duration_ns: int
    """How long the check took, in nanoseconds."""


class StageError(_Output):
    """A check that failed or could not run: reported here, left out of every average."""

    name: str
    """The stage name, as in `stages`."""
    status: Literal["error", "skipped"]
    """`error`: it ran and failed (timeout, unusable output, unreachable model); `skipped`: it could not
    run (no judge model configured, no context for faithfulness, no content word to overlap)."""
    reason: str
    """What went wrong."""
    duration_ns: int = 0
    """How long it took before failing, in nanoseconds."""


class EvaluationResult(_Output):
    """The verdict on one event: the Go Eval Agent's shape plus `errors`."""

    id: str
    """The request's `event_id`."""
    stages: list[Stage]
    """Every check that produced a score: prechecks first, then judges (none after an early exit)."""
    confidence: float | None
    """`precheck_weight` x mean precheck score + `judge_weight` x mean judge score; on an early exit, the
    mean precheck score; `null` when the verdict is `error`."""
    verdict: Verdict
    """`pass` (confidence > 0.8), `review` (> 0.5), `fail`, or `error` (no judge could run)."""
    errors: list[StageError] = Field(default_factory=list)
    """Checks that failed or could not run, with the reason."""


class HealthResponse(_Output):
    """`GET /api/v1/health`."""

    status: Literal["ok"]
    """Always `ok` while the process serves."""
    version: str
    """Proctor's version."""
