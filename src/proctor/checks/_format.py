"""Format checks: is the reply JSON, and does it match a JSON Schema."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, TypeAdapter

from proctor.checks._registry import CheckContext, CheckType, Outcome, registry
from proctor.checks._text import excerpt
from proctor.suite import AssertionSpec

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__: list[str] = []


def _parse(context: CheckContext) -> tuple[bool, Any, str]:
    """Parse the reply as JSON, also from a fenced ```json block (agents often wrap their JSON)."""
    if context.reply is None:
        raise ValueError("this check needs a turn's reply")
    text = context.reply.text.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[4:] if text.startswith("json") else text
    try:
        return True, json.loads(text), ""
    except json.JSONDecodeError as exc:
        return False, None, f"{exc.msg} at line {exc.lineno} column {exc.colno} of {excerpt(text, 60)}"


def _check_is_json(spec: AssertionSpec, context: CheckContext) -> Outcome:
    ok, data, problem = _parse(context)
    found = f"it parsed as a JSON {type(data).__name__}" if ok else f"it is not JSON: {problem}"
    return Outcome(ok, "to be valid JSON", found)


def _valid_schema(schema: dict[str, Any]) -> dict[str, Any]:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"invalid JSON Schema: {exc.message}") from None
    return schema


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # imported on first use: keeps start-up fast

    return Draft202012Validator(json.loads(schema_json))


def _check_json_schema(spec: AssertionSpec, context: CheckContext) -> Outcome:
    ok, data, problem = _parse(context)
    if not ok:
        return Outcome(False, "to be JSON matching the schema", f"it is not JSON: {problem}")
    validator = _validator(json.dumps(spec.value, sort_keys=True))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return Outcome(True, "to be JSON matching the schema", "it matches")
    first = errors[0]
    where = "$" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in first.absolute_path)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return Outcome(
        False,
        "to be JSON matching the schema",
        f"{where}: {first.message}{more}",
        details={"errors": [e.message for e in errors[:10]]},
    )


registry.register(CheckType("is-json", "format", "Reply is valid JSON (a ```json fence is allowed).", _check_is_json))
registry.register(
    CheckType(
        "json-schema",
        "format",
        "Reply is JSON that validates against the JSON Schema given as the value.",
        _check_json_schema,
        value=TypeAdapter(Annotated[dict[str, Any], AfterValidator(_valid_schema)]),
    )
)
