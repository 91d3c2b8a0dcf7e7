"""Structured output: ask for a pydantic type, parse and repair the answer, retry once showing the error.

The type's JSON Schema goes to the provider (its JSON-schema mode where it has one; otherwise the
adapter adds `schema_instruction` to the prompt). The answer is parsed leniently: the whole text, a
```json fence, or the first balanced `{...}`/`[...]`, with its quoting repaired when it is not strict
JSON (trailing commas, single quotes, unquoted keys, comments; see `proctor.models._lenient`). A repair
never completes a number or closes a cut-off object. If it still does not validate, the model sees its
answer and the validation error once; a second failure raises `ModelOutputError` with both raw outputs.
An answer the provider says was cut off (`finish_reason` `length`, `max_tokens`, ...) is an error at
once, with its raw text: a truncated verdict is never a number. There is never a made-up value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import orjson
from pydantic import TypeAdapter, ValidationError

from proctor.errors import ModelOutputError
from proctor.models._base import GenerateConfig, Model, ModelResponse
from proctor.models._lenient import LenientJSONError, loads_lenient
from proctor.transcript import Usage

__all__ = [
    "Structured",
    "extract_json",
    "generate_structured",
    "parse_structured",
    "schema_for",
    "schema_instruction",
    "with_schema_instruction",
]

T = TypeVar("T")

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_OPEN_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n(.*)$", re.DOTALL)


@dataclass(slots=True)
class Structured(Generic[T]):
    """A validated structured answer and how it was obtained."""

    value: T
    """The validated value."""
    response: ModelResponse
    """The response the value was read from (the last one)."""
    attempts: int
    """1, or 2 when the first answer was invalid and the model was shown its error."""
    raw_outputs: list[str]
    """The raw text of every answer, in order."""
    usage: Usage = field(default_factory=Usage)
    """Tokens used by every attempt together."""
    cost_usd: float | None = None
    """Cost of every attempt together; `None` when any attempt's cost is unknown."""


class OutputInvalid(ValueError):
    """An answer is not valid for the requested type; the message is what the model is shown."""


_adapters: dict[Any, tuple[TypeAdapter[Any], bytes]] = {}


def _adapter_and_schema(output_type: Any) -> tuple[TypeAdapter[Any], bytes]:
    """Build a type's validator and schema text once (a `TypeAdapter` costs milliseconds to build)."""
    found = _adapters.get(output_type)
    if found is None:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        found = _adapters[output_type] = (adapter, json.dumps(adapter.json_schema(), sort_keys=True).encode())
    return found


def _adapter(output_type: Any) -> TypeAdapter[Any]:
    return _adapter_and_schema(output_type)[0]


def schema_for(output_type: type[Any]) -> dict[str, Any]:
    """Return the JSON Schema of a type (computed once per type; a fresh copy each call).

    Args:
        output_type: A pydantic model, dataclass, TypedDict or any type pydantic can validate.

    Returns:
        The JSON Schema.
    """
    text = _adapter_and_schema(output_type)[1]
    try:
        schema: dict[str, Any] = orjson.loads(text)  # a fresh copy: orjson reads it ~6x faster than json.loads
    except orjson.JSONDecodeError:  # `Infinity` in a bound, which only the standard library reads
        schema = json.loads(text)
    return schema


def schema_instruction(schema: dict[str, Any]) -> str:
    """The instruction added to the prompt for providers without a JSON-schema mode."""
    return "Reply with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n" + json.dumps(
        schema, separators=(",", ":")
    )


