"""G-Eval: an LLM judge scores a reply on free-form criteria by following evaluation steps.

The score is the probability-weighted expectation over the score tokens when the provider returns
log probabilities (as in the G-Eval paper), else the mean of `samples` sampled scores. It is normalised to
0..1; the raw score on the criteria's scale is kept in the details. Evaluation steps, when not given, are
generated once per judge model and criteria (and cached on disk with the judge's other calls).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, model_validator

from proctor.checks._judging import Judge, JudgeCall, judge_error, no_judge
from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult
from proctor.errors import ModelOutputError
from proctor.suite import AssertionSpec

__all__ = ["GEvalSpec", "GEvalSteps", "expected_score"]

DEFAULT_THRESHOLD = 0.5
_INTEGER = re.compile(r"-?\d+")


class GEvalSpec(BaseModel):
    """The value of a `g-eval` check; a plain string is the criteria."""

    model_config = ConfigDict(extra="forbid")

    criteria: str = Field(min_length=1)
    """What to evaluate, e.g. "The reply is accurate and cites the policy"."""
    steps: list[str] | None = None
    """Evaluation steps; generated once when absent."""
    scale: tuple[int, int] = (1, 5)
    """The score range the judge uses."""
    samples: int = Field(default=5, ge=1, le=20)
    """Samples averaged when the provider gives no log probabilities."""

    @model_validator(mode="after")
    def _range(self) -> GEvalSpec:
        if self.scale[0] >= self.scale[1]:
            raise ValueError(f"scale must be [low, high] with low < high; found {list(self.scale)}")
        return self


class GEvalSteps(BaseModel):
    """Generated evaluation steps."""

    steps: list[str] = Field(min_length=1, max_length=12)


def _criteria_only(value: object) -> object:
    return {"criteria": value} if isinstance(value, str) else value


_STEPS_MEMO: dict[tuple[str, str], list[str]] = {}


def expected_score(logprobs: list[list[tuple[str, float]]], low: int, high: int) -> float | None:
    """The probability-weighted mean score at the first generated token that is a score.

    Returns:
        The expectation on the raw scale, or `None` when no generated token is a score in range.
    """
    for alternatives in logprobs:
        weights: dict[int, float] = {}
        for token, logprob in alternatives:
            text = token.strip()
            if text.isdigit() and low <= int(text) <= high:
                weights[int(text)] = weights.get(int(text), 0.0) + math.exp(logprob)
        if weights:
            total = sum(weights.values())
            return sum(value * weight for value, weight in weights.items()) / total
    return None


async def _steps(judge: Judge, spec: GEvalSpec, call: JudgeCall) -> list[str]:
    if spec.steps:
        return spec.steps
    key = (judge.name, spec.criteria)
    if key not in _STEPS_MEMO:
        generated, steps_call = await judge.structured("g-eval-steps", {"criteria": spec.criteria}, GEvalSteps)
        call.calls += steps_call.calls
        call.prompt_tokens += steps_call.prompt_tokens
        call.completion_tokens += steps_call.completion_tokens
        if steps_call.cost_usd is not None:
            call.cost_usd = (call.cost_usd or 0.0) + steps_call.cost_usd
        call.cached = call.cached and steps_call.cached
        _STEPS_MEMO[key] = generated.steps
    return _STEPS_MEMO[key]


async def _score(judge: Judge, spec: GEvalSpec, variables: dict[str, Any], call: JudgeCall) -> tuple[float, str]:
    # on first use: `proctor.models` is heavy, and `import proctor.checks` (schema, list) stays light
    from proctor.models import GenerateConfig

    low, high = spec.scale
    first = await judge.generate(
        "g-eval", variables, GenerateConfig(max_tokens=5, logprobs=True, top_logprobs=20), call
    )
    if first.logprobs:
        value = expected_score(first.logprobs, low, high)
        if value is not None:
            return value, "logprobs"
    texts: list[str] = []
    while len(texts) < spec.samples:  # providers without `n` may return fewer choices
        config = GenerateConfig(temperature=1.0, max_tokens=5, n=spec.samples - len(texts))
        texts.extend((await judge.generate("g-eval", variables, config, call)).choices)
    call.raw_outputs = texts
    scores = [int(m.group(0)) for m in map(_INTEGER.search, texts) if m and low <= int(m.group(0)) <= high]
    if not scores:
        raise ModelOutputError(f"no sample was a score from {low} to {high}", texts)
    return sum(scores) / len(scores), f"mean of {len(scores)} samples"


async def _g_eval(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    name, turn = spec.display_name(), context.turn
    if context.judge is None:
        return no_judge(name, spec.type, spec.weight, turn)
    if context.reply is None:
        raise ValueError("g-eval needs a turn's reply")
    value = GEvalSpec.model_validate(_criteria_only(spec.value))
    call = context.judge.new_call("g-eval")
    try:
        steps = await _steps(context.judge, value, call)
        variables = {
            "criteria": value.criteria,
            "steps": steps,
            "reply": context.reply.text,
            "transcript": context.transcript,
            "low": value.scale[0],
            "high": value.scale[1],
        }
        raw, method = await _score(context.judge, value, variables, call)
    except Exception as exc:  # a judge failure is an error result, never a score
        return judge_error(name, spec.type, spec.weight, turn, exc, call)
    low, high = value.scale
    score = (raw - low) / (high - low)
    threshold = spec.options.threshold if spec.options.threshold is not None else DEFAULT_THRESHOLD
    return CheckResult(
        name,
        spec.type,
        "passed" if score >= threshold else "failed",
        score,
        spec.weight,
        f"G-Eval score {raw:.2f} on {low}..{high} ({method}); normalised {score:.2f}, threshold {threshold:.2f}",
        turn,
        {"judge": call.to_details(), "raw_score": raw, "scale": [low, high], "method": method, "steps": steps},
    )


registry.register(
    CheckType(
        "g-eval",
        "judges",
        "G-Eval: an LLM judge scores the reply on criteria (value: text, or {criteria, steps, scale, samples}).",
        _g_eval,
        value=TypeAdapter(
            Annotated[GEvalSpec, BeforeValidator(_criteria_only, json_schema_input_type=str | GEvalSpec)]
        ),
        negatable=False,
        needs_model=True,
    )
)
