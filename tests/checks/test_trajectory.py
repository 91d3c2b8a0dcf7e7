"""The `journey` check: goal-graph semantics, the metrics arithmetic, and the reasons it gives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers.trajectories import Call, assertion, check, judge_for, transcript, without_embeddings
from proctor.checks import CheckResult
from servers.model_server import Reply

ASSIGN = ("get_assignment_id_hr_agent", {"username": "nwaters"})
SCHEDULE = (
    "get_timeoff_schedule_hr_agent",
    {"assignment_id": "15778303", "start_date": "2025-01-01", "end_date": "2025-01-30"},
)
SEED = {  # the watsonx ADK's example dataset's graph
    "goals": {
        "get_assignment_id_hr_agent-1": ["get_timeoff_schedule_hr_agent-1"],
        "get_timeoff_schedule_hr_agent-1": ["summarize"],
    },
    "goal_details": [
        {"type": "tool_call", "name": "get_assignment_id_hr_agent-1", "tool_name": ASSIGN[0], "args": ASSIGN[1]},
        {"type": "tool_call", "name": "get_timeoff_schedule_hr_agent-1", "tool_name": SCHEDULE[0], "args": SCHEDULE[1]},
        {
            "type": "text",
            "name": "summarize",
            "response": "Your time off schedule is on January 5, 2025.",
            "keywords": ["January 5, 2025"],
        },
    ],
}
ANSWER = "Your time off schedule is on January 5, 2025."


def tool(name: str, tool_name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "tool_name": tool_name, "args": args}


async def journey(
    value: dict[str, Any], *replies: tuple[str, list[Call]] | tuple[str, list[Call], float]
) -> CheckResult:
    return await check(assertion("journey", value), transcript(*replies))


def statuses(result: CheckResult) -> dict[str, str]:
    return {g["goal"]: g["status"] for g in result.details["goals"]}


def call_verdicts(result: CheckResult) -> list[str]:
    return [c["verdict"] for c in result.details["calls"]]


@pytest.mark.anyio
async def test_seed_journey_succeeds_with_every_metric() -> None:
    result = await journey(SEED, ("Let me check.", [ASSIGN], 100.0), (ANSWER, [SCHEDULE], 300.0))
    assert (result.status, result.score, result.type, result.turn) == ("passed", 1.0, "journey", None)
    assert result.reason == (
        "journey succeeded: 2 of 2 tool-call goals matched in dependency order; text goal 'summarize' matched; "
        "precision 1.00, recall 1.00"
    )
    assert result.details["metrics"] == {
        "total_tool_calls": 2,
        "expected_tool_calls": 2,
        "correct_tool_calls": 2,
        "relevant_tool_calls": 2,
        "incorrect_parameter_calls": 0,
        "tool_call_precision": 1.0,
        "tool_call_recall": 1.0,
        "text_match": True,
        "journey_success": True,
        "avg_response_time_ms": 200.0,
    }
    goals = result.details["goals"]
    assert [(g["goal"], g.get("call"), g.get("turn")) for g in goals[:2]] == [
        ("get_assignment_id_hr_agent-1", 1, 0),
        ("get_timeoff_schedule_hr_agent-1", 2, 1),
    ]
    assert goals[2] == {"goal": "summarize", "type": "text", "status": "matched", "message": 3, "method": "keywords"}
    assert result.details["matching"]["similarity_threshold"] == 0.8


@pytest.mark.anyio
async def test_metrics_arithmetic_with_extra_wrong_and_repeated_calls() -> None:
    wrong = (SCHEDULE[0], {**SCHEDULE[1], "end_date": "2025-01-31"})
    extra = ("lookup_user", {"name": "Nina"})
    result = await journey(
        SEED,
        ("...", [extra, ASSIGN, wrong], 50.0),
        ("...", [ASSIGN, SCHEDULE], 70.0),
        (ANSWER, [], 30.0),
    )
    # extra and mis-parameterised calls lower precision but do not fail the journey
    assert result.status == "passed"
    metrics = result.details["metrics"]
    assert metrics == {
        "total_tool_calls": 5,
        "expected_tool_calls": 2,
        "correct_tool_calls": 2,
        "relevant_tool_calls": 4,
        "incorrect_parameter_calls": 1,
        "tool_call_precision": 0.4,
        "tool_call_recall": 1.0,
        "text_match": True,
        "journey_success": True,
        "avg_response_time_ms": 50.0,
    }
    assert call_verdicts(result) == ["irrelevant", "correct", "incorrect_parameters", "redundant", "correct"]


@pytest.mark.anyio
async def test_wrong_argument_fails_the_goal_and_blocks_its_dependents() -> None:
    wrong = (SCHEDULE[0], {**SCHEDULE[1], "start_date": "2026-01-01", "end_date": "2026-01-30"})
    result = await journey(SEED, ("Your time off schedule is on January 12, 2026.", [ASSIGN, wrong]))
    assert (result.status, result.score) == ("failed", 0.0)
    assert result.reason == (
        "journey failed: goal 'get_timeoff_schedule_hr_agent-1' (get_timeoff_schedule_hr_agent) not matched: "
        "wrong arguments: the only call (#2) had start_date '2026-01-01' (expected '2025-01-01', strict), "
        "end_date '2026-01-30' (expected '2025-01-30', strict); text goal 'summarize' not matched: no answer "
        "contains 'January 5, 2025' (last answer: 'Your time off schedule is on January 12, 2026.'); "
        "precision 0.50, recall 0.50"
    )
    missing = result.details["goals"][1]
    assert missing["closest_call"] == 2
    assert [(a["argument"], a["ok"]) for a in missing["arguments"]] == [
        ("assignment_id", True),
        ("start_date", False),
        ("end_date", False),
    ]
    metrics = result.details["metrics"]
    assert (metrics["correct_tool_calls"], metrics["incorrect_parameter_calls"], metrics["text_match"]) == (1, 1, False)


@pytest.mark.anyio
async def test_parallel_branches_match_in_any_order() -> None:
    graph = {
        "goals": {"a": ["join"], "b": ["join"], "join": []},
        "goal_details": [tool("a", "lookup", who="x"), tool("b", "lookup", who="y"), tool("join", "merge")],
    }
    for order in (
        [("lookup", {"who": "x"}), ("lookup", {"who": "y"})],
        [("lookup", {"who": "y"}), ("lookup", {"who": "x"})],
    ):
        result = await journey(graph, ("done", [*order, ("merge", {})]))
        assert result.status == "passed", order
    # the join before one branch is out of order
    early = await journey(graph, ("done", [("lookup", {"who": "x"}), ("merge", {}), ("lookup", {"who": "y"})]))
    assert early.status == "failed"
    assert statuses(early) == {"a": "matched", "b": "matched", "join": "missing"}
    assert "call #2 fits but comes before its prerequisite 'b' was done" in early.reason
    assert call_verdicts(early) == ["correct", "out_of_order", "correct"]


@pytest.mark.anyio
async def test_missing_prerequisite_is_named() -> None:
    result = await journey(SEED, (ANSWER, [SCHEDULE]))
    assert result.status == "failed"
    assert statuses(result) == {
        "get_assignment_id_hr_agent-1": "missing",
        "get_timeoff_schedule_hr_agent-1": "missing",
        "summarize": "missing",
    }
    assert "goal 'get_assignment_id_hr_agent-1' (get_assignment_id_hr_agent) not matched: the agent never called " in (
        result.reason
    )
    assert (
        "goal 'get_timeoff_schedule_hr_agent-1' (get_timeoff_schedule_hr_agent) not matched: its prerequisite "
        "'get_assignment_id_hr_agent-1' was not matched (call #1 fits)" in result.reason
    )
    # IBM's counting: the call is correct whatever the order (only journey success needs the order)
    metrics = result.details["metrics"]
    assert (metrics["correct_tool_calls"], metrics["tool_call_precision"], metrics["tool_call_recall"]) == (1, 1.0, 0.5)
    assert metrics["journey_success"] is False
    assert call_verdicts(result) == ["out_of_order"]


@pytest.mark.anyio
async def test_dependent_called_before_its_prerequisite_does_not_count() -> None:
    result = await journey(SEED, ("...", [SCHEDULE, ASSIGN]), (ANSWER, []))
    assert statuses(result)["get_timeoff_schedule_hr_agent-1"] == "missing"
    assert "call #1 fits but comes before its prerequisite 'get_assignment_id_hr_agent-1' was done" in result.reason
    # called again in the right place, it counts
    again = await journey(SEED, ("...", [SCHEDULE, ASSIGN]), (ANSWER, [SCHEDULE]))
    assert again.status == "passed" and call_verdicts(again) == ["redundant", "correct", "correct"]


@pytest.mark.anyio
async def test_repeated_tools_need_one_call_each() -> None:
    graph = {
        "goals": {"first": [], "second": []},
        "goal_details": [tool("first", "notify", to="a"), tool("second", "notify", to="a")],
    }
    once = await journey(graph, ("ok", [("notify", {"to": "a"})]))
    assert once.status == "failed"
    assert "every call that fits (#1) matched 'first' already" in once.reason
    assert once.details["metrics"]["tool_call_recall"] == 0.5
    twice = await journey(graph, ("ok", [("notify", {"to": "a"}), ("notify", {"to": "a"})]))
    assert twice.status == "passed"


@pytest.mark.anyio
async def test_the_search_is_not_fooled_by_a_greedy_first_choice() -> None:
    # "any" accepts any arguments, "specific" only one value; the first call fits both. A greedy matcher
    # gives it to "any" and then has nothing for "specific".
    graph = {
        "goals": {"any": [], "specific": []},
        "goal_details": [
            {"type": "tool_call", "name": "any", "tool_name": "search", "args": {"IGNORE": None}},
            tool("specific", "search", q="acme"),
        ],
    }
    result = await journey(graph, ("ok", [("search", {"q": "acme"}), ("search", {"q": "other"})]))
    assert result.status == "passed"
    assert {g["goal"]: g["call"] for g in result.details["goals"]} == {"any": 2, "specific": 1}


@pytest.mark.anyio
async def test_without_goals_the_listed_order_is_required() -> None:
    chain = {"goal_details": [tool("a", "first"), tool("b", "second")]}
    assert (await journey(chain, ("ok", [("first", {}), ("second", {})]))).status == "passed"
    assert (await journey(chain, ("ok", [("second", {}), ("first", {})]))).status == "failed"
    independent = {**chain, "goals": {}}
    assert (await journey(independent, ("ok", [("second", {}), ("first", {})]))).status == "passed"


@pytest.mark.anyio
async def test_text_goal_keywords_ignore_case_and_must_come_after_prerequisites() -> None:
    result = await journey(SEED, ("...", [ASSIGN, SCHEDULE]), ("your time off is on JANUARY 5, 2025", []))
    assert result.status == "passed"
    early = await journey(SEED, (ANSWER, []), ("...", [ASSIGN, SCHEDULE]), ("Anything else?", []))
    assert statuses(early)["summarize"] == "missing"
    assert "text goal 'summarize' not matched: the matching answer came before its prerequisites were done" in (
        early.reason
    )
    assert early.details["metrics"]["text_match"] is False


@pytest.mark.anyio
async def test_text_goal_without_keywords_needs_the_response_when_fuzzy_is_off() -> None:
    value = {"goal_details": [{"type": "text", "name": "say", "response": "Your  reminder is set."}]}
    assert (await journey(value, ("OK! your reminder is set.", []))).status == "passed"
    assert (await journey(value, ("Done, reminder created.", []))).status == "failed"


@pytest.mark.anyio
async def test_fuzzy_text_match_needs_the_meaning_too(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {**SEED, "enable_fuzzy_matching": True}
    same = await journey(value, ("...", [ASSIGN, SCHEDULE]), ("Your time off schedule: January 5, 2025.", []))
    assert same.status == "passed"
    text_goal = same.details["goals"][2]
    assert text_goal["method"] == "embeddings" and text_goal["similarity"] > 0.9
    unrelated = "January 5, 2025 is when the cafeteria menu changes to winter dishes."
    other = await journey(value, ("...", [ASSIGN, SCHEDULE]), (unrelated, []))
    assert other.status == "failed"
    assert "the answer has the keywords but does not match the expected response (embeddings similarity 0." in (
        other.reason
    )
    without_embeddings(monkeypatch)
    fallback = await journey(value, ("...", [ASSIGN, SCHEDULE]), ("Your time off schedule: January 5, 2025.", []))
    assert fallback.status == "passed" and fallback.details["goals"][2]["method"] == "rapidfuzz"


@pytest.mark.anyio
async def test_fuzzy_text_match_by_judge(model_server: Any) -> None:
    script = model_server.script(Reply(json.dumps({"reason": "a different date", "equivalent": False})))
    value = {**SEED, "enable_fuzzy_matching": True}
    spec = assertion("journey", value)
    result = await check(
        spec,
        transcript(("...", [ASSIGN, SCHEDULE]), ("January 5, 2025? No, you are off on the 6th.", [])),
        judge_for(script),
    )
    assert result.status == "failed"
    assert "(judge; a different date)" in result.reason
    assert (
        "<expected_answer>\nYour time off schedule is on January 5, 2025." in script.bodies[0]["messages"][1]["content"]
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("options", "actual", "passed"),
    [
        ({}, {"username": "NWaters"}, False),
        ({"case_insensitive": True}, {"username": "NWaters"}, True),
    ],
)
async def test_matching_options_reach_the_arguments(
    options: dict[str, Any], actual: dict[str, Any], passed: bool
) -> None:
    value = {"goal_details": [tool("g", ASSIGN[0], **ASSIGN[1])], **options}
    assert ((await journey(value, ("ok", [(ASSIGN[0], actual)]))).status == "passed") is passed


@pytest.mark.anyio
async def test_numbers_and_strings() -> None:
    value = {"goal_details": [tool("g", "get", id="15778303", n=1)]}
    assert (await journey(value, ("ok", [("get", {"id": "15778303", "n": 1.0})]))).status == "passed"
    assert (await journey(value, ("ok", [("get", {"id": 15778303, "n": 1})]))).status == "failed"
    lenient = {**value, "numeric_strings": True}
    assert (await journey(lenient, ("ok", [("get", {"id": 15778303, "n": "1"})]))).status == "passed"


@pytest.mark.anyio
async def test_no_calls_at_all() -> None:
    result = await journey(SEED, ("I can't help with that.", [], 20.0))
    metrics = result.details["metrics"]
    assert (metrics["total_tool_calls"], metrics["tool_call_precision"], metrics["tool_call_recall"]) == (0, 0.0, 0.0)
    assert result.details["calls"] == []
    nothing_expected = {"goal_details": [{"type": "text", "name": "t", "keywords": ["help"]}]}
    text_only = await journey(nothing_expected, ("I can't help with that.", []))
    assert text_only.status == "passed"
    assert text_only.details["metrics"]["tool_call_precision"] == 1.0
    assert text_only.details["metrics"]["tool_call_recall"] == 1.0
