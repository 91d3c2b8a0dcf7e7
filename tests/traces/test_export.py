"""`proctor run --otel`: one trace per trial, sent by the SDK's OTLP exporter to a loopback receiver that
decodes the official protobuf; the agent gets W3C trace headers and its own spans join the trial's trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.errors import ConfigError
from proctor.results import build_report
from proctor.results._html import render_html
from proctor.results._markdown import render_markdown
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites
from proctor.traces import open_export, read_spans

JUDGED = """\
name: judged
target: {type: openai, base_url: "AGENT/v1"}
trials: 2
cases:
  - name: weather
    turns:
      - content: "What is the weather in Oslo?"
        assert:
          - {type: contains, value: "raining"}
          - {type: llm-rubric, value: "Answers with the weather"}
"""


def _run(suite: Path, **options: Any) -> dict[str, Any]:
    settings = RunOptions(write_results=False, handle_sigint=False, cache=False, **options)
    return run_sync(load_suites([suite], registry), settings).data


def _by_trace(spans: list[Any]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for span in spans:
        found.setdefault(span.trace_id, []).append(span)
    return found


def test_each_trial_is_one_trace_with_turn_tool_check_and_judge_spans(
    traced_agent: Any, otlp_receiver: Any, model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from servers.model_server import Reply

    judge = model_server.script(default=Reply('{"reason": "it says rain", "pass": true, "score": 1}'))
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    suite = tmp_path / "judged.yaml"
    suite.write_text(JUDGED.replace("AGENT", traced_agent.url), encoding="utf-8")
    data = _run(
        suite,
        otel_endpoint=otlp_receiver.base_url,
        judge="openai/judge",
        trace_url="http://jaeger:16686/trace/{trace_id}",
    )
    trials = data["cases"][0]["trials"]
    assert [t["status"] for t in trials] == ["passed", "passed"]
    traces = _by_trace(otlp_receiver.spans())
    assert sorted(traces) == sorted(t["trace_id"] for t in trials)  # one trace per trial, nothing else
    assert trials[0]["trace_url"] == f"http://jaeger:16686/trace/{trials[0]['trace_id']}"
    assert otlp_receiver.content_types[0] == "application/x-protobuf"
    for trial in trials:
        spans = {s.name: s for s in traces[trial["trace_id"]]}
        root = spans["proctor.trial weather"]
        assert root.parent_span_id == "" and root.resource["service.name"] == "proctor"
        assert root.attributes["proctor.trial"] == trial["trial"] and root.attributes["proctor.status"] == "passed"
        assert root.attributes["proctor.score"] == 1.0
        turn = next(s for s in spans.values() if s.name.startswith("invoke_agent "))
        assert turn.parent_span_id == root.span_id
        assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
        tokens = (turn.attributes["gen_ai.usage.input_tokens"], turn.attributes["gen_ai.usage.output_tokens"])
        assert tokens == (trial["tokens"]["prompt"], trial["tokens"]["completion"]) == (26, 9)
        assert turn.end_ns - turn.start_ns == pytest.approx(trial["turns"][1]["latency_ms"] * 1e6, rel=0.01)
        assert json.loads(turn.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"].endswith("Oslo?")
        tool = spans["execute_tool get_weather"]
        assert tool.parent_span_id == turn.span_id and json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {
            "city": "Oslo"
        }
        assert json.loads(tool.attributes["gen_ai.tool.call.result"])["forecast"] == "4 °C and raining"
        check = spans["proctor.check contains: raining"]
        assert check.attributes["proctor.check.status"] == "passed" and check.attributes["proctor.check.score"] == 1.0
        assert "raining" in check.attributes["proctor.check.reason"] and check.attributes["proctor.check.turn"] == 0
        call = spans["chat judge"]
        assert call.parent_span_id == root.span_id
        assert call.attributes["gen_ai.system"] == "openai" and call.attributes["gen_ai.request.model"] == "judge"
        assert call.attributes["proctor.role"] == "judge"
        assert (call.attributes["gen_ai.usage.input_tokens"], call.attributes["gen_ai.usage.output_tokens"]) == (
            100,
            20,
        )
        assert root.start_ns <= turn.start_ns <= turn.end_ns <= call.start_ns <= call.end_ns <= root.end_ns


def test_the_agent_gets_trace_headers_and_its_spans_join_the_trial_trace(
    traced_agent: Any, otlp_receiver: Any, tmp_path: Path
) -> None:
    data = _run(traced_agent.suite(tmp_path), otel=True, otel_endpoint=otlp_receiver.base_url + "/v1/traces")
    roots = {s.trace_id: s for s in otlp_receiver.spans() if s.name.startswith("proctor.trial ")}
    headers = traced_agent.agent.headers
    assert len(headers) == 3  # two turns of one case, one of the other
    for sent in headers:
        version, trace_id, parent, flags = sent["traceparent"].split("-")
        assert (version, len(flags)) == ("00", 2) and trace_id in roots and parent == roots[trace_id].span_id
        assert sent["tracestate"] == "proctor=t1"
    agent_spans = read_spans(traced_agent.spans)  # the agent's own file: OTLP JSON, as its exporter wrote it
    turns = [s for s in agent_spans if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert len(turns) == 3
    assert all(s.trace_id in roots and s.parent_id == roots[s.trace_id].span_id for s in turns)
    trials = [t for c in data["cases"] for t in c["trials"]]
    # the agent replies with its trace id: the one Proctor started for the trial
    assert all(set(t["trace_ids"]) == {t["trace_id"]} for t in trials)


def test_the_collector_named_in_the_environment_turns_exporting_on(
    traced_agent: Any, otlp_receiver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver.base_url)
    data = _run(traced_agent.suite(tmp_path))
    assert {t["trace_id"] for c in data["cases"] for t in c["trials"]} == {
        s.trace_id for s in otlp_receiver.spans() if s.name.startswith("proctor.trial ")
    }


def test_nothing_is_traced_or_sent_when_exporting_is_off(
    traced_agent: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    data = _run(traced_agent.suite(tmp_path))
    assert all("traceparent" not in sent for sent in traced_agent.agent.headers)
    assert all("trace_id" not in t and "trace_url" not in t for c in data["cases"] for t in c["trials"])
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert open_export(enabled=False, endpoint=None) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"endpoint": "localhost:4318"}, "expected an http(s) URL"),
        ({"endpoint": None, "url_template": "http://jaeger/trace/"}, "must name {trace_id}"),
        ({"endpoint": None, "url_template": "javascript:alert('{trace_id}')"}, "expected an http(s) URL"),
    ],
)
def test_bad_settings_are_config_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        open_export(enabled=True, **options)


def test_grpc_needs_its_exporter_or_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    try:
        import opentelemetry.exporter.otlp.proto.grpc  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="opentelemetry-exporter-otlp-proto-grpc"):
            open_export(enabled=True, endpoint=None)
    else:
        export = open_export(enabled=True, endpoint=None)
        assert export is not None
        export.shutdown()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(ConfigError, match="not supported"):
        open_export(enabled=True, endpoint=None)


def test_proctor_run_otel_on_the_command_line(traced_agent: Any, otlp_receiver: Any, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from proctor.cli import app

    suite = traced_agent.suite(tmp_path)
    args = ["run", str(suite), "--otel-endpoint", otlp_receiver.base_url, "--trace-url", "http://j/{trace_id}", "--ci"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (written,) = (tmp_path / ".results").glob("*.json")
    trials = [t for c in json.loads(written.read_text())["cases"] for t in c["trials"]]
    roots = {s.trace_id for s in otlp_receiver.spans() if s.name.startswith("proctor.trial ")}
    assert {t["trace_id"] for t in trials} == roots and len(roots) == 2
    assert all(t["trace_url"] == f"http://j/{t['trace_id']}" for t in trials)
    data = json.loads(written.read_text())
    trial = data["cases"][0]["trials"][0]
    trial["status"], trial["passed"] = "failed", False  # the markdown report details failed trials
    report = build_report([(data, None)])
    link = f"[`{trial['trace_id']}`](http://j/{trial['trace_id']})"
    assert f"**Trace:** {link}" in render_markdown(report)
    assert f'<a href="http://j/{trial["trace_id"]}"><code>{trial["trace_id"]}</code></a>' in render_html(report)


def test_the_sdk_is_not_imported_unless_traces_are_used() -> None:
    import subprocess
    import sys

    code = (
        "import sys, proctor.run.batch, proctor.recorded, proctor.service, proctor.cli._run, proctor.cli._score; "
        "from proctor.traces import open_export; assert open_export(enabled=False, endpoint=None) is None; "
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'google.protobuf'))))"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "[]"


def test_a_simulated_users_calls_are_spans_of_the_trial(
    traced_agent: Any, otlp_receiver: Any, model_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from servers.model_server import Reply

    sim = model_server.script(
        Reply("Book 2 nights in Rome."), default=Reply("Thanks. So Long, and Thanks for All the Fish")
    )
    monkeypatch.setenv("OPENAI_BASE_URL", sim.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    suite = tmp_path / "sim.yaml"
    suite.write_text(
        f"name: sim\ntarget: {{type: openai, base_url: '{traced_agent.url}/v1'}}\ntrials: 1\n"
        "simulate:\n  story: You plan a trip to Rome.\n  starting_sentence: What is the weather in Rome?\n"
        "  arms: [supplied]\n  max_turns: 4\n"
    )
    data = _run(suite, otel_endpoint=otlp_receiver.base_url, simulator="openai/sim")
    trial = data["cases"][0]["trials"][0]
    spans = [s for s in otlp_receiver.spans() if s.trace_id == trial["trace_id"]]
    calls = [s for s in spans if s.name == "chat sim"]
    assert calls and all(c.attributes["proctor.role"] == "simulator" for c in calls)
    assert all(c.attributes["gen_ai.request.model"] == "sim" for c in calls)
    turns = [s for s in spans if s.name.startswith("invoke_agent ")]
    sent = [json.loads(t.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] for t in turns]
    assert sent[:2] == ["What is the weather in Rome?", "Book 2 nights in Rome."]
    assert len(traced_agent.agent.headers) == len(turns)  # every agent request carried the trial's context
    assert all(h["traceparent"].split("-")[1] == trial["trace_id"] for h in traced_agent.agent.headers)


def test_without_the_otel_extra_exporting_says_what_to_install() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from proctor.errors import ConfigError\nfrom proctor.traces import open_export\n"
        "try:\n    open_export(enabled=True, endpoint=None)\nexcept ConfigError as exc:\n    print(exc)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "pip install 'proctor-eval[otel]'" in done.stdout
