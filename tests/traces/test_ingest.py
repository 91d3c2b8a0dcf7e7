"""Traces in: OTLP JSON (the example agent's own file), OTLP protobuf (what the SDK exporter sent), JSON
Lines of spans (the SDK's console form, OpenInference's and pydantic-ai's published examples), rebuilt
into conversations and scored with a suite's checks: the same verdict as the live run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from proctor.checks import registry
from proctor.cli import app
from proctor.recorded._traces import score_traces_sync
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites
from proctor.traces import PRESETS, TraceError, conversations, load_mapping, read_spans, spans_from_request

DATA = Path(__file__).parent / "data"
runner = CliRunner()


def _verdicts(data: dict[str, Any]) -> dict[str, list[tuple[str, float | None, list[tuple[str, str]]]]]:
    return {
        case["name"]: [
            (t["status"], t["score"], [(c["name"], c["status"]) for c in t["checks"]]) for t in case["trials"]
        ]
        for case in data["cases"]
    }


@pytest.fixture
def live(traced_agent: Any, otlp_receiver: Any, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The example suite run live with --otel: its suite file and results."""
    suite = traced_agent.suite(tmp_path, trials=2)
    options = RunOptions(write_results=False, handle_sigint=False, otel_endpoint=otlp_receiver.base_url)
    return suite, run_sync(load_suites([suite], registry), options).data


