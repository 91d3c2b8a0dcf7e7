"""LLM-judged checks against a real scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check
from proctor.checks._judges import FAILED_VERDICT_CAP
from proctor.checks._judging import Judge
from proctor.checks._rubric import split_rubric
from proctor.models import ModelSettings, get_model, prompt_hash
from proctor.scoring import score_trial
from proctor.suite import AssertionSpec, Rubric, ScoringSpec
from proctor.transcript import AgentReply, Message
from servers.model_server import Reply, Script


def judge_for(script: Script, **prompts: str) -> Judge:
    settings = ModelSettings(
        base_url=script.base_url, api_key="k", cache=None, retry_initial_wait=0.01, retry_max_wait=0.02
    )
    return Judge(get_model("openai/judge-test", settings=settings), prompts or None)


async def judged(spec: dict[str, Any], judge: Judge | None, reply: str = "Paris is the capital.") -> CheckResult:
    assertion = AssertionSpec.model_validate(spec, context={"checks": registry})
    transcript = [Message("user", "What is the capital of France?"), Message("assistant", reply)]
    pending = run_check(assertion, CheckContext(AgentReply(reply), 0, transcript, "case", judge=judge))
    assert not isinstance(pending, CheckResult)
    return await pending


@pytest.mark.anyio
async def test_llm_rubric_verdict_with_judge_details(model_server: Any) -> None:
    script = model_server.script(Reply(json.dumps({"reason": "It names Paris.", "pass": True, "score": 0.9})))
    result = await judged({"type": "llm-rubric", "value": "Names the capital", "weight": 2}, judge_for(script))
    assert (result.status, result.score, result.weight) == ("passed", 0.9, 2)
    assert result.reason == "judge: It names Paris."
    judge = result.details["judge"]
    assert judge["model"] == "openai/judge-test" and judge["template"] == "llm-rubric"
    source = (Path(__file__).parents[2] / "src/proctor/checks/prompts/llm-rubric.j2").read_text()
    assert judge["template_sha"] == prompt_hash(source)
    assert judge["usage"] == {"prompt": 100, "completion": 20}
    (request,) = script.bodies
    assert request["model"] == "judge-test" and request["temperature"] == 0
    assert request["response_format"]["type"] == "json_schema"
    prompt = request["messages"][1]["content"]
    assert "Names the capital" in prompt and "Paris is the capital." in prompt


@pytest.mark.anyio
async def test_threshold_overrides_the_judges_pass(model_server: Any) -> None:
    script = model_server.script(Reply(json.dumps({"reason": "meh", "pass": True, "score": 0.6})))
    result = await judged({"type": "llm-rubric", "value": "x", "options": {"threshold": 0.8}}, judge_for(script))
    assert (result.status, result.score) == ("failed", 0.6)


@pytest.mark.anyio
async def test_unusable_judge_output_is_an_error_with_raw_outputs(model_server: Any) -> None:
    script = model_server.script(Reply("I think it's great!"), Reply("Still not JSON, sorry"))
    result = await judged({"type": "llm-rubric", "value": "x"}, judge_for(script))
    assert (result.status, result.score) == ("error", None)
    assert result.reason.startswith("judge output could not be used")
    assert result.details["raw_outputs"] == ["I think it's great!", "Still not JSON, sorry"]
    second = script.bodies[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "I think it's great!"}  # the retry shows its error


@pytest.mark.anyio
async def test_a_verdict_cut_off_at_the_token_limit_is_an_error_never_a_score(model_server: Any) -> None:
    cut = '{"reason": "The reply names Paris but", "score": 0.'
    script = model_server.script(Reply(cut, finish_reason="length"))
    result = await judged({"type": "relevance"}, judge_for(script))
    assert (result.status, result.score) == ("error", None)  # before issue 14: repaired to 0.0, failed
    assert "cut off (finish reason 'length')" in result.reason
    assert result.details["raw_outputs"] == [cut]
    whole = model_server.script(Reply(json.dumps({"reason": "ok", "pass": True, "score": 1}), finish_reason="length"))
    assert (await judged({"type": "llm-rubric", "value": "x"}, judge_for(whole))).status == "error"


@pytest.mark.anyio
async def test_unreachable_judge_is_an_error_not_a_score(model_server: Any) -> None:
    script = model_server.script(default=Reply(status=500, body={"error": "down"}))
    result = await judged({"type": "relevance"}, judge_for(script))
    assert (result.status, result.score) == ("error", None)
    assert "judge could not run: ModelHTTPError" in result.reason
    assert len(script.bodies) == 4  # 1 + 3 retries


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["relevance", "coherence", "completeness", "instruction", "faithfulness"])
async def test_pointwise_judges(model_server: Any, kind: str) -> None:
    script = model_server.script(Reply(json.dumps({"reason": "fine", "score": 0.75})))
    value = "France's capital is Paris." if kind in ("faithfulness", "instruction") else None
    result = await judged({"type": kind, "value": value}, judge_for(script))
    assert (result.status, result.score) == ("passed", 0.75)
    assert result.details["threshold"] == 0.7 and result.details["judge"]["template"] == kind
    prompt = script.bodies[0]["messages"][1]["content"]
    assert "What is the capital of France?" in prompt and "Paris is the capital." in prompt
    if value:
        assert value in prompt


def test_faithfulness_without_context_is_a_load_error() -> None:
    # Before: it loaded, and was `skipped` at every run, so its case passed under --ci on its other checks.
    with pytest.raises(ValueError, match="check type 'faithfulness' needs a value: Every claim in the answer"):
        AssertionSpec.model_validate({"type": "faithfulness"}, context={"checks": registry})
    with pytest.raises(ValueError, match="at least 1 character"):
        AssertionSpec.model_validate({"type": "faithfulness", "value": ""}, context={"checks": registry})
    for optional in ("relevance", "coherence", "completeness", "instruction"):  # their value stays optional
        AssertionSpec.model_validate({"type": optional}, context={"checks": registry})


@pytest.mark.anyio
async def test_faithfulness_without_context_outside_a_suite_is_skipped_not_zero(model_server: Any) -> None:
    # The service builds its specs without the catalog: an event with no context is skipped there (README).
    script = model_server.script()
    spec = AssertionSpec(type="faithfulness")
    transcript = [Message("user", "What is the capital of France?"), Message("assistant", "Paris.")]
    pending = run_check(spec, CheckContext(AgentReply("Paris."), 0, transcript, "case", judge=judge_for(script)))
    assert not isinstance(pending, CheckResult)
    result = await pending
    assert (result.status, result.score) == ("skipped", None)
    assert "needs context" in result.reason and script.bodies == []


def rubric_verdict(passed: Any, score: float, reason: str = "not polite", **extra: Any) -> Reply:
    return Reply(json.dumps({**extra, "pass": passed, "score": score, "reason": reason}))


@pytest.mark.anyio
async def test_a_failing_verdict_scores_at_most_the_highest_failing_grade(model_server: Any) -> None:
    # QA's reply: the judge says fail, yet scores 0.9; before, the failed check contributed 0.9 and a
    # one-check trial passed at the default pass threshold 0.8.
    script = model_server.script(rubric_verdict(False, 0.9, reasoning="The reply is rude."))
    result = await judged({"type": "llm-rubric", "value": "Polite"}, judge_for(script))
    assert (result.status, result.score) == ("failed", FAILED_VERDICT_CAP) and FAILED_VERDICT_CAP == 0.7
    assert result.details["verdict"] == {"pass": False, "score": 0.9}  # the judge's own answer, as it was
    assert result.details["capped_from"] == 0.9
    assert result.reason == "judge: not polite (verdict fail with score 0.9: scored 0.7, the highest failing grade)"
    trial = score_trial([result], pass_threshold=ScoringSpec().pass_threshold)  # 0.8
    assert (trial.status, trial.score) == ("failed", 0.7)


@pytest.mark.anyio
@pytest.mark.parametrize(("passed", "score", "status"), [(False, 0.7, "failed"), (False, 0.4, "failed"),
                                                         (True, 0.9, "passed"), (True, 0.2, "passed")])  # fmt: skip
async def test_a_verdict_within_the_prompt_s_scale_keeps_its_score(
    model_server: Any, passed: bool, score: float, status: str
) -> None:
    script = model_server.script(rubric_verdict(passed, score))
    result = await judged({"type": "llm-rubric", "value": "Polite"}, judge_for(script))
    assert (result.status, result.score) == (status, score)
    assert "capped_from" not in result.details and result.reason == "judge: not polite"


@pytest.mark.anyio
async def test_with_a_threshold_the_score_decides_and_is_not_capped(model_server: Any) -> None:
    script = model_server.script(rubric_verdict(False, 0.9), rubric_verdict(False, 0.5))
    spec = {"type": "llm-rubric", "value": "Polite", "options": {"threshold": 0.8}}
    high = await judged(spec, judge_for(script))
    assert (high.status, high.score) == ("passed", 0.9) and "capped_from" not in high.details
    low = await judged(spec, judge_for(script))
    assert (low.status, low.score) == ("failed", 0.5)


@pytest.mark.anyio
@pytest.mark.parametrize("passed", ["false", "true", 0, 1, "no", None])
async def test_a_pass_that_is_not_a_json_boolean_is_an_error_never_a_verdict(model_server: Any, passed: Any) -> None:
    # Before: pydantic's lax mode read "false" as False, "true"/1 as True: a verdict interpreted, not given.
    script = model_server.script(rubric_verdict(passed, 0.9), rubric_verdict(passed, 0.9))
    result = await judged({"type": "llm-rubric", "value": "Polite"}, judge_for(script))
    assert (result.status, result.score) == ("error", None)
    assert result.reason.startswith("judge output could not be used") and "pass: Input should be a valid boolean" in (
        result.reason
    )
    assert len(result.details["raw_outputs"]) == 2  # shown its error once, then an error
    assert "valid boolean" in script.bodies[1]["messages"][-1]["content"]


@pytest.mark.anyio
async def test_a_judge_that_corrects_its_pass_to_a_boolean_is_judged(model_server: Any) -> None:
    script = model_server.script(rubric_verdict("false", 0.4), rubric_verdict(False, 0.4))
    result = await judged({"type": "llm-rubric", "value": "Polite"}, judge_for(script))
    assert (result.status, result.score) == ("failed", 0.4)
    assert result.details["judge"]["attempts"] == 2


@pytest.mark.anyio
async def test_a_rubric_criterion_s_passed_must_be_a_json_boolean(model_server: Any) -> None:
    criteria = [{"id": i, "name": f"c{i}", "passed": "true", "explanation": ""} for i in range(1, 6)]
    answer = Reply(json.dumps({"criteria": criteria}))
    script = model_server.script(answer, answer)
    result = await rubric_result(script)
    assert (result.status, result.score) == ("error", None)
    assert "criteria.0.passed: Input should be a valid boolean" in result.reason


# A rubric in Lobu's documented layout (a title, sections, bullets), written for these tests.
RUBRIC = """\
# Answering well

