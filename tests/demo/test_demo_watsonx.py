"""The watsonx examples against the demo agent: its `hr_agent` tools, then full runs over real HTTP."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from demo_helpers import EXAMPLES, RunningServer
from typer.testing import CliRunner

from proctor.checks import registry
from proctor.cli import app
from proctor.demo import HRAgent, respond
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites

WATSONX = EXAMPLES / "watsonx"
runner = CliRunner()


def ask(*messages: str) -> dict[str, Any]:
    history: list[dict[str, str]] = []
    reply: dict[str, Any] = {}
    for message in messages:
        history.append({"role": "user", "content": message})
        reply = respond(history)
        history.append({"role": "assistant", "content": reply["text"]})
    return reply


def calls(reply: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(call["name"], call["arguments"]) for call in reply["tool_calls"]]


def test_hr_agent_tools_serve_the_watsonx_example() -> None:
    reply = ask("I want to know my time off schedule")
    assert reply["text"] == "I can check your time off schedule. What is your username?" and not reply["tool_calls"]
    reply = ask("I want to know my time off schedule", "My username is nwaters.", "From 2025-01-01 to 2025-01-30.")
    assert calls(reply) == [
        ("get_assignment_id_hr_agent", {"username": "nwaters"}),
        (
            "get_timeoff_schedule_hr_agent",
            {"assignment_id": "15778303", "start_date": "2025-01-01", "end_date": "2025-01-30"},
        ),
    ]
    assert [call["result"] for call in reply["tool_calls"]] == ["15778303", ["2025-01-05"]]
    assert reply["text"] == "Your time off schedule is on January 5, 2025."


def test_hr_agent_dates_usernames_and_unknown_users() -> None:
    # "January 1" without a year is the next January, as the demo reads every month name
    reply = ask("What is my time off schedule from January 1 to January 30? My username is nwaters.")
    assert calls(reply)[1][1] == {"assignment_id": "15778303", "start_date": "2026-01-01", "end_date": "2026-01-30"}
    assert reply["text"] == "Your time off schedule is on January 12, 2026."
    reply = ask("Time off schedule from February 1, 2025 to February 28, 2025, username: NWaters")
    assert calls(reply)[0] == ("get_assignment_id_hr_agent", {"username": "NWaters"})
    assert reply["text"] == "Your time off schedule is on February 14, 2025 and February 17, 2025."
    reply = ask("Time off schedule for 2025-03-01 to 2025-03-31, my user name is jdoe")
    assert reply["text"] == "You have no time off scheduled between March 1, 2025 and March 31, 2025."
    reply = ask("Time off schedule for 2025-03-01 to 2025-03-31, my username is ghost.")
    assert reply["text"] == "I couldn't find the username 'ghost' in the HR system."
    assert HRAgent().respond([{"role": "user", "content": "My username is jdoe"}]).intent == "schedule"


def test_the_examples_folder_holds_what_its_readme_lists() -> None:
    readme = (WATSONX / "README.md").read_text(encoding="utf-8")
    datasets = sorted(p.name for p in WATSONX.glob("*.json"))
    assert datasets == ["hr_agent_reminder_fuzzy.json", "hr_agent_timeoff.json", "hr_agent_timeoff_wrong_year.json"]
    assert all(name in readme for name in datasets)
    seed = json.loads((WATSONX / "hr_agent_timeoff.json").read_text())
    assert seed["goal_details"][1]["args"] == {
        "assignment_id": "15778303",
        "end_date": "2025-01-30",
        "start_date": "2025-01-01",
    }


def openai_target(url: str) -> dict[str, Any]:
    return {"type": "openai", "base_url": f"{url}/v1", "model": "hr-assistant"}


def test_watsonx_examples_over_http(demo_server: RunningServer) -> None:
    suites = load_suites([WATSONX], registry)
    outcome = run_sync(suites, RunOptions(target=openai_target(demo_server.url), trials=2, write_results=False))
    cases = {case["name"]: case for case in outcome.data["cases"]}
    assert {name: case["status"] for name, case in cases.items()} == {
        "hr_agent_timeoff": "passed",
        "hr_agent_timeoff_wrong_year": "failed",
        "hr_agent_reminder_fuzzy": "passed",
    }
    journeys = {name: case["trials"][0]["checks"][0] for name, case in cases.items()}
    seed = journeys["hr_agent_timeoff"]["details"]["metrics"]
    assert {k: v for k, v in seed.items() if k != "avg_response_time_ms"} == {
        "total_tool_calls": 2,
        "expected_tool_calls": 2,
        "correct_tool_calls": 2,
        "relevant_tool_calls": 2,
        "incorrect_parameter_calls": 0,
        "tool_call_precision": 1.0,
        "tool_call_recall": 1.0,
        "text_match": True,
        "journey_success": True,
    }
    assert seed["avg_response_time_ms"] > 0
    wrong = journeys["hr_agent_timeoff_wrong_year"]
    assert "goal 'get_timeoff_schedule_hr_agent-1' (get_timeoff_schedule_hr_agent) not matched" in wrong["reason"]
    assert "start_date '2026-01-01' (expected '2025-01-01', strict)" in wrong["reason"]
    assert wrong["details"]["metrics"]["incorrect_parameter_calls"] == 1
    fuzzy = journeys["hr_agent_reminder_fuzzy"]["details"]
    (text_argument,) = [a for a in fuzzy["goals"][0]["arguments"] if a["argument"] == "text"]
    assert (text_argument["strategy"], text_argument["method"], text_argument["ok"]) == ("fuzzy", "embeddings", True)
    assert fuzzy["goals"][1]["method"] == "embeddings"  # enable_fuzzy_matching (config.yaml): the answer's meaning
    assert fuzzy["matching"]["enable_fuzzy_matching"] is True


@pytest.mark.parametrize("strategy", ["strict", "fuzzy"])
def test_the_fuzzy_example_passes_only_with_fuzzy_matching(
    demo_server: RunningServer, tmp_path: Path, strategy: str
) -> None:
    data = json.loads((WATSONX / "hr_agent_reminder_fuzzy.json").read_text())
    data["goal_details"][0]["arg_matching"]["text"] = strategy
    path = tmp_path / "reminder.json"
    path.write_text(json.dumps(data))
    options = RunOptions(target=openai_target(demo_server.url), trials=1, write_results=False)
    (case,) = run_sync(load_suites([path], registry), options).data["cases"]
    assert case["status"] == ("passed" if strategy == "fuzzy" else "failed")


def test_cli_prints_the_trajectory_summary(demo_server: RunningServer, tmp_path: Path) -> None:
    folder = tmp_path / "watsonx"  # the results file goes beside the suites: not into the repository
    shutil.copytree(WATSONX, folder, ignore=shutil.ignore_patterns(".results", ".proctor"))
    result = runner.invoke(
        app,
        ["run", str(folder), "--target", f"{demo_server.url}/v1", "--model", "hr-assistant", "--trials", "1"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 1, result.output  # the wrong-year dataset fails on purpose
    lines = [line for line in result.output.splitlines() if line.startswith("trajectory ")]
    assert lines[1] == (
        "trajectory hr_agent_timeoff: journey success 1/1, precision 1.00, recall 1.00, correct calls 2/2, "
        "wrong parameters 0 per trial, text match 100%, avg response " + lines[1].rsplit("avg response ", 1)[1]
    )
    assert lines[2].startswith("trajectory hr_agent_timeoff_wrong_year: journey success 0/1, precision 0.50")
    assert "start_date '2026-01-01' (expected '2025-01-01', strict)" in result.output