def test_the_agents_trace_file_scores_as_the_live_run_did(
    traced_agent: Any, live: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    suite, data = live
    result = runner.invoke(app, ["score", str(traced_agent.spans), "--suite", str(suite)])
    assert result.exit_code == 0, result.output
    written = sorted((traced_agent.spans.parent / ".results").glob("traces_*.json"))
    scored = json.loads(written[-1].read_text())
    assert _verdicts(scored) == _verdicts(data)
    journey = next(c for c in scored["cases"][0]["trials"][0]["checks"] if c["type"] == "journey")
    assert journey["status"] == "passed" and journey["details"]["metrics"]["journey_success"] is True
    live_trials = {t["trace_id"]: t for c in data["cases"] for t in c["trials"]}
    for case in scored["cases"]:
        for trial in case["trials"]:  # each conversation is the trial whose trace the agent joined
            original = live_trials[trial["trace_id"]]
            assert [m["content"] for m in trial["turns"]] == [m["content"] for m in original["turns"]]
            assert [m["tool_calls"] for m in trial["turns"]] == [m["tool_calls"] for m in original["turns"]]
            assert trial["tokens"] == original["tokens"]


def test_proctors_own_traces_read_back_from_protobuf(
    live: tuple[Path, dict[str, Any]], otlp_receiver: Any, tmp_path: Path
) -> None:
    suite, data = live
    single = tmp_path / "one.binpb"
    single.write_bytes(otlp_receiver.requests[0].SerializeToString())
    prefixed = tmp_path / "all.binpb"  # the Collector file exporter's `format: proto`: length-prefixed messages
    prefixed.write_bytes(
        b"".join(len(b := r.SerializeToString()).to_bytes(4, "big") + b for r in otlp_receiver.requests)
    )
    assert len(read_spans(prefixed)) == len(otlp_receiver.spans()) >= len(read_spans(single))
    found = conversations(read_spans(prefixed))
    assert sorted(c.case or "" for c in found) == sorted(t for c in data["cases"] for t in [c["name"]] * 2)
    scored = score_traces_sync(
        [prefixed], load_suites([suite], registry), load_mapping(None), RunOptions(write_results=False)
    )
    assert not scored.unmatched
    assert _verdicts(scored.outcome.data) == _verdicts(data)


def test_the_sdk_console_form_reads_as_the_otlp_json_file(traced_agent: Any, tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    traced_agent.agent.provider.add_span_processor(SimpleSpanProcessor(memory))
    suite = traced_agent.suite(tmp_path)
    run_sync(load_suites([suite], registry), RunOptions(write_results=False, handle_sigint=False))
    lines = tmp_path / "console.jsonl"
    lines.write_text("".join(json.dumps(json.loads(s.to_json())) + "\n" for s in memory.get_finished_spans()))

    def shape(path: Path) -> list[Any]:
        return [
            ([(m.role, m.content, [t.to_dict() for t in m.tool_calls]) for m in c.messages], c.usage, c.trace_ids)
            for c in conversations(read_spans(path))
        ]

    # not run with --otel, and the agent names no conversation id: each request is a trace of its own
    assert shape(lines) == shape(traced_agent.spans) and len(shape(lines)) == 3


def test_openinference_spans_from_its_specification() -> None:
    (found,) = conversations(read_spans(DATA / "openinference_llm_spans.jsonl"), PRESETS["openinference"])
    user, reply = found.messages
    assert (user.role, user.content) == ("user", "what is 23 times 87")
    assert reply.content == "The product of 23 times 87 is 2001."
    assert [t.to_dict() for t in reply.tool_calls] == [
        {"name": "multiply", "arguments": {"a": 23, "b": 87}, "result": 2001}
    ]
    assert (found.usage.prompt_tokens, found.usage.completion_tokens) == (229 + 259, 21 + 14)
    assert found.trace_ids == ["409df945e0584829b240cfbdd2ff4488"]
    assert reply.latency_ms == pytest.approx(1176.287)


def test_logfire_spans_of_pydantic_ai() -> None:
    (found,) = conversations(read_spans(DATA / "logfire_pydantic_ai_spans.jsonl"), load_mapping("logfire"))
    user, reply = found.messages
    assert user.content == "Hello" and reply.content == '{"my_ret":"1"}'
    assert [t.to_dict() for t in reply.tool_calls] == [
        {"name": "my_ret", "arguments": {"x": 0}, "id": "pyd_ai_tool_call_id__my_ret", "result": 1}
    ]
    assert (found.usage.prompt_tokens, found.usage.completion_tokens, reply.latency_ms) == (103, 12, 900.0)


def test_a_mapping_file_changes_a_preset(tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("base: logfire\noutput_text: final_result\ncase: [app.case]\n")
    loaded = load_mapping(mapping)
    assert loaded.output_text == ["final_result"] and loaded.case == ["app.case"]
    assert loaded.tool_result == PRESETS["logfire"].tool_result


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("broken.jsonl", '{"resourceSpans": []}\n{"resourceSpans": [\n', r"broken.jsonl:2: not valid JSON"),
        ("noid.jsonl", '{"name": "x", "start_time": 1, "end_time": 2}\n', r"noid.jsonl:1: the span has no traceId"),
        (
            "badid.json",
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz", "spanId": "00f067aa0ba902b7", '
            '"startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}',
            r"badid.json:1: traceId 'xyz': expected 32 hex digits",
        ),
        ("spans.pb", "not protobuf at all", r"spans.pb: not an OTLP protobuf ExportTraceServiceRequest"),
    ],
)
def test_unreadable_trace_files_say_where(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TraceError, match=message):
        read_spans(path)


def test_a_wrong_mapping_field_is_located(tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("tool_nmae: [tool.name]\n")
    with pytest.raises(TraceError, match=r"mapping.yaml: tool_nmae: Extra inputs are not permitted"):
        load_mapping(mapping)
    with pytest.raises(TraceError, match="neither a preset"):
        load_mapping("jaeger")


def test_score_cli_reports_unmatched_conversations_and_bad_input(
    traced_agent: Any, live: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    suite, _ = live
    other = tmp_path / "other.yaml"
    other.write_text(
        "name: other\ntarget: {type: openai, base_url: 'http://127.0.0.1:9/v1'}\n"
        "cases:\n  - name: greets\n    turns: [{content: hi, assert: [{type: contains, value: hello}]}]\n"
        "  - name: thanks\n    turns: [{content: thanks}]\n"
    )
    result = runner.invoke(app, ["score", str(traced_agent.spans), "--suite", str(other)])
    assert result.exit_code == 2 and "none of its 4 conversation(s) matched a case" in result.output
    assert "no case starts with 'What is the weather in Paris?'" in result.output
    forced = runner.invoke(app, ["score", str(traced_agent.spans), "--suite", str(other), "--case", "greets"])
    assert forced.exit_code == 1 and "4 trials (0 passed, 4 failed" in forced.output
    unused = runner.invoke(app, ["score", str(traced_agent.spans), "--suite", str(suite), "-o", "x.csv"])
    assert unused.exit_code == 2 and "--output: not for trace files" in unused.output
    missing = runner.invoke(app, ["score", str(traced_agent.spans)])
    assert missing.exit_code == 2 and "--suite" in missing.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"resourceSpans": [}\n')
    broken = runner.invoke(app, ["score", str(bad), "--suite", str(suite)])
    assert broken.exit_code == 2 and "bad.jsonl:1: not valid JSON" in broken.output and "Traceback" not in broken.output


def test_judged_checks_run_on_traced_conversations(
    traced_agent: Any, model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from servers.model_server import Reply

    judge = model_server.script(default=Reply('{"reason": "names the forecast", "pass": true, "score": 0.9}'))
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    suite = tmp_path / "judged.yaml"
    suite.write_text(
        "name: judged\ntarget: {type: openai, base_url: 'http://127.0.0.1:9/v1'}\ncases:\n  - name: rain\n"
        "    turns: [{content: 'What is the weather in Oslo?',\n"
        "             assert: [{type: llm-rubric, value: Gives the forecast}]}]\n"
    )
    with httpx.Client() as client:  # production traffic, no Proctor run: the agent's own trace
        message = {"role": "user", "content": "What is the weather in Oslo?"}
        client.post(f"{traced_agent.url}/v1/chat/completions", json={"messages": [message]})
    options = RunOptions(write_results=False, judge="openai/judge", cache=False)
    scored = score_traces_sync([traced_agent.spans], load_suites([suite], registry), load_mapping(None), options)
    (check,) = scored.outcome.data["cases"][0]["trials"][0]["checks"]
    assert (check["type"], check["status"], check["score"]) == ("llm-rubric", "passed", 0.9)
    prompt = json.dumps(judge.bodies[-1])
    assert "4 \\u00b0C and raining" in prompt or "4 °C and raining" in prompt  # the traced reply was judged


def test_a_collector_file_with_both_proctors_and_the_agents_spans(
    traced_agent: Any, live: tuple[Path, dict[str, Any]], otlp_receiver: Any
) -> None:
    suite, data = live
    both = read_spans(traced_agent.spans) + [
        span
        for request in otlp_receiver.requests
        for span in spans_from_request(request.SerializeToString(), "application/x-protobuf")
    ]
    found = conversations(both)
    assert len(found) == 4 and all(len(c.messages) == 2 * (1 + (c.case == "weather-then-booking")) for c in found)
    own = traced_agent.spans.with_name("proctor.binpb")
    own.write_bytes(b"".join(len(b := r.SerializeToString()).to_bytes(4, "big") + b for r in otlp_receiver.requests))
    options = RunOptions(write_results=False)
    scored = score_traces_sync([traced_agent.spans, own], load_suites([suite], registry), load_mapping(None), options)
    assert not scored.unmatched and _verdicts(scored.outcome.data) == _verdicts(data)
