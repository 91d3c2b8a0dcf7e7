"""The trace context of the trial in progress: what the agent is sent, what the trial's spans are built from.

A leaf (it imports nothing from Proctor but its records' module) because the layers that see a trial's
requests and replies sit below the exporter: targets add `trace_headers()` (W3C `traceparent`/`tracestate`)
to every request they send the agent, the conversation driver notes each reply, managed models note each
judge or simulator call. `proctor.traces` sets the context for a trial (`tracing`) and turns what was noted into spans.
The notes' classes are in `proctor._trace_records`, loaded at the first note of a traced trial.

When no run exports traces the context variable holds `None`: each hook is one `ContextVar.get()`.
Task groups copy the context into their tasks, and a `TrialTrace`'s lists are shared, so notes made in a
trial's subtasks land in the trial's context.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proctor._trace_records import TrialTrace
    from proctor.transcript import AgentReply, Usage

__all__ = [
    "current",
    "note_model_call",
    "note_reply",
    "trace_headers",
    "tracing",
]


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
        from proctor._trace_records import NotedReply  # must stay fast: see _trace_records

        trace.replies.append(NotedReply(sent, reply, time.time_ns()))


def note_model_call(role: str, model: str, latency_ms: float, usage: Usage | None, *, cached: bool = False) -> None:
    """Note a judge or simulator call that just ended (no-op when nothing is traced)."""
    trace = _CURRENT.get()
    if trace is not None:
        from proctor._trace_records import ModelCall  # must stay fast: see _trace_records

        ended = time.time_ns()
        started = ended - int(latency_ms * 1_000_000)
        trace.model_calls.append(ModelCall(role, model, started, ended, usage, cached))
