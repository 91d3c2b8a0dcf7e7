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


MOCKS = """\
name: mocks
target: {type: python, callable: "helpers.mcp_agents:desk"}
trials: 1
tools:
  get_weather:
    description: Current weather for a city
    mock:
      results: ["Sunny in {{ city }}", "Cloudy in {{ city }} (call {{ call }})"]
  book_room:
    input: {type: object, properties: {room: {type: string}, date: {type: string}}}
    mock:
      table:
        - {args: {room: A1}, result: {booked: "{{ room }}", on: "{{ date }}"}}
        - {args: {room: Z9}, error: "room {{ room }} does not exist"}
        - {args: {room: "meeting room b"}, arg_matching: {room: fuzzy}, result: "fuzzy B"}
      latency_ms: 30
cases:
  - name: sequence
    turns:
      - {content: "Weather in Oslo?"}
      - {content: "Weather in Oslo?"}
      - {content: "Weather in Oslo?"}
  - name: table
    turns:
      - {content: "Book A1 on 2026-12-01"}
      - {content: "Book Z9 on 2026-12-01"}
      - {content: "Book Q7 on 2026-12-01"}
  - name: errors-injected
    tools:
      get_weather:
        mock: {result: "Fine in {{ city }}", error: "upstream timeout", error_on: [2]}
    turns:
      - {content: "Weather in Rome?"}
      - {content: "Weather in Rome?"}
      - {content: "Weather in Rome?"}
"""


def replies(case: dict[str, Any]) -> list[str]:
    return [m["content"] for m in case["trials"][0]["turns"] if m["role"] == "assistant"]


def test_sequences_tables_errors_and_latency(tmp_path: Path) -> None:
    sequence, table, errors = run(tmp_path, MOCKS)["cases"]
    # a sequence answers in call order, then its last result repeats; calls are counted per trial
    assert replies(sequence) == ["Sunny in Oslo", "Cloudy in Oslo (call 2)", "Cloudy in Oslo (call 3)"]
    # a table row matched by argument; an injected error reaches the agent as a failed call
    booked, missing, unmatched = replies(table)
    assert booked == '{"booked": "A1", "on": "2026-12-01"}'
    assert missing == "Sorry, book_room failed: room Z9 does not exist"
    assert unmatched.startswith("Sorry, book_room failed: no row of the mock of book_room matches")
    calls = [m["tool_calls"][0] for m in table["trials"][0]["turns"] if m["role"] == "assistant"]
    assert calls[0]["result"] == {"booked": "A1", "on": "2026-12-01"} and "error" not in calls[0]
    assert calls[1]["error"] is True and calls[2]["error"] is True
    assert all(call["latency_ms"] >= 30 for call in calls)  # the injected latency
    # the case's block overrides the file's tool of the same name; the error only on call 2
    assert replies(errors) == ["Fine in Rome", "Sorry, get_weather failed: upstream timeout", "Fine in Rome"]


def test_each_trial_has_its_own_endpoint_and_counts(tmp_path: Path) -> None:
    text = SIMPLE.replace("trials: 2", "trials: 4").replace(
        'mock: "Sunny, 21 C in {{ city }}"', 'mock: {results: ["first {{ city }}", "second"]}'
    )
    text = text.replace('value: "Sunny, 21 C in Oslo"', 'value: "first Oslo"')
    data = run(tmp_path, text, concurrency=4)
    trials = data["cases"][0]["trials"]
    assert [t["turns"][1]["content"] for t in trials] == ["first Oslo"] * 4  # no trial saw another's calls


def test_fuzzy_table_rows_use_the_journey_matchers(tmp_path: Path) -> None:
    table = run(tmp_path, MOCKS.replace("Book A1 on", "Book MeetingRoomB on"))["cases"][1]
    assert replies(table)[0] == "fuzzy B"  # 'MeetingRoomB' ~ 'meeting room b' by token similarity
