"""The agentevals-style tool-call checks, on one reply and on the whole conversation."""

from __future__ import annotations

from typing import Any

import pytest

from helpers.trajectories import assertion, check, transcript
from proctor.checks import registry

LOOKUP = ("lookup_user", {"name": "Dave"})
TIME_OFF = ("get_time_off", {"user_id": "u4", "start": "2025-06-09"})
REMIND = ("create_reminder", {"text": "call Dave", "day": "Friday"})
CONVERSATION = transcript(
    ("Dave is u4.", [LOOKUP]), ("Dave is out next week.", [TIME_OFF, LOOKUP]), ("Done.", [REMIND])
)


async def status(kind: str, value: Any, *, turn: int | None = None, **extra: Any) -> str:
    return (await check(assertion(kind, value, **extra), CONVERSATION, turn=turn)).status


def test_registered_with_scope_any_in_the_trajectory_family() -> None:
    for name in ("tool-called", "tool-not-called", "tool-sequence", "tool-args-match", "tool-call-f1"):
        check_type, _ = registry.resolve(name)
        assert (check_type.family, check_type.scope) == ("trajectory", "any")
    journey, _ = registry.resolve("journey")
    assert (journey.family, journey.scope) == ("trajectory", "conversation")
    assert "not-tool-called" in registry.names() and "not-tool-call-f1" not in registry.names()


@pytest.mark.anyio
async def test_tool_called_on_the_conversation_and_on_one_turn() -> None:
    assert await status("tool-called", "get_time_off") == "passed"
    assert await status("tool-called", "get_time_off", turn=0) == "failed"  # turn 1 only looked Dave up
    assert await status("tool-called", "get_time_off", turn=1) == "passed"
    assert await status("tool-called", {"name": "get_time_off", "args": {"user_id": "u4"}}) == "passed"
    assert await status("tool-called", {"name": "get_time_off", "args": {"user_id": "u5"}}) == "failed"
    result = await check(assertion("tool-called", "list_team"), CONVERSATION)
    assert result.reason == (
        "expected the agent to call list_team; calls made: lookup_user, get_time_off, lookup_user, create_reminder"
    )
    assert result.name == "tool-called: list_team"
    on_turn = await check(assertion("tool-called", "get_time_off"), CONVERSATION, turn=1)
    assert on_turn.reason == "expected the reply to call get_time_off; call #1 is one" and on_turn.turn == 1


@pytest.mark.anyio
async def test_tool_not_called_and_the_negated_form() -> None:
    assert await status("tool-not-called", "list_team") == "passed"
    assert await status("not-tool-called", "list_team") == "passed"
    failed = await check(assertion("tool-not-called", "lookup_user"), CONVERSATION)
    assert failed.status == "failed"
    assert failed.reason.endswith("it was called 2 time(s), first as call #1")
    negated = await check(assertion("not-tool-called", "lookup_user"), CONVERSATION)
    assert (negated.status, negated.score) == ("failed", 0.0)
    assert negated.reason.startswith("expected the agent not to call lookup_user")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tools", "mode", "passed"),
    [
        (["lookup_user", "get_time_off", "lookup_user", "create_reminder"], "strict", True),
        (["lookup_user", "lookup_user", "get_time_off", "create_reminder"], "strict", False),  # order
        (["lookup_user", "get_time_off", "create_reminder"], "strict", False),  # one call short
        (["create_reminder", "lookup_user", "lookup_user", "get_time_off"], "unordered", True),
        (["create_reminder", "lookup_user", "get_time_off"], "unordered", False),  # lookup_user was called twice
        (["create_reminder", "lookup_user", "lookup_user", "get_time_off", "list_team"], "subset", True),
        (["create_reminder", "lookup_user", "get_time_off"], "subset", False),  # the second lookup is outside
        (["get_time_off", "lookup_user"], "superset", True),
        (["get_time_off", "get_time_off"], "superset", False),  # repeated tools count
        ([{"name": "get_time_off", "args": {"user_id": "u4"}}, "create_reminder"], "superset", True),
        ([{"name": "get_time_off", "args": {"user_id": "u1"}}], "superset", False),
    ],
)
async def test_tool_sequence_modes(tools: list[Any], mode: str, passed: bool) -> None:
    assert await status("tool-sequence", {"tools": tools, "mode": mode}) == ("passed" if passed else "failed")


