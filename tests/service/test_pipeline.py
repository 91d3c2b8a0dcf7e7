"""The pipeline: prechecks, early exit, judges in parallel with timeouts, confidence, verdicts, errors."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.checks import Checklist, check_transcript_now
from proctor.errors import ConfigError
from proctor.scoring import mean_score, verdict_band
from proctor.service import JUDGES, EvaluationRequest, Pipeline, PipelineConfig, ServiceSettings, build_pipeline
from proctor.service._pipeline import StageOne
from proctor.suite import AssertionSpec
from servers.model_server import Reply
from service.events import SEED_EARLY_EXIT, SEED_EVALUATE, event
from service.judge_server import JudgeScript, verdict

PRECHECKS = ["length-checker", "overlap-checker", "format-checker"]
STAGE1 = (1.0 + 2 / 3 + 1.0) / 3  # the seed request: length ok, 2 of 3 query terms, well formed


def pipeline_for(script: JudgeScript, **config: Any) -> Pipeline:
    settings = ServiceSettings(PipelineConfig(**config), "openai/judge-test", script.base_url, "test-key")
    return build_pipeline(settings)


def request(data: str | dict[str, Any]) -> EvaluationRequest:
    return EvaluationRequest.model_validate_json(data if isinstance(data, str) else json.dumps(data))


@pytest.mark.anyio
async def test_the_seed_request_passes_with_the_go_services_five_judges(judge_server: Any) -> None:
    # the Go service's docs/API_TEST_CASES.md: "8 stages (3 prechecks + 5 judges)"
    script = judge_server.script(
        relevance=verdict(0.95, "The answer directly addresses the query."),
        faithfulness=verdict(1.0, "The answer is fully supported by the context."),
        coherence=verdict(0.95, "The answer is clear and logically consistent."),
        completeness=verdict(0.9, "Every part is addressed."),
        instruction=verdict(1.0, "No explicit instructions."),
    )
    result = await pipeline_for(script).evaluate(request(SEED_EVALUATE))
    names = [stage.name for stage in result.stages]
    judges = ["relevance-judge", "faithfulness-judge", "coherence-judge", "completeness-judge", "instruction-judge"]
    assert names == [*PRECHECKS, *judges]
    assert result.id == "evt-001" and result.verdict == "pass" and result.errors == []
    assert result.confidence == pytest.approx(0.3 * STAGE1 + 0.7 * (0.95 + 1.0 + 0.95 + 0.9 + 1.0) / 5, abs=1e-6)
    assert result.stages[3].reason == "The answer directly addresses the query."
    assert all(stage.duration_ns > 0 for stage in result.stages)
    assert {k: len(v) for k, v in script.requests.items()} == dict.fromkeys(
        ("relevance", "faithfulness", "coherence", "completeness", "instruction"), 1
    )
    (faithful,) = script.requests["faithfulness"]
    assert "Its capital city is Paris" in faithful["messages"][1]["content"]
    assert set(json.loads(result.model_dump_json())) == {"id", "stages", "confidence", "verdict", "errors"}


@pytest.mark.anyio
async def test_early_exit_makes_no_judge_call(judge_server: Any) -> None:
    script = judge_server.script()
    result = await pipeline_for(script).evaluate(request(SEED_EARLY_EXIT))
    assert result.verdict == "fail" and result.confidence == 0.0
    assert [stage.name for stage in result.stages] == PRECHECKS
    assert script.calls == 0


@pytest.mark.anyio
async def test_early_exit_only_strictly_below_the_threshold(judge_server: Any) -> None:
    script = judge_server.script(default=verdict(0.2))
    result = await pipeline_for(script, early_exit_threshold=0.0).evaluate(request(SEED_EARLY_EXIT))
    assert script.calls == 5  # mean 0.0 is not below 0.0: the judges run
    assert result.verdict == "fail" and result.confidence == pytest.approx(0.7 * 0.2)


@pytest.mark.anyio
async def test_a_judge_timeout_lands_in_errors_not_in_the_score(judge_server: Any) -> None:
    slow = Reply(json.dumps({"reason": "late", "score": 0.0}), delay=3)
    script = judge_server.script(coherence=slow, relevance=verdict(0.9), faithfulness=verdict(0.8))
    started = time.monotonic()
    three = ("relevance", "faithfulness", "coherence")
    result = await pipeline_for(script, judge_timeout=0.3, judges=three).evaluate(request(SEED_EVALUATE))
    assert time.monotonic() - started < 2  # the judges ran in parallel and the slow one was cut off
    assert [e.model_dump(exclude={"duration_ns"}) for e in result.errors] == [
        {"name": "coherence-judge", "status": "error", "reason": "judge timed out after 0.3 s"}
    ]
    assert result.errors[0].duration_ns >= 300_000_000
    assert [s.name for s in result.stages][3:] == ["relevance-judge", "faithfulness-judge"]
    assert result.confidence == pytest.approx(0.3 * STAGE1 + 0.7 * (0.9 + 0.8) / 2, abs=1e-6)
    assert result.verdict == "pass"


@pytest.mark.anyio
async def test_garbage_judge_output_lands_in_errors_after_one_repair(judge_server: Any) -> None:
    script = judge_server.script(relevance=[Reply("I think it's great!"), Reply("Still no JSON, sorry")])
    result = await pipeline_for(script).evaluate(request(SEED_EVALUATE))
    (error,) = result.errors
    assert error.name == "relevance-judge" and error.status == "error"
    assert error.reason.startswith("judge output could not be used")
    assert len(script.requests["relevance"]) == 2
    assert result.confidence == pytest.approx(0.3 * STAGE1 + 0.7 * 0.9, abs=1e-6)  # the two others' 0.9


@pytest.mark.anyio
async def test_a_repaired_answer_counts(judge_server: Any) -> None:
    script = judge_server.script(relevance=[Reply("score: high"), verdict(0.4)])
    result = await pipeline_for(script).evaluate(request(SEED_EVALUATE))
    assert result.errors == [] and result.stages[3].score == 0.4


@pytest.mark.anyio
async def test_a_judge_cut_off_mid_verdict_is_an_error_never_a_score(judge_server: Any) -> None:
    cut = Reply('{"reason": "The answer is relevant but", "score": 0.', finish_reason="length")
    script = judge_server.script(default=cut)
    result = await pipeline_for(script).evaluate(request(SEED_EVALUATE))
    # Before issue 14 both judges were repaired to 0.0: verdict fail, confidence 0.27.
    assert (result.verdict, result.confidence) == ("error", None)
    assert {e.status for e in result.errors} == {"error"}
    assert all("cut off" in e.reason for e in result.errors)
    assert script.calls == len(result.errors) == 5  # one call per judge (the Go default five): no repair round
    unmarked = judge_server.script(default=Reply('{"reason": "relevant", "score": 0.', finish_reason="stop"))
    assert (await pipeline_for(unmarked).evaluate(request(SEED_EVALUATE))).verdict == "error"


@pytest.mark.anyio
async def test_no_judge_scored_means_verdict_error(judge_server: Any) -> None:
    script = judge_server.script(default=Reply("not a verdict"))
    result = await pipeline_for(script).evaluate(request(SEED_EVALUATE))
    assert (result.verdict, result.confidence) == ("error", None)
    assert [e.name for e in result.errors] == [f"{name}-judge" for name in JUDGES]
    assert [s.name for s in result.stages] == PRECHECKS


@pytest.mark.anyio
async def test_without_a_judge_model_the_verdict_says_so() -> None:
    pipeline = Pipeline()
    result = await pipeline.evaluate(request(SEED_EVALUATE))
    assert (result.verdict, result.confidence) == ("error", None)
    assert {e.status for e in result.errors} == {"skipped"}
    assert all("no judge model configured" in e.reason for e in result.errors)
    early = await pipeline.evaluate(request(SEED_EARLY_EXIT))  # the early exit needs no judge
    assert (early.verdict, early.errors) == ("fail", [])


@pytest.mark.anyio
async def test_faithfulness_needs_context(judge_server: Any) -> None:
    script = judge_server.script()
    result = await pipeline_for(script).evaluate(request(event(context="")))
    (error,) = result.errors
    assert (error.name, error.status) == ("faithfulness-judge", "skipped")
    assert "faithfulness" not in script.requests
    assert result.verdict == "pass"  # relevance and coherence at 0.9


@pytest.mark.anyio
async def test_the_judge_set_is_configurable(judge_server: Any) -> None:
    script = judge_server.script()
    result = await pipeline_for(script, judges=("completeness", "instruction")).evaluate(request(SEED_EVALUATE))
    assert [s.name for s in result.stages][3:] == ["completeness-judge", "instruction-judge"]
    assert set(script.requests) == {"completeness", "instruction"}


@pytest.mark.anyio
async def test_one_judge_alone_passes_strictly_above_the_threshold(judge_server: Any) -> None:
    script = judge_server.script(relevance=[verdict(0.7), verdict(0.71)])
    pipeline = pipeline_for(script)
    at = await pipeline.evaluate_judge(request(SEED_EVALUATE), "relevance-judge", 0.7)
    above = await pipeline.evaluate_judge(request(SEED_EVALUATE), "relevance", 0.7)
    assert (at.verdict, at.confidence, [s.name for s in at.stages]) == ("fail", 0.7, ["relevance-judge"])
    assert (above.verdict, above.confidence) == ("pass", 0.71)
    with pytest.raises(KeyError, match="unknown judge 'tone'"):
        await pipeline.evaluate_judge(request(SEED_EVALUATE), "tone")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"precheck_weight": 0.5}, "must add up to 1"),
        ({"judges": ("relevance", "tone")}, "unknown judge 'tone'"),
        ({"judges": ()}, "at least one judge"),
        ({"judges": ("coherence", "coherence")}, "named twice"),
        ({"early_exit_threshold": 1.5}, "early exit threshold"),
        ({"judge_timeout": 0}, "judge timeout"),
    ],
)
def test_invalid_configuration_is_a_config_error(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PipelineConfig(**config)


@pytest.mark.parametrize(("confidence", "band"), [(0.81, "pass"), (0.8, "review"), (0.51, "review"), (0.5, "fail")])
def test_verdict_bands_are_exclusive_at_their_bounds(confidence: float, band: str) -> None:
    assert verdict_band(confidence) == band


def test_settings_round_trip_through_json() -> None:
    settings = ServiceSettings(PipelineConfig(judges=("coherence",), judge_timeout=5), "openai/x", "http://h/v1", "k")
    assert ServiceSettings.from_json(json.loads(json.dumps(settings.to_json()))) == settings


def test_settings_from_the_environment_honour_the_seed_variables() -> None:
    env = {
        "EARLY_EXIT_THRESHOLD": "0.4",
        "PRECHECK_WEIGHT": "0.5",
        "LLM_JUDGE_WEIGHT": "0.5",
        "PROCTOR_PRECHECK_WEIGHT": "0.2",
        "PROCTOR_JUDGE_WEIGHT": "0.8",
        "CLAUDE_MODEL_ID": "anthropic.claude-3-5-haiku",
        "PROCTOR_JUDGES": "coherence, relevance",
    }
    settings = ServiceSettings.from_environment(env, judge_concurrency=4)
    assert settings.judge_model == "bedrock/anthropic.claude-3-5-haiku"
    pipeline = settings.pipeline
    assert (pipeline.early_exit_threshold, pipeline.precheck_weight, pipeline.judge_weight) == (0.4, 0.2, 0.8)
    assert pipeline.judges == ("coherence", "relevance") and settings.judge_concurrency == 4
    assert ServiceSettings.from_environment({}, judge_model="openai/x").judge_model == "openai/x"
    assert ServiceSettings.from_environment({}) == ServiceSettings()
    with pytest.raises(ConfigError, match="EARLY_EXIT_THRESHOLD='high' is not a number"):
        ServiceSettings.from_environment({"EARLY_EXIT_THRESHOLD": "high"})


TEXT = st.text(
    alphabet=st.sampled_from([*"ab Paris the ,.!?:", "\u0130", "\u03a3", "é", "\u2003", "\x1c"]), max_size=40
)


@settings(max_examples=300, deadline=None)
@given(query=TEXT.filter(bool), answer=TEXT)
def test_stage_one_scores_as_the_check_phase_does(query: str, answer: str) -> None:
    # stage 1 calls the prechecks' scoring functions directly: the check phase must agree on every stage
    event_request = EvaluationRequest(event_id="e", interaction={"user_query": query, "answer": answer})
    first = Pipeline().stage_one(event_request)
    specs = tuple(AssertionSpec(type=name, name=name) for name in PRECHECKS)
    phase = check_transcript_now(Checklist("e", (specs,)), Pipeline.transcript(event_request))
    expected = [(r.name, r.score, r.reason) for r in phase if r.score is not None]
    assert [(s.name, s.score, s.reason) for s in first.stages] == expected
    assert [(e.name, e.status, e.reason) for e in first.errors] == [
        (r.name, r.status, r.reason) for r in phase if r.score is None
    ]
    mean = mean_score(phase)
    if isinstance(first, StageOne):
        assert first.mean == mean and [m.content for m in first.transcript] == [query, answer]
    else:
        assert mean is not None and first.confidence == round(mean, 6) and first.verdict == "fail"


def test_a_precheck_that_raises_is_an_error_not_a_score() -> None:
    pipeline = Pipeline()

    def broken(query: str, answer: str) -> tuple[float | None, str]:
        raise ValueError("cannot measure")

    pipeline._prechecks = ((PRECHECKS[0], broken), *pipeline._prechecks[1:])
    first = pipeline.stage_one(request(SEED_EARLY_EXIT))
    assert [stage.name for stage in first.stages] == PRECHECKS[1:]
    (error,) = first.errors
    assert (error.name, error.status) == ("length-checker", "error")
    assert error.reason == "check could not run: ValueError: cannot measure"
