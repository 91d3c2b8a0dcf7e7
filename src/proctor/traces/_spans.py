"""Spans read from trace files and OTLP requests, in one flat shape.

Three inputs:

- OTLP JSON, as the OpenTelemetry Collector's file exporter writes it: one `ExportTraceServiceRequest`
  (`{"resourceSpans": [...]}`) per line, or one such object in a whole (pretty-printed) file;
- OTLP protobuf: one serialised `ExportTraceServiceRequest`, or several each preceded by its length as
  4 bytes big-endian (the file exporter's `format: proto`);
- JSON Lines of spans: one span object per line (or a JSON array of them), with OTLP's keys (`traceId`,
  `spanId`, `parentSpanId`, `startTimeUnixNano`, attributes as key/value lists) or the flat keys of the
  SDK's console exporter and most tools (`context.trace_id`, `parent_id`, `start_time` as ISO 8601,
  attributes as an object).

Ids are kept as lowercase hex (OTLP JSON's form; base64 ids, protobuf's JSON mapping, are converted).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from proctor.errors import ProctorError

__all__ = ["Span", "SpanEvent", "TraceError", "read_spans", "spans_from_otlp", "spans_from_request"]

_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")
_PROTO_SUFFIXES = (".pb", ".binpb", ".proto", ".protobuf", ".bin")


class TraceError(ProctorError, ValueError):
    """A trace file or request cannot be read (the message says where and why; exit code 2)."""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """An event recorded on a span (e.g. `gen_ai.user.message`)."""

    name: str
    time_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Span:
    """One span, whatever file or request it came from."""

    trace_id: str
    """32 hex digits."""
    span_id: str
    """16 hex digits."""
    parent_id: str | None
    """The parent's span id; `None` for a root span."""
    name: str
    start_ns: int
    """Start, in nanoseconds since the epoch."""
    end_ns: int
    """End, in nanoseconds since the epoch."""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    """The resource's attributes (`service.name`, ...)."""
    where: str = ""
    """File and line (or request) it was read from, for messages."""

    @property
    def duration_ms(self) -> float:
        """The span's duration in milliseconds."""
        return max(0, self.end_ns - self.start_ns) / 1_000_000


def read_spans(path: str | Path) -> list[Span]:
    """Every span in a trace file (OTLP JSON, OTLP protobuf or JSON Lines of spans; see the module).

    Raises:
        TraceError: The file is missing or unreadable, naming the line (or byte offset) and what is wrong.
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    raw = path.read_bytes()
    head = raw.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if path.suffix.lower() in _PROTO_SUFFIXES or head not in (b"{", b"["):
        return list(_from_protobuf_file(raw, str(path)))
    text = raw.decode("utf-8-sig", errors="replace")
    return list(_from_json_text(text, str(path)))


def spans_from_request(body: bytes, content_type: str, where: str = "request") -> list[Span]:
    """The spans of one OTLP/HTTP export request (`application/x-protobuf` or `application/json`).

    Raises:
        TraceError: The body cannot be decoded.
    """
    if "json" in content_type:
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise TraceError(f"{where}: not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise TraceError(f"{where}: expected an ExportTraceServiceRequest object")
        return list(spans_from_otlp(data, where))
    return list(_decode_request(body, where))


def _from_json_text(text: str, name: str) -> Iterator[Span]:
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except ValueError as exc:
            raise TraceError(f"{name}: not valid JSON: {exc}") from None
        for index, item in enumerate(items):
            yield from _from_object(item, f"{name}: element {index}")
        return
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), "")
    try:
        json.loads(first)
    except ValueError:  # not one object per line: a whole (pretty-printed) document
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise TraceError(f"{name}:{exc.lineno}: not valid JSON: {exc.msg}") from None  # type: ignore[attr-defined]
        yield from _from_object(document, name)
        return
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise TraceError(f"{name}:{number}: not valid JSON: {exc}") from None
        yield from _from_object(item, f"{name}:{number}")


def _from_object(item: Any, where: str) -> Iterator[Span]:
    if not isinstance(item, dict):
        raise TraceError(f"{where}: expected a JSON object (a span or an OTLP request), found {type(item).__name__}")
    if "resourceSpans" in item or "resource_spans" in item:
        yield from spans_from_otlp(item, where)
    else:
        yield _flat_span(item, {}, where)


def spans_from_otlp(data: Mapping[str, Any], where: str = "request") -> Iterator[Span]:
    """The spans of an OTLP JSON `ExportTraceServiceRequest` (camelCase or snake_case keys)."""
    for resource_spans in _list(data, "resourceSpans", "resource_spans", where=where):
        resource = _attributes((resource_spans.get("resource") or {}).get("attributes"), where)
        for scope in _list(resource_spans, "scopeSpans", "scope_spans", "instrumentationLibrarySpans", where=where):
            for span in _list(scope, "spans", where=where):
                yield _flat_span(span, resource, where)


def _list(data: Mapping[str, Any], *keys: str, where: str) -> list[dict[str, Any]]:
    for key in keys:
        if key in data:
            value = data[key]
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise TraceError(f"{where}: {key}: expected a list of objects")
            return value
    return []


def _first(data: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in data and data[key] not in (None, ""):
            return data[key]
    return None


def _flat_span(data: Mapping[str, Any], resource: dict[str, Any], where: str) -> Span:
    raw_context = data.get("context")
    context: Mapping[str, Any] = raw_context if isinstance(raw_context, dict) else {}
    trace_id = _id(_first(data, "traceId", "trace_id") or _first(context, "trace_id", "traceId"), 32, "traceId", where)
    span_id = _id(_first(data, "spanId", "span_id") or _first(context, "span_id", "spanId"), 16, "spanId", where)
    parent = _first(data, "parentSpanId", "parent_span_id", "parent_id", "parentId")
    if isinstance(parent, dict):  # some tools write the parent's whole context
        parent = _first(parent, "span_id", "spanId")
    start = _time(_first(data, "startTimeUnixNano", "start_time_unix_nano", "start_time", "startTime"), "start", where)
    end = _time(_first(data, "endTimeUnixNano", "end_time_unix_nano", "end_time", "endTime"), "end", where)
    own_resource = data.get("resource")
    if isinstance(own_resource, dict):
        resource = {**resource, **_attributes(own_resource.get("attributes", own_resource), where)}
    events = [
        SpanEvent(
            str(event.get("name", "")),
            _time(
                _first(event, "timeUnixNano", "time_unix_nano", "timestamp", "time"), "event time", where, default=start
            ),
            _attributes(event.get("attributes"), where),
        )
        for event in data.get("events") or []
        if isinstance(event, dict)
    ]
    attributes = _attributes(data.get("attributes"), where)
    if isinstance(data.get("span_kind"), str):  # Phoenix's span export keeps the kind beside the attributes
        attributes.setdefault("openinference.span.kind", data["span_kind"])
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_id(parent, 16, "parentSpanId", where) if parent else None,
        name=str(data.get("name", "")),
        start_ns=start,
        end_ns=max(end, start),
        attributes=attributes,
        events=events,
        resource=resource,
        where=where,
    )


def _id(value: Any, digits: int, name: str, where: str) -> str:
    if value is None:
        raise TraceError(f"{where}: the span has no {name}")
    text = str(value)
    undashed = text.replace("-", "") if len(text) == 36 else text  # UUIDs (Phoenix's exports)
    hexa = undashed.removeprefix("0x") if _HEX.match(undashed) else None
    if hexa is not None and (len(hexa) == digits or len(hexa) == 32):
        return hexa.lower()
    try:  # protobuf's JSON mapping writes bytes as base64
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) * 2 == digits:
        return decoded.hex()
    if hexa is not None and len(hexa) < digits:  # 64-bit trace ids (Zipkin, old Jaeger)
        return hexa.lower().rjust(digits, "0")
    raise TraceError(f"{where}: {name} {text!r}: expected {digits} hex digits")


def _time(value: Any, name: str, where: str, default: int | None = None) -> int:
    if value is None:
        if default is not None:
            return default
        raise TraceError(f"{where}: the span has no {name} time")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    text = str(value)
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise TraceError(f"{where}: {name} time {text!r}: expected nanoseconds or an ISO 8601 time") from None
    return int(moment.timestamp() * 1_000_000) * 1000


def _attributes(value: Any, where: str) -> dict[str, Any]:
    """Attributes from OTLP's key/value list or from a plain object."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    if not isinstance(value, list):
        raise TraceError(f"{where}: attributes: expected a list of key/value pairs or an object")
    found: dict[str, Any] = {}
    for item in value:
        if isinstance(item, dict) and "key" in item:
            found[str(item["key"])] = _any_value(item.get("value"))
    return found


