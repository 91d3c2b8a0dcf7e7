"""Inline `python` assertions: sandboxed expressions anywhere, file functions only in trusted suites."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from proctor.checks import CheckResult, check_transcript, registry
from proctor.errors import SuiteError
from proctor.suite import Case, Trust, load_suite_file
from proctor.transcript import Message, ToolCall

TRANSCRIPT = [
    Message("user", "What is the capital of France?"),
    Message("assistant", "The capital of France is Paris.", [ToolCall("lookup", {"country": "France"})]),
    Message("user", "And of Japan?"),
    Message("assistant", "Tokyo.", [ToolCall("lookup", {"country": "Japan"})]),
]

FUNCTIONS = """\
from proctor.checks import CheckResult


def names_paris(reply):
    return "Paris" in reply


def brevity(reply, context):
    return (min(1.0, 10 / len(reply)), f"{len(reply)} characters on turn {context['turn']}")


async def asks_twice(transcript, **rest):
    return sum(1 for m in transcript if m.role == "user") == 2


def own_result(reply):
    return CheckResult("", "", "failed", 0.25, reason="my own reason", details={"mine": True})


def broken(reply):
    raise RuntimeError("boom in the user's check")


def says_nothing(reply):
    return "maybe"
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def suite(tmp_path: Path, turn_checks: str, case_checks: str = "[]", *, trusted: bool = True) -> Path:
    write(tmp_path / "proctor.yaml", f"trusted: {str(trusted).lower()}\n")
    write(tmp_path / "checks" / "capitals.py", FUNCTIONS)
    text = (
        "name: capitals\n"
        f"assert: {case_checks}\n"
        "turns:\n"
        f"  - content: What is the capital of France?\n    assert: {turn_checks}\n"
        "  - content: And of Japan?\n"
    )
    return write(tmp_path / "suite.yaml", text)


def load(path: Path) -> Case:
    (case,) = load_suite_file(path, registry, trust=Trust()).cases
    return case


def results(case: Case) -> list[CheckResult]:
    async def run() -> list[CheckResult]:
        return await check_transcript(case, TRANSCRIPT)

    return anyio.run(run)


def test_expressions_see_the_reply_its_tool_calls_and_the_transcript(tmp_path: Path) -> None:
    checks = (
        "[{type: python, value: \"'Paris' in reply and len(reply) < 200\"},"
        " {type: python, value: \"tool_calls[0].arguments.country == 'France' and len(transcript) == 2\"},"
        " {type: python, value: \"'Tokyo' in reply\"}]"
    )
    case_checks = "[{type: python, value: \"reply == 'Tokyo.' and len(tool_calls) == 2 and turn == None\"}]"
    got = results(load(suite(tmp_path, checks, case_checks, trusted=False)))
    assert [(r.status, r.turn) for r in got] == [("passed", 0), ("passed", 0), ("failed", 0), ("passed", None)]
    assert got[2].reason == "expected 'Tokyo' in reply to be true; it is false"


def test_an_expression_score_passes_at_the_threshold_and_other_values_are_errors(tmp_path: Path) -> None:
    checks = (
        "[{type: python, value: 'len(reply) / 100'},"
        " {type: python, value: 'len(reply) / 100', options: {threshold: 0.2}},"
        " {type: python, value: 'reply.upper()'},"
        " {type: python, value: 'len(reply) * 2'}]"
    )
    low, passed, text, too_big = results(load(suite(tmp_path, checks)))
    assert (low.status, low.score) == ("failed", 0.31)
    assert (passed.status, passed.score) == ("passed", 0.31)
    assert text.status == "error" and "not a bool or a score" in text.reason
    assert too_big.status == "error" and "expected a bool, a score in 0..1" in too_big.reason


def test_the_sandbox_limits_hold_for_expressions(tmp_path: Path) -> None:
    checks = '[{type: python, value: "reply.__class__"}]'
    with pytest.raises(SuiteError) as info:
        load(suite(tmp_path, checks))
    assert "suite.yaml:5:" in str(info.value) and "not allowed" in str(info.value)
    (runaway,) = results(load(suite(tmp_path, "[{type: python, value: 'round(1, -10**8) == 1'}]")))
    assert runaway.status == "error"


def test_file_functions_run_in_a_trusted_suite(tmp_path: Path) -> None:
    checks = (
        "[{type: python, value: checks/capitals.py:names_paris},"
        " {type: python, value: checks/capitals.py:brevity, options: {threshold: 0.3}},"
        " {type: python, value: checks/capitals.py:own_result, weight: 2},"
        " {type: python, value: checks/capitals.py:broken},"
        " {type: python, value: checks/capitals.py:says_nothing}]"
    )
    case_checks = "[{type: python, value: checks/capitals.py:asks_twice}]"
    paris, brevity, own, broken, nothing, twice = results(load(suite(tmp_path, checks, case_checks)))
    assert paris.status == "passed" and paris.score == 1.0
    assert (brevity.status, brevity.reason) == ("passed", "31 characters on turn 0")
    assert (own.status, own.score, own.weight, own.reason, own.turn) == ("failed", 0.25, 2.0, "my own reason", 0)
    assert own.details == {"mine": True}
    assert broken.status == "error" and broken.score is None
    assert "boom in the user's check" in broken.reason
    assert "RuntimeError" in broken.details["traceback"] and "capitals.py" in broken.details["traceback"]
    assert nothing.status == "error" and "returned str 'maybe'" in nothing.reason
    assert twice.status == "passed" and twice.turn is None


def test_a_file_function_in_an_untrusted_suite_is_a_located_load_error(tmp_path: Path) -> None:
    path = suite(tmp_path, "[{type: python, value: checks/capitals.py:names_paris}]", trusted=False)
    with pytest.raises(SuiteError) as info:
        load(path)
    (issue,) = info.value.issues
    assert (issue.line, issue.field) == (5, "turns[0].assert[0].value")
    assert "names Python code to run (checks/capitals.py:names_paris)" in issue.message
    assert "--trust" in issue.message


def test_a_missing_function_or_a_file_outside_the_project_fails_where_it_should(tmp_path: Path) -> None:
    write(tmp_path / "elsewhere.py", "def f(reply):\n    return True\n")
    project = tmp_path / "project"
    path = suite(project, "[{type: python, value: ../elsewhere.py:f}]")
    with pytest.raises(SuiteError) as info:
        load(path)
    assert "outside the project root" in str(info.value)
    (missing,) = results(load(suite(project, "[{type: python, value: checks/capitals.py:nope}]")))
    assert missing.status == "error" and "has no function 'nope'" in missing.reason
    assert "names_paris" in missing.reason
