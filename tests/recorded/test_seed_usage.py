"""NovaEval's usage examples, as written, with Proctor's import names, against a scripted judge server."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from servers.model_server import Reply

VERDICT = {"original_task": "Solve a math problem.", "reasoning": "Fine.", "score": 4}


@pytest.fixture
def judge_server(model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    script = model_server.script(default=Reply(json.dumps(VERDICT)))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "your-key")
    monkeypatch.chdir(tmp_path)  # the default judge cache goes to .proctor/cache here
    return script


def test_basic_usage(judge_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from proctor.models import get_model
    from proctor.recorded import AgentData, AgentScorers

    async def score_agent() -> Any:
        # Initialize model
        model = get_model("openai/gpt-3.5-turbo")

        # Create scorers
        scorers = AgentScorers(model)

        # Create agent data
        agent_data = AgentData(
            agent_task="Solve math problem",
            agent_role="Math assistant",
            system_prompt="You are a helpful math assistant",
            agent_response="The answer is 42",
            tools_available=[{"name": "calculator", "description": "Perform calculations"}],
            tool_calls=[{"tool_name": "calculator", "parameters": {"expression": "2+2"}, "call_id": "1"}],
            # ... other fields
        )

        # Score all aspects
        results = await scorers.score_all(agent_data)
        print(results)
        return results

    # Run the scoring
    results = asyncio.run(score_agent())
    assert "tool_relevancy" in capsys.readouterr().out
    assert list(results) == [
        "tool_relevancy",
        "tool_correctness",
        "parameter_correctness",
        "task_progression",
        "context_relevancy",
        "role_adherence",
        "goal_achievement",
        "conversation_coherence",
    ]
    (relevancy,) = results["tool_relevancy"]
    assert (relevancy.score, relevancy.normalized, relevancy.tool_name) == (4, pytest.approx(1 / 3), "calculator")
    progression = results["task_progression"]
    assert (progression.original_task, progression.score, progression.normalized) == ("Solve a math problem.", 4, 0.75)
    assert results["context_relevancy"].reasoning == "Fine."
    assert results["tool_correctness"]["missing_fields"] == ["expected_tool_call"]
    assert results["parameter_correctness"]["missing_fields"] == ["tool_call_results"]
    assert results["goal_achievement"] == {
        "skipped": True,
        "reason": "the agent has not exited (agent_exit is false): goal_achievement is scored once its run is over",
    }
    assert len(judge_server.bodies) == 4  # relevancy (one call), progression, context, role


def test_individual_and_advanced_scorers(judge_server: Any) -> None:
    from proctor.models import get_model
    from proctor.recorded import AgentData, AgentScorers

    model = get_model("openai/gpt-4o-mini")  # models are shared per name: one per test
    scorers = AgentScorers(model)
    agent_data = AgentData(
        agent_task="Solve math problem",
        agent_role="Math assistant",
        system_prompt="You are a helpful math assistant",
        agent_response="The answer is 4",
        tools_available=[{"name": "calculator", "description": "Perform calculations"}],
        tool_calls=[{"tool_name": "calculator", "parameters": {"expression": "2+2"}, "call_id": "1"}],
        expected_tool_call={"tool_name": "calculator", "parameters": {"expression": "2+2"}},
        parameters_passed={"expression": "2+2"},
        tool_call_results=[{"call_id": "1", "result": 4, "success": True}],
        trace=[{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}],
        agent_exit="true",
    )

    async def individual() -> dict[str, Any]:
        # Score specific aspects
        tool_relevancy = await scorers.score_tool_relevancy(agent_data)
        tool_correctness = await scorers.score_tool_correctness(agent_data)
        parameter_correctness = await scorers.score_parameter_correctness(agent_data)
        task_progression = await scorers.score_task_progression(agent_data)
        context_relevancy = await scorers.score_context_relevancy(agent_data)
        role_adherence = await scorers.score_role_adherence(agent_data)

        # Advanced scorers (require agent to have exited)
        goal_achievement = await scorers.goal_achievement_scorer(agent_data, model)
        conversation_coherence = await scorers.conversation_coherence_scorer(agent_data, model)
        return locals()

    found = asyncio.run(individual())
    for name in ("tool_relevancy", "tool_correctness", "parameter_correctness"):
        assert isinstance(found[name], list) and found[name][0].score == 4, name
    for name in ("task_progression", "goal_achievement", "conversation_coherence"):
        assert found[name].original_task == "Solve a math problem.", name
    assert found["context_relevancy"].scale == (1, 10) and found["role_adherence"].score == 4
    assert len(judge_server.bodies) == 8


def test_function_style_scorers(judge_server: Any) -> None:
    from proctor.recorded import (
        AgentData,
        context_relevancy_scorer,
        conversation_coherence_scorer,
        goal_achievement_scorer,
        parameter_correctness_scorer,
        role_adherence_scorer,
        task_progression_scorer,
        tool_correctness_scorer,
        tool_relevancy_scorer,
    )

    data = AgentData(agent_task="t", agent_role="r", agent_response="a", system_prompt="s", trace="[]", agent_exit=True)

    async def main() -> list[Any]:
        model = "openai/gpt-4.1"
        return [
            await tool_relevancy_scorer(data, model),
            await tool_correctness_scorer(data, model),
            await parameter_correctness_scorer(data, model),
            await task_progression_scorer(data, model),
            await context_relevancy_scorer(data, model),
            await role_adherence_scorer(data, model),
            await goal_achievement_scorer(data, model),
            await conversation_coherence_scorer(data, model),
        ]

    results = asyncio.run(main())
    assert [r["missing_fields"] for r in results[:3]] == [
        ["tools_available", "tool_calls"],
        ["expected_tool_call", "tool_calls"],
        ["tool_calls", "tool_call_results"],
    ]
    assert [r.score for r in results[3:6]] == [4, 4, 4]
    assert results[6]["missing_fields"] == ["trace"]  # "[]" decodes to an empty trace
    assert len(judge_server.bodies) == 3


def test_working_with_datasets(judge_server: Any, tmp_path: Path) -> None:
    from proctor.recorded import AgentDataset, AgentScorers

    with (tmp_path / "agent_data.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["agent_task", "agent_role", "agent_response", "agent_exit"])
        writer.writerows(
            [["Add 2 and 2", "Math assistant", "4", "true"], ["Add 3 and 3", "Math assistant", "6", "false"]]
        )
    (tmp_path / "agent_data.json").write_text(
        json.dumps([{"agent_task": "Halve 8", "agent_role": "r", "agent_response": "4"}])
    )
    (tmp_path / "large_agent_data.csv").write_text((tmp_path / "agent_data.csv").read_text())
    scorers = AgentScorers("openai/gpt-4.1-nano")
    seen: list[Any] = []

    async def main() -> None:
        # Load data from CSV
        dataset = AgentDataset()
        dataset.ingest_from_csv("agent_data.csv")

        # Load data from JSON
        dataset.ingest_from_json("agent_data.json")

        # Stream large datasets
        for chunk in dataset.stream_from_csv("large_agent_data.csv", chunk_size=1000):
            for agent_data in chunk:
                results = await scorers.score_all(agent_data)
                seen.append(results)
                # Process results...

        # Export results
        dataset.export_to_csv("scored_results.csv")
        dataset.export_to_json("scored_results.json")

    asyncio.run(main())
    assert len(seen) == 2 and seen[0]["context_relevancy"].score == 4
    assert [row["agent_task"] for row in json.loads((tmp_path / "scored_results.json").read_text())] == [
        "Add 2 and 2",
        "Add 3 and 3",
        "Halve 8",
    ]
    assert (tmp_path / "scored_results.csv").read_text().startswith("user_id,task_id,turn_id,")


def test_judge_failure_is_a_dict_not_a_score(
    model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from proctor.recorded import AgentData, AgentScorers

    script = model_server.script(default=Reply("no JSON here"))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.chdir(tmp_path)
    data = AgentData(agent_task="t", agent_role="r", agent_response="a")
    result = asyncio.run(AgentScorers("openai/failing-judge").score_context_relevancy(data))
    assert isinstance(result, dict) and result["error"] == "Judge call failed"
    assert result["raw_outputs"] == ["no JSON here", "no JSON here"]
    check = asyncio.run(AgentScorers("openai/failing-judge").check("context_relevancy", data))
    assert (check.status, check.score) == ("error", None)
    with pytest.raises(ValueError, match="unknown agent scorer 'relevancy'"):
        asyncio.run(AgentScorers().check("relevancy", data))
