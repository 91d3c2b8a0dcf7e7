"""Traces in and out: every trial exported as an OpenTelemetry trace; traces read back as conversations.

Out (`proctor run --otel`): `open_export` builds the run's `TraceExport` (one trace per trial, W3C
`traceparent` sent to the agent) when asked for or when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

In (`proctor score TRACES --suite ...`, `proctor serve --otlp`): `read_spans` reads OTLP JSON (the
Collector's file exporter), OTLP protobuf and JSON Lines of spans; `conversations` rebuilds what was
said and done (messages, tool calls with arguments and results, latencies, tokens) from GenAI spans,
through a `TraceMapping` (`genai`, `openinference`, `logfire`, or a file) for frameworks that name
attributes their own way.

Layering: imports nothing above `suite`; `run`, `recorded` and `service` use it. The OpenTelemetry SDK
and protobuf modules load only when used (the `otel` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from proctor.traces._conversation import TraceConversation, conversations
    from proctor.traces._export import TraceExport, build_exporter, trace_url
    from proctor.traces._mapping import PRESETS, TraceMapping, load_mapping
    from proctor.traces._setup import export_wanted, open_export
    from proctor.traces._spans import Span, TraceError, read_spans, spans_from_otlp, spans_from_request

_LAZY = {
    "PRESETS": "_mapping",
    "Span": "_spans",
    "TraceConversation": "_conversation",
    "TraceError": "_spans",
    "TraceExport": "_export",
    "TraceMapping": "_mapping",
    "build_exporter": "_export",
    "conversations": "_conversation",
    "export_wanted": "_setup",
    "load_mapping": "_mapping",
    "open_export": "_setup",
    "read_spans": "_spans",
    "spans_from_otlp": "_spans",
    "spans_from_request": "_spans",
    "trace_url": "_export",
}

__all__ = [
    "PRESETS",
    "Span",
    "TraceConversation",
    "TraceError",
    "TraceExport",
    "TraceMapping",
    "build_exporter",
    "conversations",
    "export_wanted",
    "load_mapping",
    "open_export",
    "read_spans",
    "spans_from_otlp",
    "spans_from_request",
    "trace_url",
]

__getattr__ = _lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return list(__all__)
