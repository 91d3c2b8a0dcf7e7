"""Mocked tools served over MCP to an agent that takes its tools from `tools_url` and reports no calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor.checks import registry
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites

SIMPLE = """\
name: weather
target: {type: python, callable: "helpers.mcp_agents:desk"}
trials: 2
tools:
  get_weather:
    description: Current weather for a city
    input: {type: object, properties: {city: {type: string}}, required: [city]}
    mock: "Sunny, 21 C in {{ city }}"
turns:
  - content: "What is the weather in Oslo?"
    assert:
      - {type: contains, value: "Sunny, 21 C in Oslo"}
      - {type: tool-called, value: get_weather}
"""


def run(tmp_path: Path, text: str, **options: Any) -> dict[str, Any]:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    suites = load_suites([path], registry)
    return run_sync(suites, RunOptions(write_results=False, **options)).data


def test_the_simple_form_serves_a_templated_mock_and_sees_the_calls(tmp_path: Path) -> None:
    data = run(tmp_path, SIMPLE)
    case = data["cases"][0]
    assert case["status"] == "passed", case
    for trial in case["trials"]:
        reply = trial["turns"][1]
        assert reply["content"] == "Sunny, 21 C in Oslo"
        (call,) = reply["tool_calls"]
        assert call["name"] == "get_weather" and call["arguments"] == {"city": "Oslo"}
        assert call["result"] == "Sunny, 21 C in Oslo" and call["source"] == "tools"
        assert call["latency_ms"] >= 0
        assert [c["status"] for c in trial["checks"]] == ["passed", "passed"]
