"""`AgentData`: one recorded step of an agent, with the fields NovaEval's agent scorers read.

Fields may arrive structured or as JSON text (a CSV cell holding `[{"tool_name": ...}]`); text that is
JSON is decoded, text that is not is kept as it is where the field allows a string (the scorers then show
it to the judge verbatim). Empty text counts as absent. `agent_exit` takes booleans or text, read as
NovaEval's scorers read it: `true`, `1`, `yes` or `on` mean exited, any other text (`false`, `success`)
does not. Tool calls also accept the OpenAI-style keys `name`, `arguments` (an object or JSON text) and
`id`.

This module is a leaf, like `proctor.transcript`: it imports nothing from Proctor but the transcript
types and `proctor._json`, so the checks layer can read `AgentData` without importing the rest of
`proctor.recorded`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from proctor import _json
from proctor.transcript import Message

__all__ = ["FIELDS", "AgentData", "ToolCall", "ToolResult", "ToolSchema", "agent_data_from_transcript"]

_TRUE = frozenset({"true", "1", "yes", "on"})
"""The strings NovaEval's scorers read as `agent_exit` true (`safe_get_boolean_field`)."""
_NUMBERS = (int, float)
"""Ids given as numbers (a tuple: `int | float` in `isinstance` builds a union on every call, 3x a row)."""


def _decode(value: Any, opening: str) -> Any:
    """Decode `value` from JSON when it is text that starts with `opening` (`[` or `{`) and parses.

    By `proctor._json`: the value `json.loads` gives, in a fraction of its CPU (two fields of every scored
    row; issue 22).
    """
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(opening):
            try:
                return _json.loads(text)
            except ValueError:
                return value
    return value


class ToolSchema(BaseModel):
    """A tool the agent could call."""

    model_config = ConfigDict(extra="ignore")

    name: str
    """The tool's name."""
    description: str = ""
    """What the tool does."""
    args_schema: dict[str, Any] | None = Field(default=None, validation_alias=AliasChoices("args_schema", "parameters"))
    """The arguments' JSON Schema (OpenAI's `parameters` is accepted too)."""
    return_schema: dict[str, Any] | None = None
    """The result's JSON Schema."""


