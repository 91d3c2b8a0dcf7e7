"""Proxy to a real MCP server (the SDK's own `MCPServer`), record a cassette, replay it with the server stopped."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.run import RunOptions, run_sync
from proctor.suite import Trust, load_suites
from servers import mcp_weather
from servers._serve import serve_app

TURNS = """\
turns:
  - content: "What is the weather in Oslo?"
    assert: [{type: tool-called, value: get_weather}]
  - content: "Book A1 on 2026-12-01"
  - content: "Book Z9 on 2026-12-01"
  - content: "What is the weather in Oslo?"
"""


def suite(tools: str, turns: str = TURNS) -> str:
    return f'name: desk\ntarget: {{type: python, callable: "helpers.mcp_agents:desk"}}\ntrials: 1\n{tools}{turns}'


def recording(url: str) -> str:
    return f"""\
tools:
  get_weather: {{proxy: {{url: "{url}"}}, cassette: cassettes/desk.json}}
  book_room: {{proxy: {{url: "{url}"}}, cassette: cassettes/desk.json}}
"""


REPLAY = """\
tools:
  get_weather: {replay: cassettes/desk.json}
  book_room: {replay: cassettes/desk.json}
"""


@pytest.fixture
def weather_url() -> Iterator[str]:
    with serve_app(mcp_weather.build().streamable_http_app(), lifespan="on") as base:
        yield f"{base}/mcp"


def run(tmp_path: Path, text: str, trust: Trust | None = None) -> dict[str, Any]:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return run_sync(load_suites([path], registry, trust=trust), RunOptions(write_results=False)).data


def turns(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The transcript without timings (which differ between runs)."""
    out = []
    for message in data["cases"][0]["trials"][0]["turns"]:
        calls = [{k: v for k, v in call.items() if k != "latency_ms"} for call in message["tool_calls"]]
        out.append({"role": message["role"], "content": message["content"], "tool_calls": calls})
    return out


def test_record_then_replay_with_the_server_stopped_gives_the_same_transcript(tmp_path: Path) -> None:
    with serve_app(mcp_weather.build().streamable_http_app(), lifespan="on") as base:
        before = len(mcp_weather.CALLS)
        recorded = run(tmp_path, suite(recording(f"{base}/mcp")))
        assert len(mcp_weather.CALLS) - before == 4  # every call reached the real server
    assert recorded["cases"][0]["status"] == "passed", recorded["cases"][0]
    transcript = turns(recorded)
    assert transcript[1]["content"] == "Rain, 12 C in Oslo"
    assert transcript[3]["content"].startswith("Booked A1 on 2026-12-01 (booking #")
    assert transcript[5]["content"].startswith("Sorry, book_room failed:") and "book_room" in transcript[5]["content"]
    assert transcript[5]["tool_calls"][0]["error"] is True
    cassette = json.loads((tmp_path / "cassettes" / "desk.json").read_text())
    assert cassette["proctor_cassette"] == 1
    # the tools' descriptions and schemas were imported from the real server's list
    tools = {tool["name"]: tool for tool in cassette["tools"]}
    assert tools["get_weather"]["description"] == "Current weather for a city."
    assert tools["book_room"]["inputSchema"]["required"] == ["room", "date"]
    # the second identical weather call has a result of its own (a tool may answer differently the next time)
    assert [(c["tool"], len(c["results"])) for c in cassette["calls"]] == [
        ("book_room", 1), ("book_room", 1), ("get_weather", 2),
    ]  # fmt: skip

    calls = len(mcp_weather.CALLS)
    replayed = run(tmp_path, suite(REPLAY))  # the server is stopped
    assert len(mcp_weather.CALLS) == calls
    assert replayed["cases"][0]["status"] == "passed"
    assert turns(replayed) == transcript
    assert turns(run(tmp_path, suite(REPLAY))) == transcript  # and again: deterministic


