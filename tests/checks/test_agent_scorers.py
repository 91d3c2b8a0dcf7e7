"""The agent scorers (NovaEval's eight, plus the exact twin) against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check
from proctor.checks._agent_scorers import AGENT_SCORERS, exact_match, missing_fields, score_agent_data
from proctor.checks._judging import Judge
from proctor.models import ModelSettings, get_model, prompt_hash
from proctor.recorded import AgentData
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply, Message, ToolCall
from servers.model_server import Reply, Script

PROMPTS = Path(__file__).parents[2] / "src/proctor/checks/prompts"

FULL = AgentData(
    user_id="u1",
    task_id="t1",
    agent_name="mathbot",
    agent_role="Math assistant",
    agent_task="What is 17 times 23?",
    system_prompt="You are a careful math assistant.",
    agent_response="17 x 23 = 391.",
    trace=[{"role": "user", "content": "What is 17 times 23?"}, {"role": "assistant", "content": "391"}],
    tools_available=[{"name": "calculator", "description": "Evaluates arithmetic"}],
    tool_calls=[
        {"tool_name": "calculator", "parameters": {"expression": "17*23"}, "call_id": "c1"},
        {"tool_name": "calculator", "parameters": {"expression": "391/23"}, "call_id": "c2"},
    ],
    tool_call_results=[
        {"call_id": "c2", "result": 17, "success": True},
        {"call_id": "c1", "result": 391, "success": True},
    ],
    expected_tool_call={"tool_name": "calculator", "parameters": {"expression": "17*23"}},
    retrieval_query=["multiplication table 17"],
    retrieved_context=[["17 x 20 = 340", "17 x 3 = 51"]],
    ground_truth="391",
    agent_exit=True,
)

VERDICT = {"original_task": "Multiply 17 by 23.", "reasoning": "Correct and on task.", "score": 4}


def judge_for(script: Script) -> Judge:
    settings = ModelSettings(
        base_url=script.base_url, api_key="k", cache=None, retry_initial_wait=0.01, retry_max_wait=0.02
    )
    return Judge(get_model("openai/judge-test", settings=settings))


def prompts(script: Script) -> list[str]:
    return [body["messages"][1]["content"] for body in script.bodies]


# What each scorer's prompt must show of FULL (besides its rubric), and how many judge calls it makes.
EXPECTED: dict[str, tuple[list[str], int]] = {
    "tool_relevancy": (['"name": "calculator"', "Evaluates arithmetic", "17*23", "What is 17 times 23?"], 2),
    "tool_correctness": (['"tool_name": "calculator"', "<expected_tool_call>", "17*23"], 2),
    "parameter_correctness": (["<tool_result>", '"result": 391', "17*23", "<tool_schema>"], 2),
    "task_progression": (["Math assistant", "careful math assistant", "What is 17 times 23?", "391."], 1),
    "context_relevancy": (["Math assistant", "What is 17 times 23?", "17 x 20 = 340", "multiplication table"], 1),
    "role_adherence": (["Math assistant", "What is 17 times 23?", "17 x 23 = 391.", "391/23"], 1),
    "goal_achievement": (['"content": "What is 17 times 23?"', "<expected_outcome>", "391"], 1),
    "conversation_coherence": (['"content": "What is 17 times 23?"', "<trace>"], 1),
}


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(EXPECTED))
async def test_each_scorer_request_and_parsing(model_server: Any, name: str) -> None:
    script = model_server.script(default=Reply(json.dumps(VERDICT)))
    scorer = AGENT_SCORERS[name]
    result = await score_agent_data(name, FULL, judge_for(script))
    shown, calls = EXPECTED[name]
    assert len(script.bodies) == calls
    everything = "\n".join(prompts(script))
    for text in shown:
        assert text in everything, (name, text)
    for prompt in prompts(script):
        assert "Answer with JSON only" in prompt and "Evaluation steps" in prompt
    body = script.bodies[0]
    assert body["temperature"] == 0 and body["response_format"]["type"] == "json_schema"
    assert set(body["response_format"]["json_schema"]["schema"]["properties"]) >= {"reasoning", "score"}
    low, high = scorer.scale or (0, 1)
    normalised = (4 - low) / (high - low)
    assert result.status == ("passed" if normalised >= 0.5 else "failed") and result.type == scorer.check_type
    assert result.score == pytest.approx(normalised)
    assert result.details["raw_score"] == 4 and result.details["scale"] == [low, high]
    judge = result.details["judge"]
    assert judge["calls"] == calls and judge["usage"] == {"prompt": 100 * calls, "completion": 20 * calls}
    source = (PROMPTS / f"{scorer.check_type}.j2").read_text()
    assert judge["template"] == scorer.check_type and judge["template_sha"] == prompt_hash(source)
    if scorer.per_call:
        assert [s["tool_name"] for s in result.details["scores"]] == ["calculator", "calculator"]
        assert [s["call_id"] for s in result.details["scores"]] == ["c1", "c2"]
    elif name in ("task_progression", "goal_achievement", "conversation_coherence"):
        assert result.details["original_task"] == "Multiply 17 by 23."
    else:
        assert result.details["reasoning"] == "Correct and on task."


@pytest.mark.anyio
async def test_per_call_scores_each_call_and_reports_the_mean(model_server: Any) -> None:
    first = {"reasoning": "Right tool.", "score": 9}
    second = {"reasoning": "Checking the result is redundant.", "score": 5}
    script = model_server.script(Reply(json.dumps(first)), Reply(json.dumps(second), delay=0.05))
    result = await score_agent_data("tool_relevancy", FULL, judge_for(script))
    # one request per tool call, each showing only its own call
    calls = sorted(prompts(script), key=lambda p: "391/23" in p)
    assert "17*23" in calls[0] and "391/23" not in calls[0] and "391/23" in calls[1]
    assert result.details["raw_score"] == pytest.approx(7.0)
    assert result.score == pytest.approx(6 / 9)
    assert sorted(s["score"] for s in result.details["scores"]) == [5, 9]
    assert "over 2 tool calls" in result.reason and "lowest calculator 5" in result.reason


@pytest.mark.anyio
async def test_parameter_correctness_pairs_each_call_with_its_result(model_server: Any) -> None:
    script = model_server.script(default=Reply(json.dumps(VERDICT)))
    await score_agent_data("parameter_correctness", FULL, judge_for(script))
    for prompt in prompts(script):
        if "17*23" in prompt:
            assert '"result": 391' in prompt and '"result": 17,' not in prompt
        else:
            assert '"result": 17' in prompt and '"result": 391' not in prompt


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "data", "missing"),
    [
        ("tool_relevancy", {"tool_calls": FULL.tool_calls}, ["tools_available"]),
        ("tool_correctness", {"tool_calls": FULL.tool_calls}, ["expected_tool_call"]),
        ("parameter_correctness", {"tool_calls": FULL.tool_calls}, ["tool_call_results"]),
        ("task_progression", {"agent_task": "x", "agent_response": "y"}, ["agent_role", "system_prompt"]),
        ("context_relevancy", {"agent_role": "r"}, ["agent_task", "agent_response"]),
        ("role_adherence", {"agent_role": "r", "agent_task": " "}, ["agent_task", "agent_response"]),
        ("goal_achievement", {"agent_exit": True}, ["trace"]),
        ("conversation_coherence", {"agent_exit": "true", "trace": []}, ["trace"]),
        ("tool_correctness_exact", {"tool_calls": "[]"}, ["expected_tool_call", "tool_calls"]),
    ],
)
async def test_missing_fields_give_the_seed_dict_and_a_skip(
    model_server: Any, name: str, data: dict[str, Any], missing: list[str]
) -> None:
    script = model_server.script()
    record = AgentData.model_validate(data)
    result = await score_agent_data(name, record, judge_for(script))
    expected = {
        "error": "Missing required fields",
        "required_fields": {f: f not in missing for f in AGENT_SCORERS[name].required},
        "missing_fields": missing,
    }
    assert missing_fields(AGENT_SCORERS[name], record) == expected
    # nothing to score in this record: skipped, never an error (NovaEval's dict kept in the details)
    assert (result.status, result.score, result.details) == ("skipped", None, expected)
    assert result.reason.startswith(f"nothing to score: the record has no {', '.join(missing)} ")
    assert script.bodies == []


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["goal_achievement", "conversation_coherence"])
@pytest.mark.parametrize("flag", [False, "false", "no", "0"])
async def test_not_exited_is_skipped_without_a_call(model_server: Any, name: str, flag: Any) -> None:
    script = model_server.script()
    record = FULL.model_copy(update={"agent_exit": AgentData(agent_exit=flag).agent_exit})
    result = await score_agent_data(name, record, judge_for(script))
    assert (result.status, result.score) == ("skipped", None)
    assert "the agent has not exited" in result.reason
    assert script.bodies == []


@pytest.mark.anyio
async def test_exit_is_checked_before_missing_fields(model_server: Any) -> None:
    result = await score_agent_data("goal_achievement", AgentData(), judge_for(model_server.script()))
    assert result.status == "skipped" and "not exited" in result.reason


@pytest.mark.anyio
async def test_no_judge_skips_with_the_hint_but_the_exact_twin_runs() -> None:
    judged = await score_agent_data("context_relevancy", FULL, None)
    assert judged.status == "skipped" and "no judge model configured" in judged.reason
    exact = await score_agent_data("tool_correctness_exact", FULL, None)
    assert (exact.status, exact.score) == ("passed", 1.0)


@pytest.mark.anyio
async def test_unreachable_judge_is_an_error_never_a_minimum(model_server: Any) -> None:
    script = model_server.script(default=Reply(status=500, body={"error": "down"}))
    result = await score_agent_data("context_relevancy", FULL, judge_for(script))
    assert (result.status, result.score) == ("error", None)
    assert "judge could not run: ModelHTTPError" in result.reason and len(script.bodies) == 4


@pytest.mark.anyio
async def test_unusable_or_out_of_range_output_is_an_error_with_raw_outputs(model_server: Any) -> None:
    script = model_server.script(Reply("I'd say 7/10"), Reply(json.dumps({"reasoning": "x", "score": 11})))
    result = await score_agent_data("role_adherence", FULL, judge_for(script))
    assert (result.status, result.score) == ("error", None)
    assert result.details["raw_outputs"][1] == json.dumps({"reasoning": "x", "score": 11})
    assert "less than or equal to 10" in result.reason


@pytest.mark.anyio
async def test_task_progression_is_on_1_to_5(model_server: Any) -> None:
    script = model_server.script(Reply(json.dumps({**VERDICT, "score": 7})), Reply(json.dumps({**VERDICT, "score": 5})))
    result = await score_agent_data("task_progression", FULL, judge_for(script))
    assert result.details["scale"] == [1, 5] and result.score == 1.0 and len(script.bodies) == 2


@pytest.mark.anyio
async def test_one_failed_call_of_several_makes_the_result_an_error(model_server: Any) -> None:
    script = model_server.script(Reply(json.dumps({"reasoning": "ok", "score": 8})), default=Reply("nonsense"))
    result = await score_agent_data("tool_correctness", FULL, judge_for(script))
    assert (result.status, result.score) == ("error", None)
    assert result.reason.startswith("tool call ") and " of 2: judge output could not be used" in result.reason
    assert result.details["judge"]["calls"] == 1  # the call that worked is still accounted


@pytest.mark.anyio
async def test_text_tool_calls_are_judged_as_one_opaque_call(model_server: Any) -> None:
    script = model_server.script(default=Reply(json.dumps(VERDICT)))
    record = FULL.model_copy(update={"tool_calls": "calculator(17*23) then calculator(391/23)"})
    result = await score_agent_data("tool_relevancy", record, judge_for(script))
    assert len(script.bodies) == 1 and "calculator(17*23) then" in prompts(script)[0]
    assert result.details["scores"][0]["tool_name"] == "tool call"


def test_exact_twin_by_name_and_arguments() -> None:
    def exact(calls: Any, expected: Any) -> CheckResult:
        return exact_match(AgentData(tool_calls=calls, expected_tool_call=expected))

    expected = {"name": "lookup", "arguments": {"id": 7, "full": True}}
    match = exact(
        [{"name": "search", "arguments": {}}, {"name": "lookup", "arguments": '{"full": true, "id": 7.0}'}], expected
    )
    assert (match.status, match.score) == ("passed", 1.0) and match.reason.startswith("tool call 2 is lookup(")
    wrong = exact([{"name": "lookup", "arguments": {"id": 8, "full": 1, "x": 0}}], expected)
    assert (wrong.status, wrong.score) == ("failed", 0.5)
    assert "argument 'id' is 8, expected 7" in wrong.reason and "argument 'full' is 1, expected true" in wrong.reason
    assert "unexpected argument 'x'" in wrong.reason
    absent = exact([{"name": "search", "arguments": {"id": 7, "full": True}}], expected)
    assert (absent.status, absent.score) == ("failed", 0.0) and "not called" in absent.reason
    text = exact([{"name": "lookup"}], "call lookup with id 7")
    assert text.status == "skipped" and "expected_tool_call is text" in text.reason  # recorded: nothing to compare
    in_suite = exact_match(AgentData(expected_tool_call="x", tool_calls=[{"tool_name": "a"}]), missing="error")
    assert in_suite.status == "error" and "expected_tool_call is text" in in_suite.reason


async def _run(spec: dict[str, Any], context: CheckContext) -> CheckResult:
    assertion = AssertionSpec.model_validate(spec, context={"checks": registry})
    pending = run_check(assertion, context)
    return pending if isinstance(pending, CheckResult) else await pending


@pytest.mark.anyio
async def test_suite_check_on_a_turn_uses_the_reply_and_the_value(model_server: Any) -> None:
    script = model_server.script(default=Reply(json.dumps({"reasoning": "fits", "score": 10})))
    reply = AgentReply("Booked.", [ToolCall("book_room", {"room": "A1"}, "x1")])
    transcript = [
        Message("system", "You book rooms."),
        Message("user", "Book room A1"),
        Message("assistant", "Booked."),
    ]
    context = CheckContext(reply, 0, transcript, "case", judge=judge_for(script))
    spec = {"type": "tool-relevancy", "value": {"tools_available": [{"name": "book_room", "description": "Books"}]}}
    result = await _run(spec, context)
    assert (result.status, result.score, result.turn) == ("passed", 1.0, 0)
    prompt = prompts(script)[0]
    assert '"tool_name": "book_room"' in prompt and "Book room A1" in prompt and '"name": "book_room"' in prompt
    missing = await _run({"type": "role-adherence"}, context)
    assert missing.status == "error" and missing.details["missing_fields"] == ["agent_role"]


@pytest.mark.anyio
async def test_suite_check_on_the_conversation_has_exited(model_server: Any) -> None:
    script = model_server.script(default=Reply(json.dumps(VERDICT)))
    transcript = [
        Message("user", "Book room A1"),
        Message("assistant", "Booked.", [ToolCall("book_room", {"room": "A1"})]),
    ]
    context = CheckContext(None, None, transcript, "case", judge=judge_for(script))
    result = await _run({"type": "goal-achievement"}, context)
    assert (result.status, result.details["original_task"]) == ("failed", "Multiply 17 by 23.")  # 4 of 1..10
    assert '"content": "Book room A1"' in prompts(script)[0]
    exact = await _run(
        {
            "type": "tool-correctness-exact",
            "value": {"expected_tool_call": {"name": "book_room", "arguments": {"room": "A1"}}},
        },
        context,
    )
    assert exact.status == "passed"


def test_suite_values_and_scopes_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown AgentData field"):
        registry.check_value("tool-relevancy", {"tools": []})
    with pytest.raises(ValueError, match="agent_exit"):
        registry.check_value("goal-achievement", {"agent_exit": [True]})
    with pytest.raises(ValueError, match="checks the whole conversation"):
        registry.check_scope("goal-achievement", "turn")
    registry.check_scope("tool-relevancy", "turn")
    registry.check_scope("tool-relevancy", "case")
    assert registry.resolve("tool-relevancy")[0].needs_model
    assert not registry.resolve("tool-correctness-exact")[0].needs_model
