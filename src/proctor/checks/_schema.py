"""The suite file JSON Schema, with assertion types and values derived from the check registry."""

from __future__ import annotations

from typing import Any

from proctor.checks._registry import NEGATION_PREFIX, CheckRegistry, registry
from proctor.suite import SuiteFileSpec

__all__ = ["suite_json_schema"]

SCHEMA_ID = "https://proctor.dev/schema/suite.json"


def suite_json_schema(checks: CheckRegistry = registry) -> dict[str, Any]:
    """Return the JSON Schema of suite files.

    The assertion `type` is an enum of every registered check (with `not-` forms), and each type's
    `value` schema is attached with `if`/`then`, so editors flag a bad value as well as a bad type.
    """
    schema = SuiteFileSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "Proctor suite"
    assertion = schema["$defs"]["AssertionSpec"]
    assertion["properties"]["type"] = {
        "title": "Type",
        "description": "The check type; `not-` negates any deterministic check.",
        "enum": checks.names(),
    }
    rules: list[dict[str, Any]] = []
    for check in checks:
        names = [check.name] + ([NEGATION_PREFIX + check.name] if check.negatable else [])
        condition = {"properties": {"type": {"enum": names}}}
        if check.value is None:
            then: dict[str, Any] = {"not": {"required": ["value"]}}
        else:
            value_schema = check.value.json_schema()
            value_schema.setdefault("description", check.description)
            then = {"properties": {"value": value_schema}}
            if check.value_required:
                then["required"] = ["value"]
        rules.append({"if": condition, "then": then})
    assertion["allOf"] = rules
    return schema
