"""G-Eval against a real scripted OpenAI-compatible server: logprobs, sampling, step generation."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check
from proctor.checks._geval import _STEPS_MEMO, expected_score, sample_score
from proctor.checks._judging import Judge
from proctor.models import ModelSettings, get_model
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply, Message
from servers.model_server import Reply, Script


def judge_for(script: Script) -> Judge:
    settings = ModelSettings(base_url=script.base_url, api_key="k", cache=None, retry_initial_wait=0.01)
    return Judge(get_model("openai/geval-test", settings=settings))


async def g_eval(value: Any, judge: Judge, **options: Any) -> CheckResult:
    spec = AssertionSpec.model_validate(
        {"type": "g-eval", "value": value, "options": options}, context={"checks": registry}
    )
    context = CheckContext(
        AgentReply("Paris."), 0, [Message("user", "Capital?"), Message("assistant", "Paris.")], "c", judge=judge
    )
    pending = run_check(spec, context)
    assert not isinstance(pending, CheckResult)
    return await pending


def test_expected_score_weights_valid_score_tokens() -> None:
    steps = [[("The", -0.1)], [("4", math.log(0.6)), ("5", math.log(0.3)), ("x", math.log(0.1))]]
    assert expected_score(steps, 1, 5) == pytest.approx((4 * 0.6 + 5 * 0.3) / 0.9)
    assert expected_score([[("nope", 0.0)]], 1, 5) is None
    assert expected_score([[("9", 0.0)]], 1, 5) is None  # out of range


@pytest.mark.anyio
async def test_logprob_weighted_score_with_given_steps(model_server: Any) -> None:
    script = model_server.script(Reply("4", logprobs=[[("4", math.log(0.5)), ("5", math.log(0.5))]]))
    result = await g_eval({"criteria": "Accurate", "steps": ["Check the fact"]}, judge_for(script))
    assert result.details["method"] == "logprobs"
    assert result.details["raw_score"] == pytest.approx(4.5)
    assert result.score == pytest.approx((4.5 - 1) / 4) and result.status == "passed"
    (request,) = script.bodies
    assert request["logprobs"] is True and request["top_logprobs"] == 20
    assert "1. Check the fact" in request["messages"][1]["content"]


@pytest.mark.anyio
async def test_steps_generated_once_then_sampling_without_logprobs(model_server: Any) -> None:
    _STEPS_MEMO.clear()
    script = model_server.script(
        Reply(json.dumps({"steps": ["Read the reply", "Compare with the question"]})),
        Reply("3"),  # no logprobs: fall back to sampling
        Reply(choices=["2", "3", "4", "Score: 5", "none"]),
        Reply("3"),
        Reply(choices=["3", "3", "3", "3", "3"]),
    )
    judge = judge_for(script)
    first = await g_eval("Helpful", judge, threshold=0.6)
    assert first.details["method"] == "mean of 4 samples"
    assert first.details["raw_score"] == pytest.approx(3.5)  # 'none' is not a score
    assert first.details["steps"] == ["Read the reply", "Compare with the question"]
    assert first.score == pytest.approx(0.625) and first.status == "passed"
    assert first.details["judge"]["calls"] == 3
    second = await g_eval("Helpful", judge)
    assert second.details["raw_score"] == 3.0
    assert len(script.bodies) == 5  # the steps were generated once
    assert script.bodies[2]["n"] == 5 and script.bodies[2]["temperature"] == 1.0


@pytest.mark.anyio
async def test_no_valid_sample_is_an_error(model_server: Any) -> None:
    script = model_server.script(Reply("great"), Reply(choices=["great"] * 5))
    result = await g_eval({"criteria": "x", "steps": ["y"]}, judge_for(script))
    assert (result.status, result.score) == ("error", None)
    assert result.details["raw_outputs"] == ["great"] * 5


def test_g_eval_value_is_validated_at_load() -> None:
    with pytest.raises(ValueError, match="scale must be"):
        registry.check_value("g-eval", {"criteria": "x", "scale": [5, 1]})
    assert registry.check_value("g-eval", "Accurate").criteria == "Accurate"


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("4", 4.0),
        (" 4\n", 4.0),
        ("Score: 5", 5.0),
        ("2 2", 2.0),  # the same number twice: one rating
        ("4.5", 4.5),
        ("out of 5: 2", None),  # before: 5, the first integer
        ("4/5", None),
        ("4 out of 5", None),
        ("1-5", None),
        ("7", None),  # off the scale
        ("0", None),
        ("none", None),
        ("", None),
    ],
)
def test_a_sample_is_read_only_where_its_score_is_unambiguous(text: str, score: float | None) -> None:
    assert sample_score(text, 1, 5) == score


def test_a_scale_with_negative_scores_reads_its_sign() -> None:
    assert sample_score("-2", -2, 2) == -2.0 and sample_score("2", -2, 2) == 2.0


@pytest.mark.anyio
async def test_a_sample_naming_two_numbers_is_unusable_and_counted(model_server: Any) -> None:
    # Before: "out of 5: 2" counted as 5, and the mean was (5 + 2 + 2 + 2 + 2) / 5 = 2.6.
    script = model_server.script(Reply("2"), Reply(choices=["out of 5: 2", "2", "2", "2", "2"]))
    result = await g_eval({"criteria": "x", "steps": ["y"]}, judge_for(script))
    assert result.details["raw_score"] == 2.0 and result.score == pytest.approx(0.25) and result.status == "failed"
    assert result.details["samples"] == {"total": 5, "usable": 4, "unusable": ["out of 5: 2"]}
    assert "(mean of 4 samples; 1 of 5 unusable, left out)" in result.reason


@pytest.mark.anyio
async def test_every_sample_usable_says_so(model_server: Any) -> None:
    script = model_server.script(Reply("4"), Reply(choices=["4", "4", "5", "4", "4"]))
    result = await g_eval({"criteria": "x", "steps": ["y"]}, judge_for(script))
    assert result.details["samples"] == {"total": 5, "usable": 5, "unusable": []}
    assert "(mean of 5 samples); normalised" in result.reason


@pytest.mark.anyio
async def test_fewer_than_half_the_samples_usable_is_an_error(model_server: Any) -> None:
    # QA's case: 3 of 5 garbage scored "mean of 2 samples" and passed.
    samples = ["5", "garbage", "5", "no idea", "3 or 4"]
    script = model_server.script(Reply("great"), Reply(choices=samples))
    result = await g_eval({"criteria": "x", "steps": ["y"]}, judge_for(script))
    assert (result.status, result.score) == ("error", None)
    assert "only 2 of 5 samples gave a usable score from 1 to 5" in result.reason
    assert result.details["raw_outputs"] == samples


@pytest.mark.anyio
async def test_half_the_samples_usable_is_scored(model_server: Any) -> None:
    script = model_server.script(Reply("great"), Reply(choices=["5", "garbage", "5", "no idea"]))
    result = await g_eval({"criteria": "x", "steps": ["y"], "samples": 4}, judge_for(script))
    assert (result.status, result.details["raw_score"]) == ("passed", 5.0)
    assert result.details["samples"]["usable"] == 2 and "2 of 4 unusable" in result.reason


@pytest.mark.anyio
async def test_logprobs_of_an_ambiguous_answer_are_not_used(model_server: Any) -> None:
    # "out of 5: 2": the first score token is the "5" of the scale, not the rating; sample instead.
    tokens = [[("out", -0.01)], [(" of", -0.01)], [(" 5", -0.01), (" 4", -5.0)], [(":", -0.01)], [(" 2", -0.01)]]
    script = model_server.script(Reply("out of 5: 2", logprobs=tokens), Reply(choices=["2"] * 5))
    result = await g_eval({"criteria": "x", "steps": ["y"]}, judge_for(script))
    assert result.details["method"] == "mean of 5 samples" and result.details["raw_score"] == 2.0
    assert len(script.bodies) == 2
