"""`proctor serve --otlp`: an OTLP/HTTP trace receiver that scores traces as they arrive.

`POST /v1/traces` takes an `ExportTraceServiceRequest` (protobuf or JSON, gzip or not), as every
OpenTelemetry SDK and Collector sends it. Its spans are rebuilt into conversations
(`proctor.traces.conversations`, with the `--from-traces` mapping); each turn (what the user asked, what
the agent answered) becomes one event and goes through the service's pipeline, the same one
`/api/v1/evaluate` and the stream consumer use. Results are appended to a JSON Lines file, one line per
turn (`{"trace_id", "conversation", "turn", "result"}`), flushed to disk before the request is answered:

- 200 (an empty `ExportTraceServiceResponse`, in the request's encoding) only once every turn's result is
  on disk; turns without a user message are counted in `partial_success` and not scored;
- 400 for a body that is not an OTLP request (the exporter does not retry it);
- 503 with `Retry-After` when scoring or writing failed: nothing is acknowledged that was not recorded,
  and the exporter sends the batch again.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from proctor.service._batch import evaluate_all
from proctor.service._http import read_body
from proctor.service._models import Agent, EvaluationRequest, Interaction
from proctor.service._pipeline import Pipeline
from proctor.traces import TraceError, TraceMapping, conversations, spans_from_request
from proctor.traces._mapping import GENAI

__all__ = ["OtlpOptions", "OtlpReceiver"]

logger = logging.getLogger("proctor.service")

PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True, slots=True)
class OtlpOptions:
    """Where the OTLP receiver writes, and how it reads spans."""

    output: Path = Path("otlp-results.jsonl")
    """The JSON Lines file results are appended to."""
    mapping: TraceMapping = field(default=GENAI)
    """Which span attributes hold what (`--from-traces`)."""
    workers: int = 16
    """Turns scored at once per request."""


class OtlpReceiver:
    """The `/v1/traces` route over a pipeline (see the module docstring)."""

    def __init__(self, pipeline: Pipeline, options: OtlpOptions | None = None, *, max_body_bytes: int = 1_048_576):
        self.pipeline = pipeline
        self.options = options or OtlpOptions()
        self.limit = max_body_bytes
        self._lock = threading.Lock()

    async def route(self, request: Request) -> Response:
        """Score one export request's conversations; answer only once their results are on disk."""
        content_type = request.headers.get("content-type", PROTOBUF).split(";")[0].strip().lower()
        try:
            body = _decompress(await read_body(request, self.limit), request.headers.get("content-encoding", ""))
            spans = spans_from_request(body, content_type, "OTLP request")
        except TraceError as exc:
            return JSONResponse({"detail": str(exc)}, 400)
        found = conversations(spans, self.options.mapping)
        events, rows, skipped = [], [], 0
        for conversation in found:
            service = next((s.resource.get("service.name") for s in spans if s.trace_id in conversation.trace_ids), "")
            for turn, (asked, answer) in enumerate(_turns(conversation.messages)):
                if not asked:
                    skipped += 1
                    continue
                event_id = f"{conversation.key}:{turn}"
                interaction = Interaction(user_query=asked, answer=answer)
                events.append(
                    EvaluationRequest(event_id=event_id, agent=Agent(name=str(service or "")), interaction=interaction)
                )
                rows.append({"trace_id": conversation.trace_ids[0], "conversation": conversation.key, "turn": turn})
        try:
            results = await evaluate_all(self.pipeline, events, workers=self.options.workers)
            lines = "".join(
                json.dumps({**row, "result": result.model_dump(mode="json")}, ensure_ascii=False) + "\n"
                for row, result in zip(rows, results, strict=True)
            )
            if lines:
                await anyio.to_thread.run_sync(self._append, lines)
        except Exception:
            logger.exception("scoring an OTLP request failed: not acknowledged, the exporter will retry")
            return JSONResponse({"detail": "scoring failed; retry"}, 503, headers={"Retry-After": "5"})
        return _acknowledge(content_type, skipped)

    def _append(self, lines: str) -> None:
        with self._lock, self.options.output.open("a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())


def _turns(messages: list[Any]) -> list[tuple[str, str]]:
    """(user message, reply) pairs of a rebuilt conversation."""
    pairs: list[tuple[str, str]] = []
    asked = ""
    for message in messages:
        if message.role == "user":
            asked = message.content
        elif message.role == "assistant":
            pairs.append((asked, message.content))
            asked = ""
    return pairs


def _decompress(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    try:
        if encoding == "gzip":
            return gzip.decompress(body)
        if encoding == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error) as exc:
        raise TraceError(f"OTLP request: the {encoding} body cannot be decompressed: {exc}") from None
    return body


def _acknowledge(content_type: str, skipped: int) -> Response:
    """An `ExportTraceServiceResponse` in the request's encoding (with `partialSuccess` for skipped turns)."""
    message = f"{skipped} turn(s) without a user message were not scored" if skipped else ""
    if "json" in content_type:
        payload: dict[str, Any] = {}
        if skipped:
            payload["partialSuccess"] = {"rejectedSpans": "0", "errorMessage": message}
        return JSONResponse(payload)
    # optional extra: the receiver runs only with it (`--otlp` checks)
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    response = ExportTraceServiceResponse()
    if skipped:
        response.partial_success.error_message = message
    return Response(response.SerializeToString(), media_type=PROTOBUF)
