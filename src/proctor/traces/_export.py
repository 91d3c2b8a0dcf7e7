"""One OpenTelemetry trace per trial, sent with the SDK's OTLP exporter.

The trial's span starts when the trial does (its context is what the agent is sent as `traceparent`, so
the agent's own spans join the trace); when the trial ends, its turns, tool calls, checks and model calls
become child spans with the times they had (from the notes `proctor._trace_context` collected):

```
proctor.trial <case>                       proctor.case, proctor.trial, proctor.status, proctor.score
├── invoke_agent <target>   (one per turn)  gen_ai.operation.name, latency, gen_ai.usage.*, messages
│   └── execute_tool <tool>                 gen_ai.tool.name, gen_ai.tool.call.arguments / .result
├── chat <model>            (judge, sim.)   gen_ai.system, gen_ai.request.model, gen_ai.usage.*
└── proctor.check <name>                    proctor.check.status, .score, .reason, .type, .turn
```

The SDK is imported here only: this module loads when a run exports traces (`otel` extra).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from proctor._trace_context import tracing
from proctor._trace_records import ModelCall, NotedReply, TrialTrace
from proctor.errors import ConfigError
from proctor.transcript import Message, ToolCall

if TYPE_CHECKING:
    from proctor.checks import CheckResult
    from proctor.results import TrialResult

__all__ = ["TraceExport", "build_exporter", "trace_url"]

QUEUE_SIZE = 65_536
"""Spans the batch processor holds before it drops: the default 2,048 drops under load (NOTES.md)."""

_PROPAGATOR = TraceContextTextMapPropagator()


def trace_url(template: str | None, trace_id: str) -> str | None:
    """The trace's link from a template naming `{trace_id}` (e.g. `http://localhost:16686/trace/{trace_id}`)."""
    return template.replace("{trace_id}", trace_id) if template else None


