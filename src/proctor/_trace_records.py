"""The notes of a traced trial (`proctor._trace_context` collects them, `proctor.traces` exports them).

Kept apart from the context so that a run that exports no traces never builds these classes (three slotted
dataclasses: ~9 M instructions of `proctor run`'s start-up, their methods generated at import); the
context's hooks import them on the first note of a traced trial.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from proctor.transcript import AgentReply, Usage

__all__ = ["ModelCall", "NotedReply", "TrialTrace"]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call of a model Proctor uses (judge, simulated user, tool simulator), for a GenAI span."""

    role: str
    """`judge`, `simulator`, ... (the role the model was called in)."""
    model: str
    """`provider/model`."""
    started_ns: int
    """Start, in nanoseconds since the epoch."""
    ended_ns: int
    """End, in nanoseconds since the epoch."""
    usage: Usage | None
    """Tokens, when known."""
    cached: bool = False
    """Whether the cache answered (no request was sent)."""


@dataclass(frozen=True, slots=True)
class NotedReply:
    """One agent reply with the wall-clock time it arrived."""

    sent: str
    """The user message it answers."""
    reply: AgentReply
    """The reply as the target returned it."""
    ended_ns: int
    """When it arrived, in nanoseconds since the epoch (it was sent `reply.latency_ms` earlier)."""


@dataclass(slots=True)
class TrialTrace:
    """What one traced trial carries: headers for the agent and notes for the exporter."""

    headers: Mapping[str, str]
    """`traceparent` (and `tracestate`) naming the trial's span."""
    replies: list[NotedReply] = field(default_factory=list)
    """The agent's replies, in order."""
    model_calls: list[ModelCall] = field(default_factory=list)
    """Judge and simulator calls, in the order they ended."""
