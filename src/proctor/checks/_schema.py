"""The suite file JSON Schema, with assertion types and values derived from the check registry."""

from __future__ import annotations

from typing import Any

from proctor.checks._registry import NEGATION_PREFIX, CheckRegistry, registry
from proctor.suite import SuiteFileSpec
from proctor.suite.formats.embabel import JOB_KEYS, MOVED

__all__ = ["suite_json_schema"]

SCHEMA_ID = "https://proctor.dev/schema/suite.json"


def suite_json_schema(checks: CheckRegistry = registry) -> dict[str, Any]:
    """Return the JSON Schema of suite files.

    The assertion `type` is an enum of every registered check (with `not-` forms), and each type's
    `value` schema is attached with `if`/`then`, so editors flag a bad value as well as a bad type.
    Embabel's assertion shapes (`{cypher, expected, weight}`, `{expression, weight}`) are accepted too.
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
            value_schema = _hoisted(check.value.json_schema(), schema["$defs"])
            value_schema.setdefault("description", check.description)
            then = {"properties": {"value": value_schema}}
            if check.value_required:
                then["required"] = ["value"]
        rules.append({"if": condition, "then": then})
    assertion["allOf"] = rules
    shorthands = _shorthands(checks, assertion, schema["$defs"])
    if shorthands:
        schema["$defs"]["AssertionSpec"] = {"anyOf": [assertion, *shorthands]}
    return _with_embabel_jobs(schema)


def _with_embabel_jobs(schema: dict[str, Any]) -> dict[str, Any]:
    """The document is a suite, or an Embabel job (its simulated-user keys at the top, as the loader reads it)."""
    defs = schema["$defs"]
    suite = {key: schema.pop(key) for key in ("type", "description", "properties", "additionalProperties")}
    defs["SuiteFile"] = suite
    simulate = defs["SimulateSpec"]["properties"]
    properties = {key: value for key, value in suite["properties"].items() if key not in ("turns", "cases", "simulate")}
    properties.update({key: simulate[field] for key, (_, field) in MOVED.items()})
    defs["EmbabelJob"] = {
        "type": "object",
        "description": "An Embabel job: a simulated user's persona, greetings, tasks and facts at the top level.",
        "properties": properties,
        "additionalProperties": False,
        "anyOf": [{"required": [key]} for key in sorted(JOB_KEYS)],
    }
    schema["anyOf"] = [{"$ref": "#/$defs/SuiteFile"}, {"$ref": "#/$defs/EmbabelJob"}]
    return schema


def _hoisted(value: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Move a value schema's `$defs` to the document's (its `$ref`s point at the document root)."""
    for name, definition in value.pop("$defs", {}).items():
        # two different models of one name would silently make one check's values validate as the other's
        if defs.setdefault(name, definition) != definition:
            raise ValueError(f"two JSON Schema definitions are named {name!r}: rename one of the models")
    return value


def _shorthands(checks: CheckRegistry, assertion: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """Schemas of the assertion shapes named by their keys (`proctor.suite.shorthand_assertion`)."""
    common = {key: assertion["properties"][key] for key in ("weight", "options", "name")}
    out: list[dict[str, Any]] = []
    for name, key in (("cypher", None), ("expression", "expression")):
        check = next((c for c in checks if c.name == name), None)
        if check is None or check.value is None:
            continue
        value = _hoisted(check.value.json_schema(), defs)
        if key is None:  # the value's own fields stand beside `weight`: find its object schema
            refs = [part["$ref"] for part in value.get("anyOf", [value]) if "$ref" in part]
            value = defs[refs[0].rsplit("/", 1)[-1]] if refs else value
        properties = dict(value.get("properties", {})) if key is None else {key: value}
        required = list(value.get("required", [])) if key is None else [key]
        out.append(
            {
                "type": "object",
                "description": f"A `{name}` check in Embabel's shape: {check.description}",
                "properties": {**properties, **common, "type": {"const": name}},
                "required": required,
                "additionalProperties": False,
            }
        )
    return out
