"""Reading replies: tool calls and token usage in the shapes agents commonly send."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from proctor.errors import TargetProtocolError
from proctor.transcript import ToolCall, Usage

__all__ = ["parse_tool_calls", "parse_usage"]


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _decode_arguments(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            decoded = json.loads(value)
        except ValueError:
            return {"_raw": value}
        return decoded if isinstance(decoded, dict) else {"_raw": value}
    return {"_raw": value}


_NAME_KEYS = ("name", "tool_name", "toolName", "tool")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_ID_KEYS = ("id", "call_id", "tool_call_id", "toolCallId")


def _first(item: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in item:
            return item[key]
    return None


def parse_tool_calls(value: Any, where: str) -> list[ToolCall]:
    """Read a list of tool calls in any of the common shapes.

    Accepted items: `{name, arguments}`, OpenAI's `{id, type, function: {name, arguments}}`,
    `{tool_name, parameters}`, `{toolName, args}` and `{name, input}`. Arguments given as a JSON string
    are decoded; a string that is not a JSON object is kept as `{"_raw": string}`. A `result` (or
    `output`) field is kept as the call's result.

    Args:
        value: A list of calls (a single call object is accepted too); `None` means no calls.
        where: Where the list came from, for error messages.

    Returns:
        The calls, in order.

    Raises:
        TargetProtocolError: An item is not an object or has no tool name.
    """
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    calls: list[ToolCall] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise TargetProtocolError(f"tool call {index} in {where} is not an object: {item!r}")
        function = item.get("function")
        source = function if isinstance(function, dict) else item
        name = _first(source, _NAME_KEYS)
        if not isinstance(name, str) or not name:
            text = _excerpt(json.dumps(item, default=str), 200)
            raise TargetProtocolError(f"tool call {index} in {where} has no tool name: {text}")
        call_id = _first(item, _ID_KEYS)
        result = item.get("result", item.get("output"))
        calls.append(
            ToolCall(
                name=name,
                arguments=_decode_arguments(_first(source, _ARGUMENT_KEYS)),
                id=None if call_id is None else str(call_id),
                result=result,
            )
        )
    return calls


_USAGE_KEYS = (
    ("prompt_tokens", "completion_tokens"),
    ("input_tokens", "output_tokens"),
    ("inputTokens", "outputTokens"),
    ("promptTokens", "completionTokens"),
)


def _count(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        return int(value)
    return 0


def parse_usage(value: Any) -> Usage | None:
    """Read token usage from `{prompt_tokens, completion_tokens}` or its common spellings.

    Also accepted: `input_tokens`/`output_tokens`, `inputTokens`/`outputTokens` and
    `promptTokens`/`completionTokens`.

    Args:
        value: A usage object, or anything else (which means no usage).

    Returns:
        The usage, or `None` when `value` is not an object with known keys.
    """
    if not isinstance(value, dict):
        return None
    for prompt, completion in _USAGE_KEYS:
        if prompt in value or completion in value:
            return Usage(_count(value.get(prompt)), _count(value.get(completion)))
    return None
