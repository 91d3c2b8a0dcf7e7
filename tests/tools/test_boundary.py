"""The tool server's URL reaches agents of every target kind, and the calls they make are checked by a goal
graph even though their chat APIs report none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites
from servers._serve import serve_app
from servers.mcp_rest import build_app

TOOLS = """\
tools:
  get_weather: {description: Current weather for a city, mock: "Sunny in {{ city }}"}
  book_room:
    input: {type: object, properties: {room: {type: string}, date: {type: string}}, required: [room, date]}
    mock: "Booked {{ room }} for {{ date }}"
"""

JOURNEY = """\
turns:
  - content: "What is the weather in Oslo?"
  - content: "Then book A1 on 2026-12-01."
expect:
  goal_details:
    - {type: tool_call, name: weather, tool_name: get_weather, args: {city: Oslo}}
    - {type: tool_call, name: booking, tool_name: book_room, args: {room: A1, date: "2026-12-01"}}
assert:
  - {type: tool-sequence, value: [get_weather, book_room]}
"""


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with serve_app(build_app()) as url:
        yield url


def run(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return run_sync(load_suites([path], registry), RunOptions(write_results=False)).data


def checks(data: dict[str, Any]) -> dict[str, str]:
    return {check["type"]: check["status"] for check in data["cases"][0]["trials"][0]["checks"]}


def test_a_goal_graph_checks_calls_the_agent_never_reported(tmp_path: Path) -> None:
    data = run(tmp_path, f'name: j\ntrials: 1\ntarget: "python:helpers.mcp_agents:desk"\n{TOOLS}{JOURNEY}')
    assert data["cases"][0]["status"] == "passed", data["cases"][0]["trials"][0]
    assert checks(data) == {"tool-sequence": "passed", "journey": "passed"}
    wrong = JOURNEY.replace("args: {room: A1,", "args: {room: B2,")
    data = run(tmp_path, f'name: j\ntrials: 1\ntarget: "python:helpers.mcp_agents:desk"\n{TOOLS}{wrong}')
    assert checks(data) == {"tool-sequence": "passed", "journey": "failed"}


def test_http_templates_get_tools_url(tmp_path: Path, agent_url: str) -> None:
    target = (
        f'target: {{type: http, request: {{url: "{agent_url}/chat", '
        'body: {message: "{{ message }}", tools_url: "{{ tools_url }}"}}}\n'
    )
    data = run(tmp_path, f"name: j\ntrials: 1\n{target}{TOOLS}{JOURNEY}")
    assert data["cases"][0]["status"] == "passed", data["cases"][0]["trials"][0]
    reply = data["cases"][0]["trials"][0]["turns"][1]
    assert reply["content"] == "Sunny in Oslo" and reply["tool_calls"][0]["source"] == "tools"


def test_openai_agents_get_the_tools_url_header(tmp_path: Path, agent_url: str) -> None:
    data = run(tmp_path, f'name: j\ntrials: 1\ntarget: "{agent_url}/v1"\n{TOOLS}{JOURNEY}')
    assert data["cases"][0]["status"] == "passed", data["cases"][0]["trials"][0]
    assert data["cases"][0]["trials"][0]["turns"][3]["content"] == "Booked A1 for 2026-12-01"


def test_reported_and_seen_calls_are_merged_once(tmp_path: Path) -> None:
    data = run(tmp_path, f'name: j\ntrials: 1\ntarget: "python:helpers.mcp_agents:reporting_desk"\n{TOOLS}{JOURNEY}')
    calls = [m["tool_calls"] for m in data["cases"][0]["trials"][0]["turns"] if m["role"] == "assistant"]
    merged, own = calls[0]
    assert merged == {
        "name": "get_weather", "arguments": {"city": "Oslo"}, "id": "c1", "result": "Sunny in Oslo",
        "source": "agent+tools", "latency_ms": merged["latency_ms"],
    }  # fmt: skip
    assert own == {"name": "lookup_notes", "arguments": {}, "id": "c2"}  # a tool of its own: as reported
    assert checks(data)["journey"] == "passed"  # the merged call counts once