class ToolCall(BaseModel):
    """A tool call the agent made (or, as `expected_tool_call`, should have made)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    tool_name: str = Field(validation_alias=AliasChoices("tool_name", "name"))
    """The tool called (`name` is accepted too)."""
    parameters: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("parameters", "arguments", "args")
    )
    """The arguments (`arguments` or `args`, as an object or JSON text, are accepted too)."""
    call_id: str | None = Field(default=None, validation_alias=AliasChoices("call_id", "id"))
    """The call's id, which links it to its `ToolResult` (`id` is accepted too)."""

    @field_validator("parameters", mode="before")
    @classmethod
    def _json_parameters(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return {}
        return _decode(value, "{")

    @field_validator("call_id", mode="before")
    @classmethod
    def _text_id(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value


class ToolResult(BaseModel):
    """What a tool call returned."""

    model_config = ConfigDict(extra="ignore")

    call_id: str | None = None
    """The call this is the result of."""
    result: Any = None
    """The tool's output."""
    success: bool = True
    """Whether the call succeeded."""
    error_message: str | None = None
    """The error, when it failed."""

    @field_validator("call_id", mode="before")
    @classmethod
    def _text_id(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value


class AgentData(BaseModel):
    """One recorded agent step (or a whole run): what the agent was asked, said and did.

    The fields are NovaEval's, with the same names and meanings; each scorer states which ones it
    needs (`proctor.recorded.AGENT_SCORERS`).
    """

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    """Who the agent served."""
    task_id: str | None = None
    """The task this record belongs to."""
    turn_id: str | None = None
    """The turn (step) within the task."""
    ground_truth: str | None = None
    """The expected answer, when known."""
    expected_tool_call: ToolCall | str | None = None
    """The tool call the agent should have made (structured, or text when it is not JSON)."""
    agent_name: str | None = None
    """The agent's name."""
    agent_role: str | None = None
    """The role the agent was given."""
    agent_task: str | None = None
    """The task or input the agent was working on at this step."""
    system_prompt: str | None = None
    """The agent's system prompt."""
    agent_response: str | None = None
    """What the agent answered."""
    trace: list[dict[str, Any]] | str | None = None
    """The whole interaction so far: messages and actions, oldest first."""
    tools_available: list[ToolSchema] | str = Field(default_factory=list)
    """The tools the agent could call."""
    tool_calls: list[ToolCall] | str = Field(default_factory=list)
    """The tool calls the agent made, in order."""
    parameters_passed: dict[str, Any] | str = Field(default_factory=dict)
    """The parameters the agent passed (when recorded apart from the calls)."""
    tool_call_results: list[ToolResult] | str | None = None
    """What each tool call returned."""
    retrieval_query: list[str] | None = None
    """Queries sent to a retriever (vector store)."""
    retrieved_context: list[list[str]] | None = None
    """What the retriever returned for each query (generally its top K passages)."""
    exit_status: str | None = None
    """How the agent's run ended, e.g. `completed` or `error`."""
    agent_exit: bool = False
    """Whether the agent has finished its run (goal achievement and coherence need it)."""
    metadata: str | None = None
    """Free-form metadata (objects are kept as JSON text)."""

    @model_validator(mode="before")
    @classmethod
    def _drop_empty(cls, data: Any) -> Any:
        """Treat empty text (an empty CSV cell) and `null` as absent, so each field's default applies."""
        if isinstance(data, dict):  # `_empty` inlined: ten fields of every scored row (issue 22)
            return {
                key: value
                for key, value in data.items()
                if value is not None and not (isinstance(value, str) and not value.strip())
            }
        return data

    @field_validator("user_id", "task_id", "turn_id", "exit_status", mode="before")
    @classmethod
    def _text_id(cls, value: Any) -> Any:
        return str(value) if isinstance(value, _NUMBERS) and not isinstance(value, bool) else value

    @field_validator("expected_tool_call", "parameters_passed", mode="before")
    @classmethod
    def _json_object(cls, value: Any) -> Any:
        return _decode(value, "{")

    @field_validator("trace", "tools_available", "tool_calls", "tool_call_results", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        return _decode(value, "[")

    @field_validator("retrieval_query", mode="before")
    @classmethod
    def _queries(cls, value: Any) -> Any:
        value = _decode(value, "[")
        return [value] if isinstance(value, str) else value

    @field_validator("retrieved_context", mode="before")
    @classmethod
    def _contexts(cls, value: Any) -> Any:
        value = _decode(value, "[")
        if isinstance(value, str):
            return [[value]]
        if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
            return [value]  # one query's passages
        return value

    @field_validator("agent_exit", mode="before")
    @classmethod
    def _exit_flag(cls, value: Any) -> Any:
        """Read text as NovaEval's scorers do (it types the field `Union[bool, str]`).

        Only `true`, `1`, `yes` or `on` (any case) mean exited; other text (`success`) means not exited.
        """
        if isinstance(value, str):
            return value.strip().lower() in _TRUE
        return value

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_text(cls, value: Any) -> Any:
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        return value

    def to_row(self) -> dict[str, Any]:
        """Return the flat form written to CSV: every field, structured values as JSON text."""
        row: dict[str, Any] = {}
        for name, value in self.model_dump(mode="json").items():
            if isinstance(value, list | dict):
                row[name] = json.dumps(value, ensure_ascii=False)
            elif isinstance(value, bool):
                row[name] = "true" if value else "false"
            else:
                row[name] = "" if value is None else value
        return row


FIELDS: tuple[str, ...] = tuple(AgentData.model_fields)
"""The `AgentData` field names, in order (the CSV export's columns)."""


def agent_data_from_transcript(
    messages: Sequence[Message],
    *,
    reply_index: int | None = None,
    agent_exit: bool | None = None,
    **fields: Any,
) -> AgentData:
    """Build `AgentData` from a Proctor transcript, so the agent scorers run on live conversations too.

    Args:
        messages: The conversation (user, assistant and system messages with their tool calls).
        reply_index: Score the assistant message at this index (one turn): `agent_task` is the user
            message it answers and `tool_calls` are its own. `None` scores the whole conversation:
            `agent_task` is the first user message, `agent_response` the last reply and `tool_calls`
            every call made.
        agent_exit: Whether the agent has finished; defaults to true for a whole conversation and false
            for one turn.
        **fields: Any other `AgentData` fields (e.g. `agent_role`, `tools_available`,
            `expected_tool_call`); they win over what the transcript gives.

    Returns:
        The record.
    """
    if reply_index is not None:
        shown = list(messages[: reply_index + 1])
        replies = [messages[reply_index]] if messages else []
        users = [m for m in shown if m.role == "user"]
        task = users[-1].content if users else None
    else:
        shown = list(messages)
        replies = [m for m in shown if m.role == "assistant"]
        users = [m for m in shown if m.role == "user"]
        task = users[0].content if users else None
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for reply in replies:
        for call in reply.tool_calls:
            call_id = call.id or f"call_{len(calls) + 1}"
            calls.append({"tool_name": call.name, "parameters": call.arguments, "call_id": call_id})
            if call.result is not None:
                results.append({"call_id": call_id, "result": call.result})
    system = "\n\n".join(m.content for m in shown if m.role == "system")
    data: dict[str, Any] = {
        "agent_task": task,
        "agent_response": replies[-1].content if replies else None,
        "system_prompt": system or None,
        "trace": [message.to_dict() for message in shown],
        "tool_calls": calls,
        "tool_call_results": results or None,
        "agent_exit": agent_exit if agent_exit is not None else reply_index is None,
    }
    data.update(fields)
    return AgentData.model_validate(data)
