"""`proctor.checks.check_transcript`: the one check phase every way of scoring goes through.

Judged checks talk to a real scripted model server on loopback; no check is mocked.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import (
    Checklist,
    CheckResult,
    CheckType,
    PhaseContext,
    check_transcript,
    check_transcript_now,
    registry,
)
from proctor.checks._judging import Judge
from proctor.models import ModelSettings, get_model
from proctor.suite import AssertionSpec, Rubric
from proctor.transcript import Message
from servers.model_server import Reply, Script

TRANSCRIPT = [
    Message("user", "Hi"),
    Message("assistant", "Hello, I am Ada.", latency_ms=12.0),
    Message("user", "What is Bob's email?"),
    Message("assistant", "bob@example.com", latency_ms=30.0),
]


def spec(kind: str, value: Any = None) -> AssertionSpec:
    """An assertion as the loader makes it (its value validated by the check's own schema)."""
    return AssertionSpec(type=kind, value=registry.check_value(kind, value))


def judge(script: Script) -> Judge:
    settings = ModelSettings(base_url=script.base_url, api_key="k", cache=None, retry_initial_wait=0.01)
    return Judge(get_model("openai/judge", settings=settings))


def _boom(assertion: AssertionSpec, context: Any) -> Any:
    raise RuntimeError("the check itself is broken")


@pytest.fixture
def boom(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that always raises, registered for one test only (the loader's error messages list every type)."""
    monkeypatch.setitem(
        registry._types, "phase-test-boom", CheckType("phase-test-boom", "test", "Always raises.", _boom, value=None)
    )


@pytest.mark.anyio
async def test_each_turn_is_checked_on_its_own_reply_then_the_conversation() -> None:
    checks = Checklist(
        "c",
        turns=((spec("contains", "Ada"),), (spec("contains", "Ada"), spec("latency", 20))),
        conversation=(spec("not-tool-called", "lookup"),),
    )
    results = await check_transcript(checks, TRANSCRIPT)
    # turn 2's reply does not mention Ada and took 30 ms; no tool was called in the whole conversation
    assert [(r.turn, r.status) for r in results] == [(0, "passed"), (1, "failed"), (1, "failed"), (None, "passed")]
    assert all(r.duration_ns is not None for r in results)


@pytest.mark.anyio
async def test_a_failed_conversation_checks_what_it_can_and_judges_nothing(model_server: Any) -> None:
    script = model_server.script(default=Reply(json.dumps({"reason": "x", "pass": True, "score": 1.0})))
    rubric = Rubric(Path("r.md"), "- polite")
    checks = Checklist(
        "c",
        turns=((spec("contains", "Ada"), spec("llm-rubric", "is friendly")), (spec("contains", "bob"),)),
        conversation=(spec("contains", "x"),),
        rubric=rubric,
    )
    failure = "turn 2: the agent is unreachable"
    results = await check_transcript(checks, TRANSCRIPT[:2], PhaseContext(judge(script), failure=failure))
    assert [(r.type, r.status) for r in results] == [
        ("contains", "passed"),
        ("llm-rubric", "skipped"),
        ("contains", "skipped"),
        ("contains", "skipped"),
        ("rubric", "skipped"),
    ]
    assert results[1].reason == "not judged: the conversation failed"
    assert results[2].reason == "not run: the conversation ended before turn 2"
    assert results[3].reason == results[4].reason == "not run: the conversation failed"
    assert script.requests == []  # nothing paid for


@pytest.mark.anyio
async def test_a_kept_result_replaces_running_the_check() -> None:
    stored = CheckResult("contains 'Ada'", "contains", "failed", 0.0, reason="as stored", turn=0)
    checks = Checklist("c", turns=((spec("contains", "Ada"),), (spec("contains", "bob"),)))

    def reuse(assertion: AssertionSpec, turn: int | None) -> CheckResult | None:
        return stored if turn == 0 else None

    results = await check_transcript(checks, TRANSCRIPT, PhaseContext(reuse=reuse))
    assert results[0] is stored and results[1].status == "passed"


@pytest.mark.anyio
async def test_a_judge_past_its_time_limit_is_an_error_not_a_score(model_server: Any) -> None:
    slow = Reply(json.dumps({"reason": "late", "pass": True, "score": 1.0}), delay=2.0)
    script = model_server.script(default=slow)
    checks = Checklist("c", turns=((spec("llm-rubric", "is friendly"),),))
    (result,) = await check_transcript(checks, TRANSCRIPT, PhaseContext(judge(script), judge_timeout=0.2))
    assert (result.status, result.score) == ("error", None)
    assert result.reason == "check could not run: no result within 0.2 s"


@pytest.mark.anyio
@pytest.mark.usefixtures("boom")
async def test_a_check_that_raises_is_an_error_with_its_traceback() -> None:
    (result,) = await check_transcript(Checklist("c", turns=((spec("phase-test-boom"),),)), TRANSCRIPT)
    assert (result.status, result.score) == ("error", None)
    assert result.reason == "check could not run: RuntimeError: the check itself is broken"
    assert "in _boom" in result.details["traceback"]


def test_the_synchronous_phase_runs_deterministic_checks_and_refuses_judged_ones() -> None:
    checks = Checklist("c", turns=((spec("contains", "Ada"), spec("llm-rubric", "is friendly")),))
    passed, refused = check_transcript_now(checks, TRANSCRIPT)
    assert passed.status == "passed"
    assert refused.status == "error" and "calls a model" in refused.reason


def _leaky(assertion: AssertionSpec, context: Any) -> Any:
    raise ConnectionError("cannot reach https://judge:hunter22@127.0.0.1:9/v1?api_key=sk-planted")


def test_a_check_that_could_not_run_quotes_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any provider's or check's error text passes the check phase redacted (userinfo, secret query values)."""
    monkeypatch.setitem(registry._types, "phase-test-leaky", CheckType("phase-test-leaky", "test", "Leaks.", _leaky))
    (result,) = check_transcript_now(Checklist("c", turns=((spec("phase-test-leaky"),),)), TRANSCRIPT)
    assert result.status == "error" and "https://judge:***@127.0.0.1:9/v1?api_key=***" in result.reason
    assert "hunter22" not in str(result.details) and "sk-planted" not in str(result.details)


def test_a_checklist_is_built_through_its_slots_and_stays_frozen() -> None:

    spec = AssertionSpec(type="contains", value="x")
    checklist = Checklist("c", ((spec,), ()), (spec,))
    assert (checklist.name, checklist.turns, checklist.conversation, checklist.rubric) == (
        "c",
        ((spec,), ()),
        (spec,),
        None,
    )
    assert Checklist("c") == Checklist("c", (), (), None) and type(checklist) is Checklist
    with pytest.raises(dataclasses.FrozenInstanceError):
        checklist.name = "d"  # type: ignore[misc]
