"""An OpenTelemetry-instrumented example agent: an OpenAI-compatible chat endpoint that plans a trip.

It emits spans as the OpenTelemetry GenAI semantic conventions name them: one `invoke_agent` span per
request (input and output messages, token usage), an `execute_tool` span per tool it runs (arguments and
result) and a `chat` span for its (here, scripted) model call. A W3C `traceparent` on the request makes
its spans children of the caller's span, so under `proctor run --otel` they join the trial's trace.

Spans are written to a file as the OpenTelemetry Collector's file exporter writes them (one OTLP JSON
`ExportTraceServiceRequest` per line), which `proctor score` reads back:

    python examples/traced/agent.py --port 8765 --spans spans.jsonl &
    proctor run examples/traced/suite.yaml --otel        # trial traces to OTEL_EXPORTER_OTLP_ENDPOINT
    proctor score spans.jsonl --suite examples/traced/suite.yaml

Needs `pip install 'proctor-eval[otel,serve]'` (the OpenTelemetry SDK, Starlette and uvicorn).
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

AGENT_NAME = "trip-planner"
MODEL = "example-model-1"
WEATHER = {"paris": "18 °C and sunny", "oslo": "4 °C and raining", "rome": "24 °C and clear"}


class OtlpJsonFileExporter(SpanExporter):
    """Appends spans to a file in the Collector file exporter's format: one OTLP JSON request per line.

    OTLP JSON writes trace and span ids as hex (protobuf's JSON mapping would write base64) and enums as
    numbers; everything else is protobuf's JSON mapping.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Append one line holding `spans`."""
        data = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
        for resource in data.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if span.get(key):
                            span[key] = base64.b64decode(span[key]).hex()
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(data, ensure_ascii=False) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to close: each export opens and closes the file."""


def get_weather(city: str) -> dict[str, str]:
    """The (canned) weather in a city."""
    return {"city": city, "forecast": WEATHER.get(city.lower(), "unknown")}


def book_hotel(city: str, nights: int) -> dict[str, Any]:
    """Book a hotel (a canned confirmation)."""
    return {"confirmation": f"H-{city[:3].upper()}-{nights}", "city": city, "nights": nights}


def plan(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The tools a request calls for, with their arguments (a scripted stand-in for a model)."""
    calls: list[tuple[str, dict[str, Any]]] = []
    city = next((c.title() for c in WEATHER if c in text.lower()), None)
    if city and "weather" in text.lower():
        calls.append(("get_weather", {"city": city}))
    nights = re.search(r"(\d+) nights?", text)
    if city and "book" in text.lower():
        calls.append(("book_hotel", {"city": city, "nights": int(nights.group(1)) if nights else 1}))
    return calls


def answer(results: list[tuple[str, dict[str, Any]]]) -> str:
    """The reply for what the tools returned."""
    parts = []
    for name, result in results:
        if name == "get_weather":
            parts.append(f"The weather in {result['city']} is {result['forecast']}.")
        else:
            parts.append(
                f"Booked {result['nights']} nights in {result['city']}, confirmation {result['confirmation']}."
            )
    return " ".join(parts) or "I can check the weather and book hotels in Paris, Oslo or Rome."


class TripAgent:
    """The agent: its tracer, and the headers of every request it got (tests read them)."""

    def __init__(self, spans: Path) -> None:
        self.provider = TracerProvider(resource=Resource.create({"service.name": AGENT_NAME}))
        self.provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(spans)))
        self.tracer = self.provider.get_tracer("examples.traced.agent")
        self.headers: list[dict[str, str]] = []

    def app(self) -> Starlette:
        """The agent's HTTP app (one OpenAI-compatible route)."""
        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> JSONResponse:
        """Answer one chat completion request inside an `invoke_agent` span."""
        self.headers.append(dict(request.headers))
        body = await request.json()
        messages = body.get("messages") or []
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        parent = TraceContextTextMapPropagator().extract(dict(request.headers))
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
        }
        with self.tracer.start_as_current_span(
            f"invoke_agent {AGENT_NAME}", context=parent, kind=SpanKind.SERVER, attributes=attributes
        ) as span:
            calls = self._run_tools(plan(user))
            reply, usage = self._model(user, calls)
            output = [{"role": "assistant", "parts": [{"type": "text", "content": reply}], "finish_reason": "stop"}]
            span.set_attribute("gen_ai.output.messages", json.dumps(output))
            span.set_attribute("gen_ai.usage.input_tokens", usage["prompt_tokens"])
            span.set_attribute("gen_ai.usage.output_tokens", usage["completion_tokens"])
            trace_id = format(span.get_span_context().trace_id, "032x")
        tool_calls = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
                "result": result,
            }
            for call_id, name, args, result in calls
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return JSONResponse(
            {"id": trace_id, "object": "chat.completion", "choices": [{"index": 0, "message": message}], "usage": usage}
        )

    def _run_tools(self, planned: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, dict[str, Any], Any]]:
        done = []
        for name, args in planned:
            call_id = f"call_{uuid.uuid4().hex[:8]}"
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": json.dumps(args),
            }
            with self.tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
                result = get_weather(**args) if name == "get_weather" else book_hotel(**args)
                span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
            done.append((call_id, name, args, result))
        return done

    def _model(self, user: str, calls: list[tuple[str, str, dict[str, Any], Any]]) -> tuple[str, dict[str, int]]:
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.system": "example", "gen_ai.request.model": MODEL}
        with self.tracer.start_as_current_span(f"chat {MODEL}", kind=SpanKind.CLIENT, attributes=attributes) as span:
            reply = answer([(name, result) for _, name, _, result in calls])
            usage = {"prompt_tokens": 20 + len(user.split()), "completion_tokens": len(reply.split())}
            span.set_attribute("gen_ai.usage.input_tokens", usage["prompt_tokens"])
            span.set_attribute("gen_ai.usage.output_tokens", usage["completion_tokens"])
        return reply, usage


def main() -> None:
    """Serve the agent on 127.0.0.1 (see the module docstring)."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--spans", type=Path, default=Path("spans.jsonl"), help="OTLP JSON Lines file to append to")
    args = parser.parse_args()
    agent = TripAgent(args.spans)
    uvicorn.run(agent.app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
