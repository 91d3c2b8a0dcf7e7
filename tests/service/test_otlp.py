"""`proctor serve --otlp`: traces sent by the OpenTelemetry SDK's own OTLP exporter (protobuf) and as
OTLP JSON are scored per turn through the service pipeline; nothing is acknowledged before it is on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from proctor.service import PipelineConfig, ServiceSettings, build_pipeline, create_app
from proctor.service._otlp import OtlpOptions, OtlpReceiver
from proctor.traces import read_spans
from servers._serve import serve_app
from service.judge_server import JudgeScript, verdict


@pytest.fixture
def service(judge_server: Any, tmp_path: Path) -> Iterator[tuple[str, Path, JudgeScript]]:
    script = judge_server.script(default=verdict(0.9, "Good."))
    settings = ServiceSettings(PipelineConfig(judges=("relevance",)), "openai/judge-test", script.base_url, "k")
    pipeline = build_pipeline(settings)
    output = tmp_path / "otlp-results.jsonl"
    app = create_app(pipeline, otlp=OtlpReceiver(pipeline, OtlpOptions(output=output)))
    with serve_app(app) as url:
        yield url, output, script


def _ask(agent_url: str, *texts: str) -> None:
    history: list[dict[str, str]] = []
    with httpx.Client() as client:
        for text in texts:
            history.append({"role": "user", "content": text})
            reply = client.post(f"{agent_url}/v1/chat/completions", json={"messages": history}).json()
            history.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})


def test_the_sdk_exporter_sends_traces_that_are_scored_per_turn(service: Any, traced_agent: Any) -> None:
    url, output, script = service
    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces")
    traced_agent.agent.provider.add_span_processor(SimpleSpanProcessor(exporter))
    _ask(traced_agent.url, "What is the weather in Rome?", "Book 2 nights in Rome.")
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert [(r["turn"], r["result"]["verdict"]) for r in rows] == [(0, "pass"), (0, "pass")]  # a trace per request
    assert {r["trace_id"] for r in rows} == {s.trace_id for s in read_spans(traced_agent.spans)}
    stages = [s["name"] for s in rows[0]["result"]["stages"]]
    assert stages == ["length-checker", "overlap-checker", "format-checker", "relevance-judge"]
    assert script.calls == 2  # one judge call per turn, made before the export was acknowledged


def test_otlp_json_is_accepted_and_bad_bodies_are_refused(service: Any, traced_agent: Any, tmp_path: Path) -> None:
    url, output, _ = service
    _ask(traced_agent.url, "What is the weather in Oslo?")
    with httpx.Client(base_url=url) as client:
        for line in traced_agent.spans.read_text().splitlines():  # the Collector file exporter's lines
            response = client.post("/v1/traces", content=line, headers={"Content-Type": "application/json"})
            assert response.status_code == 200 and response.json() == {}
        rows = [json.loads(line) for line in output.read_text().splitlines()]
        assert len(rows) == 1 and rows[0]["result"]["verdict"] == "pass"
        garbage = client.post("/v1/traces", content=b"\x00garbage", headers={"Content-Type": "application/x-protobuf"})
        assert garbage.status_code == 400 and "not an OTLP protobuf" in garbage.json()["detail"]
        empty = client.post("/v1/traces", content=b"", headers={"Content-Type": "application/x-protobuf"})
        assert (
            empty.status_code == 200
            and ExportTraceServiceResponse.FromString(empty.content) == ExportTraceServiceResponse()
        )


def test_nothing_is_acknowledged_that_was_not_written(judge_server: Any, traced_agent: Any, tmp_path: Path) -> None:
    script = judge_server.script(default=verdict(0.9))
    settings = ServiceSettings(PipelineConfig(judges=("relevance",)), "openai/judge-test", script.base_url, "k")
    pipeline = build_pipeline(settings)
    blocked = tmp_path / "not-a-file"
    blocked.mkdir()  # appending to a directory fails
    app = create_app(pipeline, otlp=OtlpReceiver(pipeline, OtlpOptions(output=blocked)))
    _ask(traced_agent.url, "What is the weather in Paris?")
    with serve_app(app) as url, httpx.Client(base_url=url) as client:
        line = traced_agent.spans.read_text().splitlines()[-1]
        response = client.post("/v1/traces", content=line, headers={"Content-Type": "application/json"})
    assert response.status_code == 503 and response.headers["retry-after"] == "5"


def test_proctor_serve_otlp_as_a_process(judge_server: Any, traced_agent: Any, tmp_path: Path) -> None:
    from service.processes import serving

    script = judge_server.script(default=verdict(0.9))
    output = tmp_path / "scored.jsonl"
    judge = ["--judge", "openai/judge-test", "--judge-base-url", script.base_url, "--judges", "relevance"]
    with serving(*judge, "--otlp", "--otlp-output", str(output)) as (_, port):
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
        traced_agent.agent.provider.add_span_processor(SimpleSpanProcessor(exporter))
        _ask(traced_agent.url, "What is the weather in Oslo?")
        exporter.shutdown()
    (row,) = [json.loads(line) for line in output.read_text().splitlines()]
    assert row["result"]["verdict"] == "pass" and row["turn"] == 0
