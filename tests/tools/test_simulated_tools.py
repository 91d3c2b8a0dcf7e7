"""Simulated tools: a model (a scripted loopback server here) plays the tool; without one, nothing is guessed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.run import RunOptions, run_sync
from proctor.run.trial import run_trial
from proctor.suite import load_suites
from proctor.targets import SessionContext, build_target
from servers.model_server import Reply

SUITE = """\
name: simulated
target: "python:helpers.mcp_agents:desk"
trials: 1
tools:
  get_weather:
    description: Current weather for a city
    input: {type: object, properties: {city: {type: string}}}
    simulate: {instructions: It is always snowing in Tromso.}
turns:
  - content: "What is the weather in Tromso?"
    assert: [{type: contains, value: snow}]
"""


def run(tmp_path: Path, **options: Any) -> dict[str, Any]:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return run_sync(load_suites([path], registry), RunOptions(write_results=False, **options)).data


def test_a_model_plays_the_tool(tmp_path: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    script = model_server.script(Reply('{"sky": "snow", "celsius": -3}'))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    data = run(tmp_path, simulator="openai/tool-sim")
    trial = data["cases"][0]["trials"][0]
    assert trial["status"] == "passed", trial
    (call,) = trial["turns"][1]["tool_calls"]
    assert call["result"] == {"sky": "snow", "celsius": -3} and call["source"] == "tools"
    assert json.loads(trial["turns"][1]["content"]) == {"sky": "snow", "celsius": -3}
    (request,) = script.bodies
    system, user = request["messages"]
    assert "get_weather" in system["content"] and "Current weather for a city" in system["content"]
    assert "always snowing in Tromso" in system["content"]
    assert '{"city": "Tromso"}' in user["content"] and "What is the weather in Tromso?" in user["content"]


def test_without_a_model_the_trial_is_skipped_with_the_option_to_give(tmp_path: Path) -> None:
    trial = run(tmp_path)["cases"][0]["trials"][0]
    assert trial["status"] == "skipped" and "played by a model, but none is configured" in trial["reason"]
    assert "--simulator" in trial["reason"]


@pytest.mark.anyio
async def test_a_trial_run_on_its_own_names_the_missing_model(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE, encoding="utf-8")
    (case,) = load_suites([path], registry)[0].cases
    target = build_target(case.target)
    result = await run_trial(case, 1, target, SessionContext(case=case.name, trial=1))
    assert result.status == "error" and result.error_type == "NoToolModel"
    assert result.error is not None and "played by a model, but none is configured" in result.error