def _protocol() -> str:
    return (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip() or "http/protobuf"


def build_exporter(endpoint: str | None = None, protocol: str | None = None) -> SpanExporter:
    """The OTLP span exporter: HTTP/protobuf, or gRPC when asked for and installed.

    Args:
        endpoint: The collector's base URL (`http://localhost:4318`; `/v1/traces` is added when the URL
            has no path, as for `OTEL_EXPORTER_OTLP_ENDPOINT`); `None` leaves it to the `OTEL_EXPORTER_OTLP_*`
            environment variables, as every OTel tool does.
        protocol: `http/protobuf` or `grpc`; default `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`, else `http/protobuf`.

    Raises:
        ConfigError: An unsupported protocol, or `grpc` without its exporter installed.
    """
    protocol = protocol or _protocol()
    if protocol == "grpc":
        try:
            # optional: grpcio is large, so only the HTTP exporter is in the `otel` extra
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter as GrpcExporter,
            )
        except ImportError:
            raise ConfigError(
                "OTLP over gRPC needs `pip install opentelemetry-exporter-otlp-proto-grpc`; "
                "or use OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
            ) from None
        grpc: SpanExporter = GrpcExporter(endpoint=endpoint) if endpoint else GrpcExporter()
        return grpc
    if protocol != "http/protobuf":
        raise ConfigError(f"OTLP protocol {protocol!r} is not supported: use http/protobuf or grpc")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if endpoint is None:
        return OTLPSpanExporter()
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--otel-endpoint {endpoint!r}: expected an http(s) URL such as http://localhost:4318")
    if parts.path in ("", "/"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    return OTLPSpanExporter(endpoint=endpoint)


@dataclass(slots=True)
class _Open:
    """A trial whose span is open."""

    span: Span
    trace: TrialTrace
    started_ns: int


class TraceExport:
    """Exports one trace per trial of a run (see the module docstring).

    Args:
        exporter: Where spans go (`build_exporter()`); the SDK's in-memory exporter in library tests.
        target: The agent's name, for the turn spans (`gen_ai.agent.name`).
        run_id: The run's id, a resource attribute of every span.
        url_template: A trace link template naming `{trace_id}`, stored with each trial.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        target: str = "agent",
        run_id: str | None = None,
        url_template: str | None = None,
    ) -> None:
        resource = {"service.name": "proctor", **({"proctor.run_id": run_id} if run_id else {})}
        self._provider = TracerProvider(resource=Resource.create(resource))
        self._provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=QUEUE_SIZE))
        self._tracer: Tracer = self._provider.get_tracer("proctor")
        self.target = target
        self.url_template = url_template

    async def run(self, case_key: str, trial: int, work: Awaitable[TrialResult]) -> TrialResult:
        """Await `work` (one trial) inside a new trace; record its trace id and link on the result."""
        opened = self._open(case_key, trial)
        try:
            with tracing(opened.trace):
                result = await work
        except BaseException:
            opened.span.set_status(Status(StatusCode.ERROR, "the trial did not finish"))
            opened.span.end()
            raise
        self._finish(opened, result)
        return result

    def _open(self, case_key: str, trial: int) -> _Open:
        file, _, name = case_key.rpartition("::")
        attributes: dict[str, str | int] = {
            "proctor.case": name, "proctor.case_key": case_key, "proctor.file": file, "proctor.trial": trial
        }  # fmt: skip
        started = time.time_ns()
        # a fresh root (an empty context), whatever span the caller has open: one trace per trial
        span = self._tracer.start_span(
            f"proctor.trial {name}", Context(), SpanKind.CLIENT, attributes, start_time=started
        )
        headers: dict[str, str] = {}
        _PROPAGATOR.inject(headers, context=set_span_in_context(span))
        headers.setdefault("tracestate", f"proctor=t{trial}")
        return _Open(span, TrialTrace(headers), started)

    def _finish(self, opened: _Open, result: TrialResult) -> None:
        span, trace = opened.span, opened.trace
        parent = set_span_in_context(span)
        trace_id = format(span.get_span_context().trace_id, "032x")
        result.trace_id = trace_id
        result.trace_url = trace_url(self.url_template, trace_id)
        result._json = None  # the JSON form is cached: rebuild it with the trace id
        turns_end = self._turns(parent, opened.started_ns, result.turns, trace.replies)
        for call in trace.model_calls:
            self._model_call(parent, call)
        ended = time.time_ns()
        for check in result.checks:
            self._check(parent, check, turns_end, ended)
        span.set_attributes(_clean(_trial_attributes(result)))
        if result.status == "error":
            span.set_status(Status(StatusCode.ERROR, result.error or "error"))
        span.end(end_time=ended)

    def _turns(self, parent: Context, started: int, turns: Sequence[Message], replies: Sequence[NotedReply]) -> int:
        """The turn spans (from the noted replies, else from the transcript); returns when the last ended."""
        if not replies:  # nothing noted (a driver that bypasses `exchange`): the transcript, laid out in order
            users = _user_before_each_reply(turns)
            at = started
            for number, message in enumerate(m for m in turns if m.role == "assistant"):
                latency = int((message.latency_ms or 0.0) * 1_000_000)
                at = self._turn(parent, number, users, message.content, message.tool_calls, None, at, at + latency)
            return at
        sent = [noted.sent for noted in replies]
        for number, noted in enumerate(replies):
            reply = noted.reply
            begin = noted.ended_ns - int(reply.latency_ms * 1_000_000)
            self._turn(parent, number, sent, reply.text, reply.tool_calls, reply.usage, begin, noted.ended_ns)
        return replies[-1].ended_ns

    def _turn(
        self,
        parent: Context,
        number: int,
        users: Sequence[str | None],
        text: str,
        calls: Sequence[ToolCall],
        usage: Any,
        begin: int,
        end: int,
    ) -> int:
        user = users[number] if number < len(users) else None
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.target,
            "proctor.turn": number,
            "proctor.latency_ms": (end - begin) / 1_000_000,
            "gen_ai.output.messages": json.dumps([_message("assistant", text, calls)], ensure_ascii=False),
        }
        if user is not None:
            attributes["gen_ai.input.messages"] = json.dumps([_message("user", user, ())], ensure_ascii=False)
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.prompt_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.completion_tokens
        span = self._tracer.start_span(
            f"invoke_agent {self.target}", parent, SpanKind.CLIENT, attributes, start_time=begin
        )
        inner = set_span_in_context(span)
        step = max(1, (end - begin) // (len(calls) + 1))
        for index, call in enumerate(calls):  # the agent reports calls, not their times: in order within the turn
            self._tool(inner, call, begin + index * step, begin + (index + 1) * step)
        span.end(end_time=end)
        return end

    def _tool(self, parent: Context, call: ToolCall, begin: int, end: int) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.arguments": json.dumps(call.arguments, ensure_ascii=False, default=str),
        }
        if call.id is not None:
            attributes["gen_ai.tool.call.id"] = call.id
        if call.result is not None:
            attributes["gen_ai.tool.call.result"] = json.dumps(call.result, ensure_ascii=False, default=str)
        span = self._tracer.start_span(
            f"execute_tool {call.name}", parent, SpanKind.INTERNAL, attributes, start_time=begin
        )
        span.end(end_time=end)

    def _model_call(self, parent: Context, call: ModelCall) -> None:
        provider, _, model = call.model.partition("/")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": provider,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model or provider,
            "proctor.role": call.role,
            "proctor.cached": call.cached,
        }
        if call.usage is not None:
            attributes["gen_ai.usage.input_tokens"] = call.usage.prompt_tokens
            attributes["gen_ai.usage.output_tokens"] = call.usage.completion_tokens
        span = self._tracer.start_span(
            f"chat {model or provider}", parent, SpanKind.CLIENT, attributes, start_time=call.started_ns
        )
        span.end(end_time=call.ended_ns)

    def _check(self, parent: Context, check: CheckResult, begin: int, ended: int) -> None:
        attributes = _clean(
            {
                "proctor.check.name": check.name,
                "proctor.check.type": check.type,
                "proctor.check.status": check.status,
                "proctor.check.score": check.score,
                "proctor.check.weight": check.weight,
                "proctor.check.reason": check.reason,
                "proctor.check.turn": check.turn,
            }
        )
        # checks run after the conversation (judges at once): each starts when the last turn ended
        end = min(ended, begin + check.duration_ns) if check.duration_ns else begin
        span = self._tracer.start_span(
            f"proctor.check {check.name}", parent, SpanKind.INTERNAL, attributes, start_time=begin
        )
        if check.status == "error":
            span.set_status(Status(StatusCode.ERROR, check.reason))
        span.end(end_time=max(begin, end))

    def shutdown(self) -> None:
        """Send every span still queued and stop (call once, at the end of the run)."""
        self._provider.force_flush()
        self._provider.shutdown()


def _message(role: str, text: str, calls: Sequence[ToolCall]) -> dict[str, Any]:
    """A message in the GenAI conventions' `gen_ai.*.messages` form (parts)."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    for call in calls:
        part: dict[str, Any] = {"type": "tool_call", "name": call.name, "arguments": call.arguments}
        if call.id is not None:
            part["id"] = call.id
        parts.append(part)
    return {"role": role, "parts": parts}


def _user_before_each_reply(turns: Sequence[Message]) -> list[str | None]:
    """For each assistant message, the user message right before it (if any)."""
    found: list[str | None] = []
    last: str | None = None
    for message in turns:
        if message.role == "user":
            last = message.content
        elif message.role == "assistant":
            found.append(last)
            last = None
    return found


def _trial_attributes(result: TrialResult) -> dict[str, Any]:
    return {
        "proctor.status": result.status,
        "proctor.score": result.score,
        "proctor.error": result.error,
        "proctor.error_type": result.error_type,
        "proctor.duration_ms": result.duration_ms,
        "gen_ai.usage.input_tokens": result.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": result.usage.completion_tokens,
        "proctor.agent_trace_ids": list(result.trace_ids),
    }


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes without `None` values (OTel rejects them)."""
    return {key: value for key, value in attributes.items() if value is not None}
