from __future__ import annotations

import json

import jsonschema
import pytest

from proctor.checks import CheckContext, CheckResult, CheckType, Outcome, registry, run_check_now, suite_json_schema
from proctor.checks._registry import CheckRegistry
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply


def test_names_include_negations_and_exclude_conversation_checks() -> None:
    names = registry.names()
    assert {"contains", "not-contains", "regex", "not-regex", "llm-rubric", "latency"} <= set(names)
    assert "not-llm-rubric" not in names and "rubric" not in names


def test_unknown_type_suggests_the_closest() -> None:
    with pytest.raises(ValueError, match=r"unknown check type 'regx'; did you mean 'regex'\?"):
        registry.check_type("regx")


def test_an_exception_inside_a_check_is_an_error_result_not_a_score() -> None:
    local = CheckRegistry()

    def boom(spec: AssertionSpec, context: CheckContext) -> Outcome:
        raise KeyError("nope")

    local.register(CheckType("boom", "test", "raises", boom))
    with pytest.raises(ValueError, match="already registered"):
        local.register(CheckType("boom", "test", "raises", boom))
    with pytest.raises(ValueError, match="may not start with"):
        local.register(CheckType("not-x", "test", "x", boom))
    registry.register(CheckType("test-boom", "test", "raises", boom))
    try:
        spec = AssertionSpec(type="test-boom")
        result = run_check_now(spec, CheckContext(AgentReply("x"), 0, [], "c"))
        assert isinstance(result, CheckResult)
        assert (result.status, result.score) == ("error", None)
        assert result.reason == "check could not run: KeyError: 'nope'"
    finally:
        registry._types.pop("test-boom")


def test_suite_schema_is_valid_and_validates_examples() -> None:
    schema = suite_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = {"name": "x", "turns": [{"content": "hi", "assert": [{"type": "latency", "value": 100}]}]}
    assert not list(validator.iter_errors(good))
    bad_type = {"name": "x", "turns": [{"content": "hi", "assert": [{"type": "containz", "value": "a"}]}]}
    assert list(validator.iter_errors(bad_type))
    bad_value = {"name": "x", "turns": [{"content": "hi", "assert": [{"type": "latency", "value": "fast"}]}]}
    assert list(validator.iter_errors(bad_value))
    assert json.dumps(schema)  # serialisable
