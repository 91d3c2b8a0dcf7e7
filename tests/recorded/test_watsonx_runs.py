"""IBM watsonx recorded runs scored offline: IBM's own example runs give IBM's published numbers.

The files under `seeds/watsonx/` are IBM's (MIT; see the README and LICENSE there). The judge is the
scripted model server on loopback: it decides the text goals' meaning in the order the runs are read.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from helpers.trajectories import assertion, check
from proctor.cli import app
from proctor.recorded._watsonx import (
    WatsonxRunError,
    is_valid_order,
    normalise_arg,
    read_dataset,
    read_messages,
    score_run,
)
from proctor.suite import JourneySpec
from proctor.transcript import Message, ToolCall
from servers.model_server import Reply

SEEDS = Path(__file__).parent / "seeds" / "watsonx"
MESSAGES = SEEDS / "messages"
DATASETS = SEEDS / "datasets"
runner = CliRunner()

SAME = Reply(json.dumps({"reason": "Same dates.", "equivalent": True}))
DIFFERENT = Reply(json.dumps({"reason": "Another period.", "equivalent": False}))
TOOL_KEYS = (
    "total_steps",
    "llm_step",
    "total_tool_calls",
    "expected_tool_calls",
    "correct_tool_calls",
    "relevant_tool_calls",
    "total_routing_calls",
    "relevant_routing_calls",
    "tool_calls_with_incorrect_parameter",
    "tool_call_recall",
    "tool_call_precision",
)


def ibm_metrics(run: str) -> dict[str, Any]:
    return dict(json.loads((MESSAGES / f"{run}.metrics.json").read_text()))


def score(run: str, judge: Any = None) -> dict[str, Any]:
    dataset = DATASETS / (run.split(".")[0] + ".json")
    result = anyio.run(lambda: score_run(MESSAGES / f"{run}.messages.json", dataset, judge))
    return result.metrics


@pytest.mark.parametrize("run", ["data_complex.run1", "data_complex.run2", "data_simple.run1", "data_simple.run2"])
def test_tool_call_metrics_equal_ibms_without_a_judge(run: str) -> None:
    ours, ibm = score(run), ibm_metrics(run)
    assert {k: ours[k] for k in TOOL_KEYS} == {k: ibm[k] for k in TOOL_KEYS}
    # the text goal's keywords are found ("January 5, 2025" for "2025-01-05"), its meaning is not judged
    assert ours["text_match"] == "Not Judged"


def test_data_complex_run1_numbers_from_the_issue() -> None:
    ours = score("data_complex.run1")
    assert (ours["correct_tool_calls"], ours["tool_call_recall"], ours["tool_call_precision"]) == (2, 0.4, 0.4)
    assert ours["tool_calls_with_incorrect_parameter"] == 3
    assert ours["is_success"] is False  # decided without the text goal: two tool goals never matched


def test_journey_success_left_undecided_when_only_the_text_goal_could_decide_it() -> None:
    assert score("data_simple.run1")["is_success"] is None


def test_cli_with_a_judge_reproduces_ibms_summary_csv(model_server: Any, tmp_path: Path) -> None:
    # runs in file order: complex.run1, complex.run2, simple.run1 (first answer another period), simple.run2
    script = model_server.script(SAME, SAME, DIFFERENT, SAME, DIFFERENT, SAME)
    out = tmp_path / "summary_metrics.csv"
    result = runner.invoke(
        app,
        ["score", str(MESSAGES), "--dataset", str(DATASETS), "--judge", "openai/judge", "--no-cache", "-o", str(out)],
        env={"OPENAI_BASE_URL": script.base_url, "OPENAI_API_KEY": "k"},
    )
    assert result.exit_code == 0, result.output
    with out.open() as handle:
        ours = list(csv.DictReader(handle))
    with (MESSAGES / "summary_metrics.csv").open() as handle:
        ibm = list(csv.DictReader(handle))
    # IBM's CSV has measured response times; a messages file has none (IBM's metrics.json say -1 too)
    for row in (*ours, *ibm):
        row.pop("avg_resp_time")
    assert ours == ibm
    assert len(script.requests) == 6
    assert "20250303" in json.dumps(script.bodies[2])  # the expected response was shown to the judge


def test_cli_without_a_judge_exits_1_naming_the_undecided_runs(tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    result = runner.invoke(
        app, ["score", str(MESSAGES / "data_simple.run1.messages.json"), "--dataset", str(DATASETS), "-o", str(out)]
    )
    assert result.exit_code == 1
    assert "not judged" in result.output and "data_simple" in result.output
    [row] = json.loads(out.read_text())
    assert row["is_success"] is None and row["correct_tool_calls"] == 2
    verdicts = [call["verdict"] for call in row["calls"]]
    assert verdicts == ["incorrect parameter", "correct", "incorrect parameter", "correct"]


def test_cli_needs_the_dataset_and_locates_bad_files(tmp_path: Path) -> None:
    run = MESSAGES / "data_complex.run1.messages.json"
    result = runner.invoke(app, ["score", str(run)])
    assert result.exit_code == 2 and "--dataset" in result.output
    bad = tmp_path / "x.messages.json"
    bad.write_text('[{"role": "assistant", "type": "tool_call", "content": "{not json"}]')
    result = runner.invoke(app, ["score", str(bad), "--dataset", str(DATASETS / "data_simple.json")])
    assert result.exit_code == 2
    assert f"{bad}: message [0]: a tool_call's content must be JSON text" in result.output
    result = runner.invoke(app, ["score", str(run), "--dataset", str(tmp_path)])
    assert result.exit_code == 2 and "its dataset data_complex.json is not in" in result.output


def test_a_quick_eval_dataset_cannot_be_scored_and_says_why() -> None:
    with pytest.raises(WatsonxRunError, match="'goal_details' is empty: a quick-eval dataset"):
        read_dataset(SEEDS / "quick-eval" / "data_simple_no_annotations.json")


def test_argument_normalisation_as_ibm_does_it() -> None:
    assert normalise_arg(10.0) == normalise_arg("10") == "10"
    assert normalise_arg("NWaters") == "nwaters"
    assert normalise_arg([3, "b", 1]) == normalise_arg([1, 3, "B"])


def test_journey_order_uses_each_goals_latest_match() -> None:
    graph = {"a": ["b"], "b": ["summarize"]}
    assert is_valid_order(graph, ["a", "b", "summarize"])
    assert not is_valid_order(graph, ["a", "summarize", "b"])
    assert not is_valid_order(graph, ["a", "b", "summarize", "a"])  # a's latest match follows b's
    assert not is_valid_order(graph, ["a", "b"])
    assert not is_valid_order(graph, [])


@pytest.mark.parametrize("run", ["data_complex.run1", "data_simple.run1"])
def test_the_live_journey_check_counts_tool_calls_as_the_offline_scorer(run: str) -> None:
    """Replaying a recorded run's calls through the `journey` check gives IBM's tool-call numbers too."""
    dataset = json.loads((DATASETS / (run.split(".")[0] + ".json")).read_text())
    pairs = [m.tool_call(MESSAGES) for m in read_messages(MESSAGES / f"{run}.messages.json") if m.type == "tool_call"]
    calls = [ToolCall(name, args) for name, args in pairs]
    transcript = [Message("user", "hi"), Message("assistant", "done", calls, 10.0)]
    spec = assertion("journey", JourneySpec(goals=dataset["goals"], goal_details=dataset["goal_details"]))
    metrics = anyio.run(check, spec, transcript).details["metrics"]
    ibm = ibm_metrics(run)
    assert (metrics["correct_tool_calls"], metrics["incorrect_parameter_calls"]) == (
        ibm["correct_tool_calls"],
        ibm["tool_calls_with_incorrect_parameter"],
    )
    assert round(metrics["tool_call_precision"], 2) == ibm["tool_call_precision"]
    assert round(metrics["tool_call_recall"], 2) == ibm["tool_call_recall"]