Grade the whole conversation.

## Content
- Answers the question that was asked
- Gives exactly the number of items requested,
  no more and no fewer
- Cites where each fact came from

## Manner
- Polite throughout
1. No unrequested follow-up questions
"""


async def rubric_result(script: Script, text: str = RUBRIC) -> CheckResult:
    spec = AssertionSpec(type="rubric", name="rubric: answering.md")
    rubric = Rubric(Path("answering.md"), text)
    context = CheckContext(
        None, None, [Message("user", "hi"), Message("assistant", "hello")], "c", rubric, judge_for(script)
    )
    pending = run_check(spec, context)
    assert not isinstance(pending, CheckResult)
    return await pending


def criteria_verdict(*passed: bool, **extra: Any) -> Reply:
    criteria = [{"id": i, "name": f"c{i}", "passed": p, "explanation": f"why {i}"} for i, p in enumerate(passed, 1)]
    return Reply(json.dumps({"criteria": criteria, "score": 0.9, **extra}))


def test_proctor_splits_a_rubric_into_its_criteria() -> None:
    criteria = split_rubric(RUBRIC)
    assert [c.text for c in criteria] == [
        "Answers the question that was asked",
        "Gives exactly the number of items requested, no more and no fewer",
        "Cites where each fact came from",
        "Polite throughout",
        "No unrequested follow-up questions",
    ]
    assert [c.section for c in criteria] == ["Content", "Content", "Content", "Manner", "Manner"]
    assert [c.id for c in criteria] == [1, 2, 3, 4, 5]
    assert [c.text for c in split_rubric("# Tone\nBe kind.\n\n# Facts\nCite sources.\n")] == [
        "Be kind.",
        "Cite sources.",
    ]
    assert [c.text for c in split_rubric("Just be helpful.")] == ["Just be helpful."]
    assert split_rubric("  \n") == []


@pytest.mark.anyio
async def test_rubric_file_scores_the_share_of_its_own_criteria_met(model_server: Any) -> None:
    script = model_server.script(criteria_verdict(True, False, True, True, True))
    result = await rubric_result(script)
    assert (result.status, result.score) == ("failed", 0.8)
    assert result.reason == (
        "4 of 5 rubric criteria met; not met: Gives exactly the number of items requested, no more and no fewer (why 2)"
    )
    records = result.details["criteria"]
    assert [r["section"] for r in records][:2] == ["Content", "Content"] and result.details["judge_score"] == 0.9
    assert records[1]["text"].startswith("Gives exactly the number") and records[1]["passed"] is False
    prompt = script.bodies[0]["messages"][1]["content"]
    assert "2. [Content] Gives exactly the number of items requested, no more and no fewer" in prompt


@pytest.mark.anyio
async def test_a_criterion_the_judge_leaves_out_is_an_error_not_met_nor_dropped(model_server: Any) -> None:
    # Before issue 14 the judge's own list was the denominator: answering one criterion of five scored 1 of 1.
    script = model_server.script(
        Reply(json.dumps({"criteria": [{"name": "Polite", "passed": True, "explanation": "kind"}], "score": 1.0}))
    )
    result = await rubric_result(script)
    assert (result.status, result.score) == ("error", None)
    assert result.reason.startswith("the judge gave no verdict for 4 of 5 rubric criteria: 1. Answers the question")
    polite = result.details["criteria"][3]
    assert (polite["passed"], polite["explanation"]) == (True, "kind")  # matched by name
    assert result.details["criteria"][0]["passed"] is None


@pytest.mark.anyio
async def test_criteria_are_matched_by_name_when_the_judge_gives_no_ids(model_server: Any) -> None:
    answers = [{"name": "Direct", "passed": True, "explanation": "a"}, {"name": "Format", "passed": False}]
    script = model_server.script(Reply(json.dumps({"criteria": answers})))
    result = await rubric_result(script, "# Tone\n- Direct\n- Format\n")
    assert (result.status, result.score) == ("failed", 0.5)
    assert result.reason == "1 of 2 rubric criteria met; not met: Format"


@pytest.mark.anyio
async def test_prompt_override_is_used_and_hashed(model_server: Any, tmp_path: Path) -> None:
    script = model_server.script(Reply(json.dumps({"reason": "ok", "score": 1.0})))
    judge = judge_for(script, coherence="Custom coherence prompt for {{ answer }}. JSON please.")
    result = await judged({"type": "coherence"}, judge)
    assert (
        script.bodies[0]["messages"][1]["content"] == "Custom coherence prompt for Paris is the capital.. JSON please."
    )
    assert result.details["judge"]["template_sha"] == prompt_hash(
        "Custom coherence prompt for {{ answer }}. JSON please."
    )


@pytest.mark.anyio
async def test_without_a_judge_every_judged_check_is_skipped_with_a_hint() -> None:
    for kind in ("llm-rubric", "relevance", "g-eval"):
        value = "criteria" if kind != "relevance" else None
        result = await judged({"type": kind, "value": value}, None)
        assert (result.status, result.score) == ("skipped", None)
        assert "--judge" in result.reason and "PROCTOR_JUDGE_MODEL" in result.reason


def test_a_judge_s_fail_fails_the_run_under_ci(
    model_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """QA's reproduction, end to end: one llm-rubric check, the judge says fail with score 0.9."""
    from typer.testing import CliRunner

    from proctor.cli import app

    suite = tmp_path / "polite.yaml"
    suite.write_text(
        "name: polite\ntrials: 1\ntarget: python:helpers.agents:echo\n"
        "turns:\n  - content: hi\n    assert: [{type: llm-rubric, value: The reply is polite}]\n"
    )
    reply = '{"reasoning":"The reply is rude.","pass":false,"score":0.9,"reason":"not polite"}'
    script = model_server.script(default=Reply(reply))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("PROCTOR_TRUST", "1")  # the suite names its (test) agent as Python code
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", str(suite), "--ci", "--judge", "openai/j", "--no-cache"])
    assert result.exit_code == 1, result.output  # before: 0, the trial passed at 0.9 >= 0.8
    summary = json.loads(result.stdout)
    data = json.loads(Path(summary["results_file"]).read_text())
    (trial,) = data["cases"][0]["trials"]
    assert (trial["status"], trial["score"]) == ("failed", 0.7)
    (check,) = trial["checks"]
    assert (check["status"], check["score"], check["details"]["capped_from"]) == ("failed", 0.7, 0.9)
