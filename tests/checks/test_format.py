from __future__ import annotations

from typing import Any

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check, run_check_now
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply

SCHEMA = {
    "type": "object",
    "required": ["employee", "days"],
    "properties": {"employee": {"type": "string"}, "days": {"type": "integer", "minimum": 0}},
}


def check(kind: str, value: Any, text: str) -> CheckResult:
    spec = AssertionSpec.model_validate({"type": kind, "value": value}, context={"checks": registry})
    result = run_check_now(spec, CheckContext(AgentReply(text), 1, [], "case"))
    assert isinstance(result, CheckResult)
    return result


def test_is_json() -> None:
    assert check("is-json", None, '{"a": 1}').status == "passed"
    assert check("is-json", None, '```json\n{"a": 1}\n```').status == "passed"
    bad = check("is-json", None, "{'a': 1}")
    assert bad.status == "failed"
    assert bad.reason.startswith("expected reply to be valid JSON; it is not JSON: Expecting property name")
    assert check("not-is-json", None, "plain words").status == "passed"


def test_json_schema_reports_the_failing_path() -> None:
    assert check("json-schema", SCHEMA, '{"employee": "Alice", "days": 3}').status == "passed"
    bad = check("json-schema", SCHEMA, '{"employee": "Alice", "days": "three"}')
    assert bad.status == "failed"
    assert bad.reason == "expected reply to be JSON matching the schema; $['days']: 'three' is not of type 'integer'"
    missing = check("json-schema", SCHEMA, '{"days": -1}')
    assert "(and 1 more)" in missing.reason
    assert len(missing.details["errors"]) == 2
    assert check("json-schema", SCHEMA, "not json").status == "failed"


def test_latency() -> None:
    spec = AssertionSpec.model_validate({"type": "latency", "value": 300}, context={"checks": registry})
    fast = run_check_now(spec, CheckContext(AgentReply("x", latency_ms=120.5), 0, [], "c"))
    slow = run_check_now(spec, CheckContext(AgentReply("x", latency_ms=301.0), 0, [], "c"))
    assert isinstance(fast, CheckResult) and isinstance(slow, CheckResult)
    assert (fast.status, fast.reason) == ("passed", "expected reply to take at most 300 ms; it took 120.5 ms")
    assert slow.status == "failed"


@pytest.mark.anyio
async def test_llm_rubric_is_skipped_without_a_judge_never_scored() -> None:
    spec = AssertionSpec.model_validate({"type": "llm-rubric", "value": "Is polite"}, context={"checks": registry})
    pending = run_check(spec, CheckContext(AgentReply("hello"), 0, [], "case"))
    assert not isinstance(pending, CheckResult)  # judged checks are async
    result = await pending
    assert (result.status, result.score) == ("skipped", None)
    assert result.reason.startswith("no judge model configured: pass --judge provider/model")