def with_schema_instruction(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """Return the messages with `schema_instruction` appended to the system message (or one added first)."""
    instruction = schema_instruction(schema)
    out = [dict(message) for message in messages]
    for message in out:
        if message.get("role") == "system":
            message["content"] = f"{message.get('content', '')}\n\n{instruction}".lstrip()
            return out
    return [{"role": "system", "content": instruction}, *out]


def _balanced(text: str, start: int) -> str:
    """Return the JSON value starting at `start` up to its matching bracket (or the rest, if cut off)."""
    depth = 0
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return text[start:]


def _candidates(text: str) -> list[str]:
    found: list[str] = []
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        found.append(_balanced(stripped, 0))
    fence = _FENCE.search(text) or _OPEN_FENCE.search(text)
    if fence is not None and fence.group(1).strip():
        found.append(fence.group(1).strip())
    starts = sorted(index for index in (text.find("{"), text.find("[")) if index >= 0)
    found.extend(_balanced(text, start) for start in starts)
    return list(dict.fromkeys(found))


def extract_json(text: str) -> Any:
    """Find and decode the JSON value in a model's answer, repairing it when needed.

    Tries, in order: the whole answer, a ```json fence, and the first balanced `{...}` or `[...]`;
    each strictly first, then with its quoting repaired (never a value: see `loads_lenient`).

    Args:
        text: The answer.

    Returns:
        The decoded object or array.

    Raises:
        OutputInvalid: The answer holds no JSON object or array that can be read, or only one that is cut
            off or would need a value completed.
    """
    candidates = _candidates(text)
    if not candidates:
        raise OutputInvalid("the reply contains no JSON object")
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict | list):
            return value
    problems: list[LenientJSONError] = []
    for candidate in candidates:
        try:
            repaired = loads_lenient(candidate)
        except LenientJSONError as exc:
            problems.append(exc)
            continue
        if isinstance(repaired, dict | list) and repaired:
            return repaired
    cut = next((p for p in problems if p.truncated), None)
    if cut is not None:
        raise OutputInvalid(f"the reply's JSON is incomplete: {cut}; a cut-off answer is not completed")
    detail = f": {problems[0]}" if problems else ""
    raise OutputInvalid(f"the reply's JSON could not be parsed{detail}")


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(the whole value)"
        detail = f"{where}: {error['msg']}"
        if error["type"] != "missing":
            shown = repr(error.get("input"))
            detail += f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
        parts.append(detail)
    return "; ".join(parts)


def parse_structured(text: str, output_type: type[T]) -> T:
    """Parse and validate a model's answer as `output_type`.

    Args:
        text: The answer.
        output_type: The type to validate against.

    Returns:
        The validated value.

    Raises:
        OutputInvalid: No JSON could be read, or it does not validate; the message says why.
    """
    adapter = _adapter(output_type)
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value: T = adapter.validate_json(stripped)
            return value
        except ValidationError as exc:
            if not any(error["type"] == "json_invalid" for error in exc.errors()):
                raise OutputInvalid(_describe(exc)) from None
    data = extract_json(text)
    try:
        value = adapter.validate_python(data)
    except ValidationError as exc:
        raise OutputInvalid(_describe(exc)) from None
    return value


def _repair_prompt(error: str) -> str:
    return (
        f"Your reply could not be used: {error}\n"
        "Reply again with only the corrected JSON value, matching the requested schema."
    )


async def generate_structured(
    model: Model,
    messages: list[dict[str, str]],
    output_type: type[T],
    config: GenerateConfig | None = None,
    *,
    role: str = "judge",
) -> Structured[T]:
    """Ask a model for a value of `output_type`, validating (and once repairing) its answer.

    Args:
        model: The model.
        messages: The conversation (the caller's prompt should say what to answer).
        output_type: A pydantic model or other type pydantic validates.
        config: Sampling and timeout.
        role: Who is calling, for accounting (`judge` by default).

    Returns:
        The value with the response, attempt count and raw outputs.

    Raises:
        ModelOutputError: The second answer is still invalid; `raw_outputs` holds both answers.
        proctor.errors.ModelError: A call failed.
    """
    schema = schema_for(output_type)
    raw_outputs: list[str] = []
    usage = Usage()
    costs: list[float | None] = []
    conversation = list(messages)
    error = ""
    for attempt in (1, 2):
        response = await model.generate(conversation, config, response_schema=schema, role=role)
        raw_outputs.append(response.text)
        usage = usage + response.usage
        costs.append(response.cost_usd)
        if response.truncated:  # the same limit would cut a second answer too: no repair round
            raise ModelOutputError(
                f"{model.name}'s answer was cut off (finish reason {response.finish_reason!r}): "
                "a truncated answer is not used",
                raw_outputs,
            )
        try:
            value = parse_structured(response.text, output_type)
        except OutputInvalid as exc:
            error = str(exc)
            conversation = [
                *conversation,
                {"role": "assistant", "content": response.text},
                {"role": "user", "content": _repair_prompt(error)},
            ]
            continue
        cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        return Structured(value, response, attempt, raw_outputs, usage, cost)
    name = getattr(output_type, "__name__", str(output_type))
    raise ModelOutputError(
        f"{model.name} gave no valid {name} in 2 attempts: {error}",
        raw_outputs,
    )
