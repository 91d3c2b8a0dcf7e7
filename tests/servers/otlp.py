"""A loopback OTLP/HTTP trace receiver (no Collector is installable here): decodes each request with the
official `opentelemetry-proto` classes and keeps the spans, flattened, for assertions."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


@dataclass
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status_code: int
    resource: dict[str, Any]


@dataclass
class OtlpReceiver:
    base_url: str = ""
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    content_types: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[ReceivedSpan]:
        found = []
        with self.lock:
            requests = list(self.requests)
        for request in requests:
            for resource_spans in request.resource_spans:
                resource = {kv.key: value_of(kv.value) for kv in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        found.append(
                            ReceivedSpan(
                                span.trace_id.hex(),
                                span.span_id.hex(),
                                span.parent_span_id.hex(),
                                span.name,
                                span.start_time_unix_nano,
                                span.end_time_unix_nano,
                                {kv.key: value_of(kv.value) for kv in span.attributes},
                                span.status.code,
                                resource,
                            )
                        )
        return found

    def app(self) -> Starlette:
        async def traces(request: Request) -> Response:
            body = await request.body()
            if request.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            decoded = ExportTraceServiceRequest.FromString(body)
            with self.lock:
                self.requests.append(decoded)
                self.content_types.append(request.headers.get("content-type", ""))
            return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")

        return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
