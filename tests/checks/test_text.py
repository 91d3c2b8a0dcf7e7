from __future__ import annotations

from typing import Any

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check_now
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply, Message


def check(kind: str, value: Any, text: str, **options: Any) -> CheckResult:
    spec = AssertionSpec.model_validate(
        {"type": kind, "value": value, "options": options, "weight": 2}, context={"checks": registry}
    )
    reply = AgentReply(text=text, latency_ms=250.0)
    result = run_check_now(spec, CheckContext(reply, 0, [Message("assistant", text)], "case"))
    assert isinstance(result, CheckResult)
    return result


@pytest.mark.parametrize(
    ("kind", "value", "text", "options", "status"),
    [
        ("contains", "Acme", "I work at Acme Corp", {}, "passed"),
        ("contains", "acme", "I work at Acme Corp", {}, "failed"),
        ("contains", "acme", "I work at Acme Corp", {"case_insensitive": True}, "passed"),
        ("icontains", "ACME", "I work at Acme Corp", {}, "passed"),
        ("contains-any", ["Bob", "Acme"], "I work at Acme", {}, "passed"),
        ("contains-any", "Bob, Carol", "I work at Acme", {}, "failed"),
        ("contains-all", ["work", "Acme"], "I work at Acme", {}, "passed"),
        ("regex", r"\d{3}-\d{4}", "call 555-1234", {}, "passed"),
        ("regex", "ACME", "acme", {}, "passed"),  # case-insensitive by default, as Lobu
        ("regex", "ACME", "acme", {"case_insensitive": False}, "failed"),
        ("equals", "Done.", "  Done.\n", {}, "passed"),
        ("equals", "done.", "Done.", {}, "failed"),
        ("equals", "done.", "Done.", {"case_insensitive": True}, "passed"),
        ("starts-with", "Hello", "Hello there", {}, "passed"),
        ("starts-with", "there", "Hello there", {}, "failed"),
        ("not-contains", "sorry", "Here you go", {}, "passed"),
        ("not-contains", "sorry", "I'm sorry", {}, "failed"),
        ("not-regex", "^no", "no way", {}, "failed"),
    ],
)
def test_text_checks(kind: str, value: Any, text: str, options: dict[str, Any], status: str) -> None:
    result = check(kind, value, text, **options)
    assert result.status == status
    assert result.score == (1.0 if status == "passed" else 0.0)
    assert result.weight == 2 and result.turn == 0 and result.type == kind


def test_contains_all_gives_partial_score_and_names_what_is_missing() -> None:
    result = check("contains-all", ["Alice", "Bob", "Carol", "Dave"], "Alice and Carol are here")
    assert result.status == "failed"
    assert result.score == pytest.approx(0.5)
    assert result.reason == (
        "expected reply to contain all of ['Alice', 'Bob', 'Carol', 'Dave']; "
        "missing ['Bob', 'Dave'] in the reply 'Alice and Carol are here'"
    )
    negated = check("not-contains-all", ["Alice", "Bob", "Carol", "Dave"], "Alice and Carol are here")
    assert (negated.status, negated.score) == ("passed", pytest.approx(0.5))


def test_reasons_say_what_was_expected_and_found() -> None:
    assert check("contains", "Acme", "I work at Initech").reason == (
        "expected reply to contain 'Acme'; it is not in the reply 'I work at Initech'"
    )
    assert check("not-contains", "Acme", "Acme Corp").reason == (
        "expected reply not to contain 'Acme'; found it at offset 0"
    )
    assert check("regex", r"\d+", "order 42").reason == "expected reply to match /\\d+/i; matched '42' at offset 6"


def test_long_replies_are_shortened_in_reasons() -> None:
    reason = check("contains", "zzz", "word " * 100).reason
    assert reason.endswith("…'") and len(reason) < 160