def _any_value(value: Any) -> Any:
    """An OTLP JSON `AnyValue` as a Python value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("intValue", "int_value"):
        if key in value:
            return int(value[key])
    for key in ("doubleValue", "double_value"):
        if key in value:
            return float(value[key])
    for key in ("boolValue", "bool_value"):
        if key in value:
            return bool(value[key])
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [_any_value(v) for v in (value[key] or {}).get("values") or []]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return {kv["key"]: _any_value(kv.get("value")) for kv in (value[key] or {}).get("values") or []}
    for key in ("bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    return None


def _from_protobuf_file(raw: bytes, name: str) -> Iterator[Span]:
    chunks = _length_prefixed(raw)
    if chunks is None:
        yield from _decode_request(raw, name)
        return
    for offset, chunk in chunks:
        yield from _decode_request(chunk, f"{name}: byte {offset}")


def _length_prefixed(raw: bytes) -> list[tuple[int, bytes]] | None:
    """The messages of a file of 4-byte-length-prefixed messages, or `None` if it is not one."""
    chunks: list[tuple[int, bytes]] = []
    at = 0
    while at < len(raw):
        if at + 4 > len(raw):
            return None
        size = int.from_bytes(raw[at : at + 4], "big")
        if size == 0 or at + 4 + size > len(raw):
            return None
        chunks.append((at, raw[at + 4 : at + 4 + size]))
        at += 4 + size
    return chunks or None


def _decode_request(body: bytes, where: str) -> Iterator[Span]:
    try:
        # optional extra: the protobuf classes come with the `otel` extra
        from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError as exc:
        raise TraceError(f"{where}: reading OTLP protobuf needs pip install 'proctor-eval[otel]' ({exc})") from None
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise TraceError(f"{where}: not an OTLP protobuf ExportTraceServiceRequest: {exc}") from None
    for resource_spans in request.resource_spans:
        resource = {kv.key: _proto_value(kv.value) for kv in resource_spans.resource.attributes}
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                yield Span(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex() or None,
                    name=span.name,
                    start_ns=span.start_time_unix_nano,
                    end_ns=max(span.end_time_unix_nano, span.start_time_unix_nano),
                    attributes={kv.key: _proto_value(kv.value) for kv in span.attributes},
                    events=[
                        SpanEvent(e.name, e.time_unix_nano, {kv.key: _proto_value(kv.value) for kv in e.attributes})
                        for e in span.events
                    ],
                    resource=resource,
                    where=where,
                )


def _proto_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_proto_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None
