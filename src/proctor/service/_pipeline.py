"""The evaluation pipeline of the online service: prechecks, early exit, judges, confidence, verdict.

It runs the registered checks (`length-checker`, `overlap-checker`, `format-checker`, then the pointwise
judges) through `proctor.checks.run_check` and scores them with `proctor.scoring`, exactly as a batch run
does. Rules:

1. Stage 1: the three prechecks (microseconds of CPU each, so they run one after the other).
2. Early exit: when their mean is strictly below `early_exit_threshold`, the verdict is `fail`, the
   confidence is that mean, and no judge is called.
3. Stage 2: the configured judges run concurrently, each within `judge_timeout` seconds.
4. confidence = `precheck_weight` x stage-1 mean + `judge_weight` x stage-2 mean; verdict `pass` above
   0.8, `review` above 0.5, else `fail`.

A check that failed or could not run goes to `errors` and out of the means. When no judge produced a
score (none configured, all timed out, all answered garbage), the verdict is `error` with a `null`
confidence: a verdict on heuristics alone would pretend a judgement nobody made.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from proctor._redact import redact
from proctor.checks import CheckContext, CheckResult, run_check
from proctor.checks._judges import POINTWISE_JUDGES
from proctor.checks._prechecks import PRECHECKS
from proctor.errors import ConfigError
from proctor.scoring import blend_confidence, verdict_band
from proctor.service._models import EvaluationRequest, EvaluationResult, Stage, StageError, Verdict
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply, Message

if TYPE_CHECKING:
    from proctor.checks._judging import Judge

__all__ = ["DEFAULT_JUDGES", "JUDGES", "Pipeline", "PipelineConfig", "ServiceSettings", "StageOne", "build_pipeline"]

JUDGES = tuple(POINTWISE_JUDGES)
"""Every judge the pipeline can run: relevance, faithfulness, coherence, completeness, instruction."""
DEFAULT_JUDGES = ("relevance", "faithfulness", "coherence")
"""The judges run unless configured otherwise (the Go Eval Agent's documented three)."""
NO_JUDGE = (
    "no judge model configured: start with --judge provider/model (or set PROCTOR_JUDGE_MODEL, "
    "or CLAUDE_MODEL_ID for a Bedrock Claude model)"
)
_SUITE_SUFFIX = re.compile(r" \(score [0-9.]+, threshold [0-9.]+\)$")


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """How events are scored. Invalid values raise `ConfigError` naming the setting."""

    early_exit_threshold: float = 0.2
    """Stop after the prechecks (verdict `fail`) when their mean is below this (`EARLY_EXIT_THRESHOLD`)."""
    precheck_weight: float = 0.3
    """The prechecks' share of the confidence (`PRECHECK_WEIGHT`)."""
    judge_weight: float = 0.7
    """The judges' share of the confidence (`LLM_JUDGE_WEIGHT`)."""
    judges: tuple[str, ...] = DEFAULT_JUDGES
    """The judges of stage 2, by name (`JUDGES`)."""
    judge_timeout: float = 30.0
    """Seconds one judge may take, retries included; past it the judge is an error, not a score."""

    def __post_init__(self) -> None:
        if not 0 <= self.early_exit_threshold <= 1:
            raise ConfigError(f"early exit threshold must be in 0..1, got {self.early_exit_threshold}")
        for label, weight in (("precheck", self.precheck_weight), ("judge", self.judge_weight)):
            if not (math.isfinite(weight) and weight >= 0):
                raise ConfigError(f"{label} weight must be a number >= 0, got {weight}")
        if abs(self.precheck_weight + self.judge_weight - 1) > 1e-6:
            raise ConfigError(
                f"precheck weight ({self.precheck_weight}) and judge weight ({self.judge_weight}) must add up to 1"
            )
        if not self.judges:
            raise ConfigError(f"at least one judge is needed; judges: {', '.join(JUDGES)}")
        unknown = [name for name in self.judges if name not in JUDGES]
        if unknown:
            raise ConfigError(f"unknown judge {unknown[0]!r}; judges: {', '.join(JUDGES)}")
        if len(set(self.judges)) != len(self.judges):
            raise ConfigError(f"a judge is named twice in {', '.join(self.judges)}")
        if not self.judge_timeout > 0:
            raise ConfigError(f"judge timeout must be > 0 seconds, got {self.judge_timeout}")


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """Everything `proctor serve`, `consume`, `score` and `calibrate` need to build a pipeline."""

    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    """The scoring rules."""
    judge_model: str | None = None
    """The judge, `provider/model`; `None`: no judge, so events that pass stage 1 get verdict `error`."""
    judge_base_url: str | None = None
    """The judge's endpoint, overriding the provider's default and environment."""
    judge_api_key: str | None = field(default=None, repr=False)
    """The judge's API key, overriding the provider's environment variable."""
    judge_concurrency: int = 16
    """Judge requests in flight at once, over all events."""
    cache_dir: Path | None = None
    """Cache deterministic judge calls here; `None` (the default for a service): no cache."""

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON (to hand them to worker processes)."""
        pipeline = self.pipeline
        return {
            "pipeline": {
                "early_exit_threshold": pipeline.early_exit_threshold,
                "precheck_weight": pipeline.precheck_weight,
                "judge_weight": pipeline.judge_weight,
                "judges": list(pipeline.judges),
                "judge_timeout": pipeline.judge_timeout,
            },
            "judge_model": self.judge_model,
            "judge_base_url": self.judge_base_url,
            "judge_api_key": self.judge_api_key,
            "judge_concurrency": self.judge_concurrency,
            "cache_dir": None if self.cache_dir is None else str(self.cache_dir),
        }

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ServiceSettings:
        """Settings from `PROCTOR_*` variables, then the Go Eval Agent's, then the defaults.

        For commands that build a pipeline without the service's own options (e.g. `proctor score`):
        `PROCTOR_JUDGE_MODEL` (else `CLAUDE_MODEL_ID` as `bedrock/<id>`), `PROCTOR_JUDGE_BASE_URL`,
        `PROCTOR_JUDGE_API_KEY`, `PROCTOR_JUDGES`, `PROCTOR_JUDGE_TIMEOUT`, `PROCTOR_JUDGE_CONCURRENCY`,
        `PROCTOR_EARLY_EXIT_THRESHOLD` (`EARLY_EXIT_THRESHOLD`), `PROCTOR_PRECHECK_WEIGHT`
        (`PRECHECK_WEIGHT`), `PROCTOR_JUDGE_WEIGHT` (`LLM_JUDGE_WEIGHT`).

        Args:
            environ: The variables (default `os.environ`).
            **overrides: Field values that win over the environment when not `None` (`judge_model`,
                `judge_concurrency`, `cache_dir`, ...).

        Raises:
            ConfigError: A variable is not a valid number, or the values are invalid together.
        """
        env = os.environ if environ is None else environ

        def first(*names: str) -> str | None:
            return next((env[name] for name in names if env.get(name)), None)

        def number(default: float, *names: str) -> float:
            raw = first(*names)
            if raw is None:
                return default
            try:
                return float(raw)
            except ValueError:
                raise ConfigError(f"{next(n for n in names if env.get(n))}={raw!r} is not a number") from None

        judges = first("PROCTOR_JUDGES")
        pipeline = PipelineConfig(
            early_exit_threshold=number(0.2, "PROCTOR_EARLY_EXIT_THRESHOLD", "EARLY_EXIT_THRESHOLD"),
            precheck_weight=number(0.3, "PROCTOR_PRECHECK_WEIGHT", "PRECHECK_WEIGHT"),
            judge_weight=number(0.7, "PROCTOR_JUDGE_WEIGHT", "LLM_JUDGE_WEIGHT"),
            judges=tuple(j.strip() for j in judges.split(",") if j.strip()) if judges else DEFAULT_JUDGES,
            judge_timeout=number(30.0, "PROCTOR_JUDGE_TIMEOUT"),
        )
        claude = first("CLAUDE_MODEL_ID")
        values: dict[str, Any] = {
            "pipeline": pipeline,
            "judge_model": first("PROCTOR_JUDGE_MODEL") or (f"bedrock/{claude}" if claude else None),
            "judge_base_url": first("PROCTOR_JUDGE_BASE_URL"),
            "judge_api_key": first("PROCTOR_JUDGE_API_KEY"),
            "judge_concurrency": int(number(16, "PROCTOR_JUDGE_CONCURRENCY")),
        }
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServiceSettings:
        """Rebuild settings from `to_json`'s form."""
        pipeline = dict(data["pipeline"])
        pipeline["judges"] = tuple(pipeline["judges"])
        cache_dir = data.get("cache_dir")
        return cls(
            PipelineConfig(**pipeline),
            data.get("judge_model"),
            data.get("judge_base_url"),
            data.get("judge_api_key"),
            int(data.get("judge_concurrency", 16)),
            None if cache_dir is None else Path(cache_dir),
        )


@dataclass(slots=True)
class StageOne:
    """Stage 1's outcome when it did not end the evaluation."""

    context: CheckContext
    stages: list[Stage]
    errors: list[StageError]
    mean: float | None


def _precheck_specs() -> list[AssertionSpec]:
    return [AssertionSpec(type=name, name=name) for name in PRECHECKS]


class Pipeline:
    """Scores events. One per process; safe to share between concurrent evaluations.

    Args:
        config: The scoring rules.
        judge: The judge model with its prompts; `None` when no judge model is configured.
    """

    def __init__(self, config: PipelineConfig | None = None, judge: Judge | None = None) -> None:
        self.config = config or PipelineConfig()
        self.judge = judge
        self._prechecks = _precheck_specs()
        self._judges = {name: AssertionSpec(type=name, name=name) for name in JUDGES}

    @property
    def judge_model(self) -> str | None:
        """The judge model's name, or `None`."""
        return None if self.judge is None else self.judge.name

    def context(self, request: EvaluationRequest) -> CheckContext:
        """The check context of an event: its query, then its answer as the reply being checked."""
        interaction = request.interaction
        transcript = [Message("user", interaction.user_query), Message("assistant", interaction.answer)]
        return CheckContext(AgentReply(interaction.answer), 0, transcript, request.event_id, judge=self.judge)

    def stage_one(self, request: EvaluationRequest) -> EvaluationResult | StageOne:
        """Run the prechecks: the final result on an early exit, else what stage 2 continues from."""
        context = self.context(request)
        stages: list[Stage] = []
        errors: list[StageError] = []
        for spec in self._prechecks:
            started = time.perf_counter_ns()
            result = run_check(spec, context)
            took = time.perf_counter_ns() - started
            assert isinstance(result, CheckResult)  # prechecks are synchronous
            if result.score is None:
                status = "skipped" if result.status == "skipped" else "error"
                errors.append(StageError(name=spec.type, status=status, reason=redact(result.reason), duration_ns=took))
            else:
                stages.append(Stage(name=spec.type, score=result.score, reason=result.reason, duration_ns=took))
        mean = sum(s.score for s in stages) / len(stages) if stages else None
        if mean is not None and mean < self.config.early_exit_threshold:
            return EvaluationResult(
                id=request.event_id, stages=stages, confidence=_round(mean), verdict="fail", errors=errors
            )
        return StageOne(context, stages, errors, mean)

    async def evaluate(self, request: EvaluationRequest) -> EvaluationResult:
        """Evaluate one event (never raises for a judge failure: it lands in `errors`)."""
        first = self.stage_one(request)
        if isinstance(first, EvaluationResult):
            return first
        return await self.stage_two(request, first)

    async def stage_two(self, request: EvaluationRequest, first: StageOne) -> EvaluationResult:
        """Run the judges after `stage_one` and score the event."""
        judged = await self._run_judges(request, first.context, self.config.judges)
        stages, errors = list(first.stages), list(first.errors)
        scores: list[float] = []
        for outcome in judged:
            if isinstance(outcome, Stage):
                stages.append(outcome)
                scores.append(outcome.score)
            else:
                errors.append(outcome)
        if not scores:
            return EvaluationResult(id=request.event_id, stages=stages, confidence=None, verdict="error", errors=errors)
        config = self.config
        confidence = blend_confidence(
            first.mean,
            sum(scores) / len(scores),
            precheck_weight=config.precheck_weight,
            judge_weight=config.judge_weight,
        )
        return EvaluationResult(
            id=request.event_id,
            stages=stages,
            confidence=_round(confidence),
            verdict=verdict_band(confidence),
            errors=errors,
        )

    async def evaluate_judge(self, request: EvaluationRequest, name: str, threshold: float = 0.7) -> EvaluationResult:
        """Run one judge alone: confidence is its score, verdict `pass` above `threshold`, else `fail`.

        Args:
            request: The event.
            name: A judge name (`relevance` or `relevance-judge`).
            threshold: The score to beat, 0..1 (strictly above passes, as the Go Eval Agent does).

        Raises:
            KeyError: Unknown judge name.
        """
        judge = self.resolve_judge(name)
        (outcome,) = await self._run_judges(request, self.context(request), (judge,))
        if isinstance(outcome, StageError):
            return EvaluationResult(id=request.event_id, stages=[], confidence=None, verdict="error", errors=[outcome])
        verdict: Verdict = "pass" if outcome.score > threshold else "fail"
        return EvaluationResult(
            id=request.event_id, stages=[outcome], confidence=_round(outcome.score), verdict=verdict
        )

    @staticmethod
    def resolve_judge(name: str) -> str:
        """The judge called `name` (with or without the `-judge` suffix).

        Raises:
            KeyError: Unknown name; the message lists the judges.
        """
        base = name.removesuffix("-judge")
        if base not in JUDGES:
            raise KeyError(f"unknown judge {name!r}; judges: {', '.join(JUDGES)}")
        return base

    async def _run_judges(
        self, request: EvaluationRequest, context: CheckContext, names: Sequence[str]
    ) -> list[Stage | StageError]:
        outcomes: list[Stage | StageError | None] = [None] * len(names)

        async def one(index: int, name: str) -> None:
            outcomes[index] = await self._judge(request, context, name)

        async with anyio.create_task_group() as group:
            for index, name in enumerate(names):
                group.start_soon(one, index, name)
        return [outcome for outcome in outcomes if outcome is not None]

    async def _judge(self, request: EvaluationRequest, context: CheckContext, name: str) -> Stage | StageError:
        stage = f"{name}-judge"
        if self.judge is None:
            return StageError(name=stage, status="skipped", reason=NO_JUDGE)
        spec = self._judges[name]
        if POINTWISE_JUDGES[name][1]:  # needs the context
            if not request.interaction.context.strip():
                reason = f"{name} needs the interaction's context to check the answer against; this event has none"
                return StageError(name=stage, status="skipped", reason=reason)
            spec = AssertionSpec(type=name, name=name, value=request.interaction.context)
        started = time.perf_counter_ns()
        timeout = self.config.judge_timeout
        result: CheckResult | None = None
        with anyio.move_on_after(timeout):
            pending = run_check(spec, context)
            result = pending if isinstance(pending, CheckResult) else await pending
        took = time.perf_counter_ns() - started
        if result is None:
            return StageError(
                name=stage, status="error", reason=f"judge timed out after {timeout:g} s", duration_ns=took
            )
        if result.score is None:
            status = "skipped" if result.status == "skipped" else "error"
            # a judge failure may quote the judge endpoint: no userinfo or key goes back to API clients
            return StageError(name=stage, status=status, reason=redact(result.reason), duration_ns=took)
        reason = _SUITE_SUFFIX.sub("", result.reason.removeprefix("judge: "))
        return Stage(name=stage, score=result.score, reason=reason, duration_ns=took)

    async def aclose(self) -> None:
        """Close the judge model's connections."""
        if self.judge is not None:
            await self.judge.model.aclose()


def _round(value: float) -> float:
    return round(value, 6)


def build_pipeline(settings: ServiceSettings) -> Pipeline:
    """Build the pipeline `settings` describe, with its judge model when one is named.

    Raises:
        ConfigError: Unknown provider or bad model settings.
        proctor.errors.ModelUnavailable: The provider's SDK is not installed.
    """
    if settings.judge_model is None:
        return Pipeline(settings.pipeline)
    from proctor.checks._judging import Judge
    from proctor.models import ModelCache, ModelSettings, get_model

    if settings.judge_concurrency < 1:
        raise ConfigError(f"judge concurrency must be >= 1, got {settings.judge_concurrency}")
    model_settings = ModelSettings(
        base_url=settings.judge_base_url,
        api_key=settings.judge_api_key,
        concurrency=settings.judge_concurrency,
        cache=None if settings.cache_dir is None else ModelCache(settings.cache_dir),
    )
    return Pipeline(settings.pipeline, Judge(get_model(settings.judge_model, settings=model_settings)))