def test_a_call_not_in_the_cassette_is_a_loud_error(tmp_path: Path, weather_url: str) -> None:
    run(tmp_path, suite(recording(weather_url)))
    data = run(tmp_path, suite(REPLAY, 'turns:\n  - content: "What is the weather in Paris?"\n'))
    trial = data["cases"][0]["trials"][0]
    assert data["cases"][0]["status"] == "error" and trial["status"] == "error"
    assert "get_weather" in trial["error"] and '{"city": "Paris"}' in trial["error"]
    assert "is not in cassette" in trial["error"] and trial["error_type"] == "ToolReplayError"


def test_record_new_fills_in_what_the_cassette_lacks(tmp_path: Path, weather_url: str) -> None:
    run(tmp_path, suite(recording(weather_url)))
    tools = REPLAY.replace(
        "get_weather: {replay: cassettes/desk.json}",
        f'get_weather: {{replay: cassettes/desk.json, record: new, proxy: {{url: "{weather_url}"}}}}',
    )
    before = len(mcp_weather.CALLS)
    data = run(tmp_path, suite(tools, 'turns:\n  - content: "Weather in Paris?"\n  - content: "Weather in Oslo?"\n'))
    assert [m["content"] for m in data["cases"][0]["trials"][0]["turns"][1::2]] == [
        "Rain, 12 C in Paris", "Rain, 12 C in Oslo",
    ]  # fmt: skip
    assert mcp_weather.CALLS[before:] == [("get_weather", {"city": "Paris"})]  # Oslo came from the cassette
    cassette = json.loads((tmp_path / "cassettes" / "desk.json").read_text())
    assert {"city": "Paris"} in [c["arguments"] for c in cassette["calls"]]


def test_a_missing_cassette_is_the_trials_error(tmp_path: Path) -> None:
    data = run(tmp_path, suite(REPLAY))
    trial = data["cases"][0]["trials"][0]
    assert trial["status"] == "error" and "cassettes/desk.json does not exist" in trial["error"]


STDIO = f"""\
tools:
  get_weather:
    proxy: {{command: ["{sys.executable}", "{Path(mcp_weather.__file__).resolve()}"]}}
    cassette: cassettes/stdio.json
"""


def test_a_stdio_server_is_proxied_when_the_suite_is_trusted(tmp_path: Path) -> None:
    text = suite(STDIO, 'turns:\n  - content: "Weather in Lima?"\n')
    with pytest.raises(SuiteError) as error:
        run(tmp_path, text, trust=Trust(trusted=False, root=tmp_path))
    issues = {issue.field: issue.message for issue in error.value.issues}  # the python target needs trust too
    assert "--trust" in issues["tools.get_weather.proxy.command"]
    assert "tool server" in issues["tools.get_weather.proxy.command"]
    data = run(tmp_path, text, trust=Trust(trusted=True, root=tmp_path))
    assert data["cases"][0]["trials"][0]["turns"][1]["content"] == "Rain, 12 C in Lima"
    assert (tmp_path / "cassettes" / "stdio.json").exists()


def test_mocks_import_their_schemas_from_a_real_server_or_a_cassette(tmp_path: Path, weather_url: str) -> None:
    target = 'name: list\ntarget: "python:helpers.mcp_agents:tool_list"\ntrials: 1\n'
    turns = "turns:\n  - content: which tools?\n"
    live = f'tools:\n  book_room: {{mock: "ok", schema_from: {{url: "{weather_url}"}}}}\n'
    data = run(tmp_path, target + live + turns)
    assert (
        data["cases"][0]["trials"][0]["turns"][1]["content"]
        == "book_room: Book a meeting room for a day. ['date', 'room']"
    )
    run(tmp_path, suite(recording(weather_url)))  # writes cassettes/desk.json with the server's tool list
    recorded = "tools:\n  get_weather: {mock: sunny, schema_from: cassettes/desk.json}\n"
    data = run(tmp_path, target + recorded + turns)
    assert data["cases"][0]["trials"][0]["turns"][1]["content"] == "get_weather: Current weather for a city. ['city']"
    unknown = "tools:\n  nope: {mock: sunny, schema_from: cassettes/desk.json}\n"
    trial = run(tmp_path, target + unknown + turns)["cases"][0]["trials"][0]
    assert trial["status"] == "error" and "its schema_from source has no tool of that name" in trial["error"]