@pytest.mark.anyio
async def test_tool_sequence_list_form_is_strict_and_works_on_a_turn() -> None:
    assert await status("tool-sequence", ["get_time_off", "lookup_user"], turn=1) == "passed"
    assert await status("tool-sequence", ["lookup_user", "get_time_off"], turn=1) == "failed"
    assert await status("tool-sequence", [], turn=2) == "failed"  # an empty list: no calls expected
    quiet = transcript(("Hello!", []))
    assert (await check(assertion("tool-sequence", []), quiet)).status == "passed"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "score"),
    [
        ({"calls": [{"name": "get_time_off", "args": TIME_OFF[1]}], "mode": "exact"}, 1.0),
        ({"calls": [{"name": "get_time_off", "args": {"user_id": "u4"}}], "mode": "exact"}, 0.0),
        ({"calls": [{"name": "get_time_off", "args": {"user_id": "u4"}}], "mode": "superset"}, 1.0),
        ({"calls": [{"name": "get_time_off", "args": {**TIME_OFF[1], "end": "x"}}], "mode": "subset"}, 1.0),
        ({"calls": [{"name": "get_time_off", "args": {"user_id": "u4"}}], "mode": "subset"}, 0.0),
        ({"calls": [{"name": "get_time_off", "args": {"user_id": "u9"}}], "mode": "ignore"}, 1.0),
        (
            {
                "calls": [
                    {"name": "get_time_off", "args": {"user_id": "u4", "start": "other"}},
                    {"name": "create_reminder", "args": {"text": "call Dave", "day": "Friday"}},
                ],
                "mode": "exact",
                "overrides": {"get_time_off": ["user_id"]},
            },
            1.0,
        ),
        (
            [  # a bare list: exact mode; one of two expected calls fits
                {"name": "lookup_user", "args": {"name": "Dave"}},
                {"name": "create_reminder", "args": {"text": "call Eve", "day": "Friday"}},
            ],
            0.5,
        ),
    ],
)
async def test_tool_args_match_modes_and_overrides(value: Any, score: float) -> None:
    result = await check(assertion("tool-args-match", value), CONVERSATION)
    assert result.score == score
    assert result.status == ("passed" if score == 1.0 else "failed")


@pytest.mark.anyio
async def test_tool_args_match_reason_lists_what_is_missing() -> None:
    value = [{"name": "create_reminder", "args": {"text": "call Eve", "day": "Friday"}}]
    result = await check(assertion("tool-args-match", value), CONVERSATION, turn=2)
    assert result.reason == (
        "expected the reply to call 1 tool(s) with exact arguments; no call fits "
        "create_reminder({'text': 'call Eve', 'day': 'Friday'}) "
        "(calls: #1 create_reminder({'text': 'call Dave', 'day': 'Friday'}))"
    )
    assert result.details["missing"] == ["create_reminder({'text': 'call Eve', 'day': 'Friday'})"]


@pytest.mark.anyio
async def test_tool_call_f1_partial_credit() -> None:
    # 4 calls made; expected 3 of which 2 were made (lookup_user once, get_time_off): P = 2/4, R = 2/3
    value = ["lookup_user", "get_time_off", "list_team"]
    result = await check(assertion("tool-call-f1", value), CONVERSATION)
    assert result.details["precision"] == 0.5 and result.details["recall"] == pytest.approx(2 / 3)
    assert result.score == pytest.approx(4 / 7)  # 2PR / (P + R)
    assert result.status == "failed"  # default threshold 1.0
    lenient = await check(assertion("tool-call-f1", value, options={"threshold": 0.5}), CONVERSATION)
    assert lenient.status == "passed" and lenient.score == pytest.approx(4 / 7)
    perfect = await check(assertion("tool-call-f1", ["get_time_off", "lookup_user"]), CONVERSATION, turn=1)
    assert (perfect.status, perfect.score) == ("passed", 1.0)


def test_values_are_validated_at_load() -> None:
    with pytest.raises(ValueError, match="bad value for check type 'tool-sequence'"):
        registry.check_value("tool-sequence", {"tools": ["a"], "mode": "sometimes"})
    with pytest.raises(ValueError, match="bad value for check type 'tool-args-match'"):
        registry.check_value("tool-args-match", {"calls": [], "mode": "exact"})
    with pytest.raises(ValueError, match="bad value for check type 'tool-called'"):
        registry.check_value("tool-called", {"tool": "x"})
    with pytest.raises(ValueError, match="'journey' checks the whole conversation"):
        registry.check_scope("journey", "turn")
