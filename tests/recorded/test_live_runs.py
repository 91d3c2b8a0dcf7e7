"""The agent scorers on live runs: suite checks through `proctor run`, and a finished trial as `AgentData`."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import proctor.recorded
from proctor.cli import app
from proctor.recorded import AgentScorers, agent_data_from_trial
from proctor.results import TrialResult
from servers.model_server import Reply

SUITE = """\
name: memory
target: python:helpers.agents:memory
judge: openai/live-judge
turns:
  - content: "My name is Ada."
    assert:
      - type: tool-relevancy
        value: {tools_available: [{name: remember, description: Stores a fact about the user}]}
      - type: role-adherence
        value: {agent_role: A friendly assistant that remembers names}
  - content: "What is my name?"
    assert:
      - type: tool-correctness-exact
        value: {expected_tool_call: {name: recall, arguments: {}}}
assert:
  - type: goal-achievement
  - type: conversation-coherence
    value: {agent_exit: false}
"""
VERDICT = json.dumps({"original_task": "Remember the user's name.", "reasoning": "Good.", "score": 9})


def test_scorers_as_suite_checks_in_a_run(model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = model_server.script(default=Reply(VERDICT))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    (tmp_path / "memory.yaml").write_text(SUITE)
    result = CliRunner().invoke(app, ["run", str(tmp_path), "--ci", "--no-cache", "--trust"])
    assert result.exit_code == 0, result.output
    data = json.loads(Path(json.loads(result.stdout)["results_file"]).read_text())
    checks = {c["type"]: c for c in data["cases"][0]["trials"][0]["checks"]}
    assert checks["tool-relevancy"]["status"] == "passed" and checks["tool-relevancy"]["turn"] == 0
    assert checks["role-adherence"]["score"] == pytest.approx(8 / 9)
    assert checks["tool-correctness-exact"]["status"] == "passed"
    assert checks["goal-achievement"]["details"]["original_task"] == "Remember the user's name."
    assert checks["conversation-coherence"]["status"] == "skipped"
    prompts = [b["messages"][1]["content"] for b in script.bodies]
    assert any('"tool_name": "remember"' in p and "Stores a fact" in p for p in prompts)
    assert any("What is my name?" in p and "<trace>" in p for p in prompts)


@pytest.mark.anyio
async def test_a_finished_trial_scores_like_a_record(model_server: Any) -> None:
    from proctor.models import ModelSettings, get_model
    from proctor.transcript import Message, ToolCall

    script = model_server.script(default=Reply(VERDICT))
    model = get_model("openai/trial-judge", settings=ModelSettings(base_url=script.base_url, api_key="k", cache=None))
    turns = [Message("user", "Book room A1"), Message("assistant", "Booked.", [ToolCall("book", {"room": "A1"})])]
    trial = TrialResult("rooms.yaml::book", 1, "passed", 1.0, turns=turns)
    async with AgentScorers(model) as scorers:
        result = await scorers.score_goal_achievement(agent_data_from_trial(trial))
    assert result.score == 9 and result.normalized == pytest.approx(8 / 9)  # type: ignore[union-attr]
    assert '"content": "Book room A1"' in script.bodies[0]["messages"][1]["content"]


def test_public_names_resolve() -> None:
    module = importlib.import_module("proctor.recorded")
    assert sorted(module.__all__) == module.__all__
    for name in module.__all__:
        assert getattr(proctor.recorded, name) is not None
    assert {"AGENT_SCORERS", "AgentData", "AgentDataset", "AgentScorers", "score_file"} <= set(dir(module))
    with pytest.raises(AttributeError):
        _ = proctor.recorded.Nope  # type: ignore[attr-defined]
