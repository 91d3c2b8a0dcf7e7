"""The trace context of the trial in progress: what the agent is sent, what the trial's spans are built from.

A leaf (it imports nothing from Proctor) because the layers that see a trial's requests and replies sit
below the exporter: targets add `trace_headers()` (W3C `traceparent`/`tracestate`) to every request they
send the agent, the conversation driver notes each reply, managed models note each judge or simulator
call. `proctor.traces` sets the context for a trial (`tracing`) and turns what was noted into spans.

When no run exports traces the context variable holds `None`: each hook is one `ContextVar.get()`.
Task groups copy the context into their tasks, and the lists below are shared, so notes made in a
trial's subtasks land in the trial's context.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from proctor.transcript import AgentReply, Usage

__all__ = [
    "ModelCall",
    "NotedReply",
    "TrialTrace",
    "current",
    "note_model_call",
    "note_reply",
    "trace_headers",
    "tracing",
]


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


_CURRENT: ContextVar[TrialTrace | None] = ContextVar("proctor_trial_trace", default=None)

_NO_HEADERS: Mapping[str, str] = {}


def current() -> TrialTrace | None:
    """The trial trace of the running task, or `None` when nothing is traced."""
    return _CURRENT.get()


@contextmanager
def tracing(trace: TrialTrace) -> Iterator[TrialTrace]:
    """Make `trace` the current trial trace inside the block (and in tasks started inside it)."""
    token = _CURRENT.set(trace)
    try:
        yield trace
    finally:
        _CURRENT.reset(token)


def trace_headers() -> Mapping[str, str]:
    """The W3C trace headers to send the agent now (empty when nothing is traced)."""
    trace = _CURRENT.get()
    return _NO_HEADERS if trace is None else trace.headers


def note_reply(sent: str, reply: AgentReply) -> None:
    """Note the user message sent and the agent's reply, for the trial's turn spans (no-op when not traced)."""
    trace = _CURRENT.get()
    if trace is not None:
        trace.replies.append(NotedReply(sent, reply, time.time_ns()))


def note_model_call(role: str, model: str, latency_ms: float, usage: Usage | None, *, cached: bool = False) -> None:
    """Note a judge or simulator call that just ended (no-op when nothing is traced)."""
    trace = _CURRENT.get()
    if trace is not None:
        ended = time.time_ns()
        started = ended - int(latency_ms * 1_000_000)
        trace.model_calls.append(ModelCall(role, model, started, ended, usage, cached))
