"""G-Eval: an LLM judge scores a reply on free-form criteria by following evaluation steps.

The score is the probability-weighted expectation over the score tokens when the provider returns
log probabilities (as in the G-Eval paper), else the mean of `samples` sampled scores. It is normalised to
0..1; the raw score on the criteria's scale is kept in the details. Evaluation steps, when not given, are
generated once per judge model and criteria (and cached on disk with the judge's other calls).

The judge is asked for the score only, a single integer: as in G-Eval, a sample's score is its rating
token. A sample is read only where that is unambiguous: it names exactly one number, within the scale
("4", "Score: 4"). A sample with no number, a number off the scale, or several different numbers
("out of 5: 2", "4/5") is unusable, never guessed at; fewer than half of the samples usable is an `error`
(`MIN_USABLE_SHARE`), and the unusable ones are counted in the reason and the details. The log-probability
expectation is used only when the answer it was read from is such a rating.
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

__all__ = ["MIN_USABLE_SHARE", "GEvalSpec", "GEvalSteps", "expected_score", "sample_score"]

DEFAULT_THRESHOLD = 0.5
MIN_USABLE_SHARE = 0.5
"""The share of sampled answers that must be a usable score: fewer than half usable is an `error`.

A mean of the few readable answers among mostly unreadable ones would stand for a judgement the judge
mostly did not give; at half or more, the mean is over most of what was asked (the rest is counted)."""
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
"""A number in a judge's answer: digits with an optional sign and decimals (not the `-` of a range `1-5`)."""


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


def sample_score(text: str, low: int, high: int) -> float | None:
    """The score a judge's answer gives: its one number, when that is within `low..high`.

    Returns:
        The number, or `None` when the answer names no number, a number off the scale, or several different
        numbers (which one is the rating would be a guess: "out of 5: 2").
    """
    values = {float(found) for found in _NUMBER.findall(text)}
    if len(values) != 1:
        return None
    (value,) = values
    return value if low <= value <= high else None


async def _score(
    judge: Judge, spec: GEvalSpec, variables: dict[str, Any], call: JudgeCall
) -> tuple[float, str, dict[str, Any]]:
    # on first use: `proctor.models` is heavy, and `import proctor.checks` (schema, list) stays light
    from proctor.models import GenerateConfig

    low, high = spec.scale
    first = await judge.generate(
        "g-eval", variables, GenerateConfig(max_tokens=5, logprobs=True, top_logprobs=20), call
    )
    if first.logprobs and sample_score(first.text, low, high) is not None:  # the rating token is unambiguous
        value = expected_score(first.logprobs, low, high)
        if value is not None:
            return value, "logprobs", {}
    texts: list[str] = []
    while len(texts) < spec.samples:  # providers without `n` may return fewer choices
        config = GenerateConfig(temperature=1.0, max_tokens=5, n=spec.samples - len(texts))
        texts.extend((await judge.generate("g-eval", variables, config, call)).choices)
    call.raw_outputs = texts
    read = [(text, sample_score(text, low, high)) for text in texts]
    scores = [score for _, score in read if score is not None]
    unusable = [text for text, score in read if score is None]
    if len(scores) < MIN_USABLE_SHARE * len(texts):
        raise ModelOutputError(
            f"only {len(scores)} of {len(texts)} samples gave a usable score from {low} to {high} (one number "
            f"on the scale); at least half must",
            texts,
        )
    counted = {"samples": {"total": len(texts), "usable": len(scores), "unusable": unusable}}
    return sum(scores) / len(scores), f"mean of {len(scores)} samples", counted


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
        raw, method, counted = await _score(context.judge, value, variables, call)
    except Exception as exc:  # a judge failure is an error result, never a score
        return judge_error(name, spec.type, spec.weight, turn, exc, call)
    low, high = value.scale
    score = (raw - low) / (high - low)
    threshold = spec.options.threshold if spec.options.threshold is not None else DEFAULT_THRESHOLD
    how = method
    if counted and counted["samples"]["unusable"]:
        how += f"; {len(counted['samples']['unusable'])} of {counted['samples']['total']} unusable, left out"
    return CheckResult(
        name,
        spec.type,
        "passed" if score >= threshold else "failed",
        score,
        spec.weight,
        f"G-Eval score {raw:.2f} on {low}..{high} ({how}); normalised {score:.2f}, threshold {threshold:.2f}",
        turn,
        {"judge": call.to_details(), "raw_score": raw, "scale": [low, high], "method": method, "steps": steps}
        | counted,
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
