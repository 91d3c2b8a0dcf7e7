"""`AgentData`: the seed's fields, structured or JSON-string values, and conversion from transcripts and trials."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from proctor.agent_data import FIELDS
from proctor.recorded import (
    AgentData,
    ToolCall,
    ToolResult,
    ToolSchema,
    agent_data_from_transcript,
    agent_data_from_trial,
)
from proctor.results import TrialResult
from proctor.transcript import Message
from proctor.transcript import ToolCall as TranscriptCall

SEED_FIELDS = [
    "user_id",
    "task_id",
    "turn_id",
    "ground_truth",
    "expected_tool_call",
    "agent_name",
    "agent_role",
    "agent_task",
    "system_prompt",
    "agent_response",
    "trace",
    "tools_available",
    "tool_calls",
    "parameters_passed",
    "tool_call_results",
    "retrieval_query",
    "retrieved_context",
    "exit_status",
    "agent_exit",
    "metadata",
]


def test_exactly_the_seed_fields_with_the_seed_defaults() -> None:
    assert list(FIELDS) == SEED_FIELDS
    empty = AgentData()
    assert (empty.tools_available, empty.tool_calls, empty.parameters_passed) == ([], [], {})
    assert empty.agent_exit is False and empty.trace is None and empty.tool_call_results is None
    with pytest.raises(ValidationError, match="tool_call\n"):
        AgentData(tool_call=[])  # type: ignore[call-arg]  # a typo is an error, not a silent drop


def test_json_string_fields_are_decoded() -> None:
    data = AgentData(
        tools_available='[{"name": "calc", "description": "math", "args_schema": {"type": "object"}}]',
        tool_calls='[{"tool_name": "calc", "parameters": {"x": 1}, "call_id": "1"}]',
        expected_tool_call='{"tool_name": "calc", "parameters": {"x": 1}}',
        parameters_passed='{"x": 1}',
        tool_call_results='[{"call_id": "1", "result": 2, "success": true}]',
        trace='[{"role": "user", "content": "hi"}]',
        retrieval_query='["q1", "q2"]',
        retrieved_context='[["a", "b"], ["c"]]',
        agent_exit="true",
    )
    assert data.tools_available == [ToolSchema(name="calc", description="math", args_schema={"type": "object"})]
    assert data.tool_calls == [ToolCall(tool_name="calc", parameters={"x": 1}, call_id="1")]
    assert data.expected_tool_call == ToolCall(tool_name="calc", parameters={"x": 1})
    assert data.parameters_passed == {"x": 1}
    assert data.tool_call_results == [ToolResult(call_id="1", result=2, success=True)]
    assert data.trace == [{"role": "user", "content": "hi"}]
    assert data.retrieval_query == ["q1", "q2"] and data.retrieved_context == [["a", "b"], ["c"]]
    assert data.agent_exit is True


def test_json_fields_are_decoded_as_the_standard_library_reads_them() -> None:
    data = AgentData(
        tool_calls='[{"tool_name": "pay", "parameters": {"account": 123456789012345678901234567890, "x": NaN}}]',
        trace='[{"content": "\\ud800", "n": -9223372036854775809}]',
    )
    assert isinstance(data.tool_calls, list)
    assert data.tool_calls[0].parameters["account"] == 123456789012345678901234567890  # an integer, not a float
    assert math.isnan(data.tool_calls[0].parameters["x"])
    assert data.trace == [{"content": "\ud800", "n": -9223372036854775809}]


def test_text_that_is_not_json_is_kept_where_the_seed_allows_text() -> None:
    data = AgentData(tool_calls="called calc twice", expected_tool_call="calc(x=1)", trace="user: hi / bot: hello")
    assert (data.tool_calls, data.expected_tool_call, data.trace) == (
        "called calc twice",
        "calc(x=1)",
        "user: hi / bot: hello",
    )
    single = AgentData(retrieval_query="one query", retrieved_context=["p1", "p2"])
    assert single.retrieval_query == ["one query"] and single.retrieved_context == [["p1", "p2"]]


@pytest.mark.parametrize(
    ("text", "value"), [("true", True), ("False", False), (" YES ", True), ("0", False), (True, True)]
)
def test_agent_exit_accepts_booleans_and_their_strings(text: object, value: bool) -> None:
    assert AgentData(agent_exit=text).agent_exit is value  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "exited"),
    [("true", True), ("YES", True), (" 1 ", True), ("on", True), ("false", False), ("success", False), ("y", False)],
)
def test_agent_exit_text_is_read_as_novaevals_scorers_read_it(text: str, exited: bool) -> None:
    # NovaEval: Union[bool, str]; safe_get_boolean_field -> lower().strip() in ("true", "1", "yes", "on")
    assert AgentData(agent_exit=text).agent_exit is exited  # type: ignore[arg-type]


def test_empty_cells_are_absent_and_ids_become_text() -> None:
    data = AgentData.model_validate(
        {"agent_task": "  ", "tool_calls": "", "agent_exit": "", "user_id": 42, "turn_id": 3, "metadata": {"k": 1}}
    )
    assert data.agent_task is None and data.tool_calls == [] and data.agent_exit is False
    assert (data.user_id, data.turn_id) == ("42", "3")
    assert json.loads(data.metadata or "") == {"k": 1}


def test_openai_style_tool_calls_are_accepted() -> None:
    call = ToolCall.model_validate({"name": "lookup", "arguments": '{"id": 7}', "id": 12})
    assert (call.tool_name, call.parameters, call.call_id) == ("lookup", {"id": 7}, "12")
    schema = ToolSchema.model_validate({"name": "lookup", "description": "d", "parameters": {"type": "object"}})
    assert schema.args_schema == {"type": "object"}


def test_to_row_round_trips_through_text() -> None:
    data = AgentData(
        agent_task="t", tool_calls=[{"tool_name": "a", "parameters": {"x": [1, 2]}}], agent_exit=True, task_id="9"
    )
    row = data.to_row()
    assert row["agent_exit"] == "true" and row["user_id"] == "" and json.loads(row["tool_calls"])[0]["tool_name"] == "a"
    assert AgentData.model_validate(row) == data


TRANSCRIPT = [
    Message("system", "You are HR."),
    Message("user", "How many days off do I have?"),
    Message(
        "assistant", "Let me check. You have 12.", [TranscriptCall("balance", {"user": "ann"}, "b1", {"days": 12})]
    ),
    Message("user", "Book Friday off."),
    Message("assistant", "Booked.", [TranscriptCall("book", {"day": "Fri"})]),
]


def test_transcript_as_a_whole_conversation() -> None:
    data = agent_data_from_transcript(TRANSCRIPT, agent_role="HR assistant")
    assert data.agent_task == "How many days off do I have?" and data.agent_response == "Booked."
    assert data.system_prompt == "You are HR." and data.agent_exit is True and data.agent_role == "HR assistant"
    assert [c.tool_name for c in data.tool_calls] == ["balance", "book"]  # type: ignore[union-attr]
    assert [c.call_id for c in data.tool_calls] == ["b1", "call_2"]  # type: ignore[union-attr]
    assert data.tool_call_results == [ToolResult(call_id="b1", result={"days": 12})]
    assert isinstance(data.trace, list) and len(data.trace) == 5 and data.trace[2]["tool_calls"][0]["name"] == "balance"


def test_transcript_as_one_turn() -> None:
    data = agent_data_from_transcript(TRANSCRIPT, reply_index=4)
    assert data.agent_task == "Book Friday off." and data.agent_response == "Booked." and data.agent_exit is False
    assert [c.tool_name for c in data.tool_calls] == ["book"]  # type: ignore[union-attr]
    assert data.tool_call_results is None


def test_trial_as_agent_data() -> None:
    trial = TrialResult("suite.yaml::holidays", 2, "passed", 1.0, turns=TRANSCRIPT)
    data = agent_data_from_trial(trial, agent_name="hr-bot")
    assert (data.task_id, data.turn_id, data.exit_status, data.agent_exit) == (
        "suite.yaml::holidays",
        "2",
        "completed",
        True,
    )
    assert data.agent_name == "hr-bot" and data.agent_response == "Booked."
    failed = TrialResult("s::c", 1, "error", None, turns=TRANSCRIPT[:2], error="timeout", error_type="TargetTimeout")
    assert agent_data_from_trial(failed).exit_status == "TargetTimeout"
